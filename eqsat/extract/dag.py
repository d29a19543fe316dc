"""Validate a choice of nodes and price it as a DAG (a shared subterm is paid once).

Every extractor's answer goes through here, so an invalid extraction (missing class,
node of the wrong class, cycle) is caught in one place rather than trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from eqsat.extract.egraph import EGraph
from eqsat.extract.errors import InvalidExtractionError
from eqsat.extract.result import Extraction

_WHITE, _GREY, _BLACK = 0, 1, 2


def selection_order(egraph: EGraph, choice: Sequence[int], roots: Iterable[int]) -> list[int]:
    """Classes reachable from ``roots`` via ``choice`` (class index -> node index, -1 = none),
    children before parents. Raises InvalidExtractionError on a gap, a foreign node or a cycle.
    """
    kids = egraph.child_sets
    state = [_WHITE] * egraph.n_classes
    order: list[int] = []
    for root in roots:
        if state[root] == _BLACK:
            continue
        _check_node(egraph, choice, root)
        state[root] = _GREY
        stack = [(root, iter(kids[choice[root]]))]
        while stack:
            c, it = stack[-1]
            for d in it:
                if state[d] == _GREY:
                    raise InvalidExtractionError(
                        f"cycle: class {egraph.class_ids[d]!r} is its own descendant "
                        f"(via class {egraph.class_ids[c]!r})"
                    )
                if state[d] == _WHITE:
                    _check_node(egraph, choice, d)
                    state[d] = _GREY
                    stack.append((d, iter(kids[choice[d]])))
                    break
            else:
                stack.pop()
                state[c] = _BLACK
                order.append(c)
    return order


def _check_node(egraph: EGraph, choice: Sequence[int], c: int) -> None:
    n = choice[c]
    if n is None or n < 0:
        raise InvalidExtractionError(f"class {egraph.class_ids[c]!r} is used but has no choice")
    if egraph.node_class[n] != c:
        raise InvalidExtractionError(
            f"node {egraph.node_ids[n]!r} chosen for class {egraph.class_ids[c]!r} "
            f"belongs to class {egraph.class_ids[int(egraph.node_class[n])]!r}"
        )


def choice_indices(egraph: EGraph, choice: Mapping[str, str]) -> list[int]:
    """{class id: node id} -> list indexed by class (-1 where no choice)."""
    out = [-1] * egraph.n_classes
    index = egraph.node_index
    for cid, nid in choice.items():
        c = egraph.class_of(cid)
        if nid not in index:
            raise InvalidExtractionError(f"class {cid!r}: chosen node {nid!r} is not a node")
        out[c] = index[nid]
    return out


def dag_cost(
    egraph: EGraph, choice: Mapping[str, str], roots: Iterable[str] | None = None
) -> float:
    """DAG cost of ``choice`` ({class id: node id}) from ``roots`` (default: the graph's).

    Validates that every class reachable from the roots has a choice of its own class
    and that the chosen nodes form no cycle; each reachable class is paid once.
    """
    idx = choice_indices(egraph, choice)
    order = selection_order(egraph, idx, egraph.resolve_roots(roots))
    return cost_of(egraph, idx, order)


def cost_of(egraph: EGraph, choice: Sequence[int], order: Sequence[int]) -> float:
    """Sum of the chosen nodes' costs over ``order`` (classes already validated)."""
    if not order:
        return 0.0
    nodes = np.fromiter((choice[c] for c in order), dtype=np.int64, count=len(order))
    return float(egraph.costs[nodes].sum())


def build_extraction(
    egraph: EGraph,
    choice: Sequence[int],
    roots: Sequence[int],
    *,
    extractor: str,
    status: str,
    detail: str = "",
    seconds: float = 0.0,
) -> Extraction:
    """Validate ``choice`` and keep only the classes the DAG from ``roots`` uses."""
    order = selection_order(egraph, choice, roots)
    ids, nids = egraph.class_ids, egraph.node_ids
    return Extraction(
        choice={ids[c]: nids[choice[c]] for c in order},
        dag_cost=cost_of(egraph, choice, order),
        roots=tuple(ids[r] for r in roots),
        order=tuple(ids[c] for c in order),
        extractor=extractor,
        status=status,
        detail=detail,
        seconds=seconds,
    )
