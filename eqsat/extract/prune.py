"""Shrink an e-graph to the nodes an optimal extraction could use, before the ILP.

Every rule here is sound: some optimal extraction survives it.
- unusable: subsumed or infinite cost, or not reachable from the roots;
- self-loop: a node whose child is its own class is in a cycle by itself;
- no acyclic term: a node with a child class that has no finite acyclic term;
- dominated: another node of the same class costs no more and needs a subset of the
  children; swapping it in keeps the choice valid (fewer edges, no new cycle);
- unreachable: after the above, no longer reachable from the roots.
Then the class graph's strongly connected components say where cycles are possible:
only edges inside a non-trivial component need acyclicity constraints.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from eqsat.extract.egraph import EGraph

# Pairwise dominance checks per class are quadratic; compare with at most this many keepers.
_DOMINANCE_WINDOW = 64


@dataclass(frozen=True)
class Pruned:
    """What is left for the ILP: node and class indices of the original e-graph."""

    nodes: list[int]
    classes: list[int]
    component: np.ndarray  # per original class: strongly connected component label
    component_size: np.ndarray  # per original class: size of its component (1 = acyclic)
    removed: dict[str, int] = field(default_factory=dict)


def prune(egraph: EGraph, roots: Sequence[int], protect: Iterable[int] = ()) -> Pruned:
    """Nodes and classes an optimal extraction from ``roots`` may need (see module doc).

    ``protect``: nodes never dropped as dominated (a known solution, such as greedy's,
    stays a feasible point of the pruned problem and so can be the solver's start)."""
    removed: dict[str, int] = {}
    kids = egraph.child_sets
    node_class = egraph.node_class.tolist()
    relevant = egraph.reachable_classes(roots)
    keep = (egraph.usable & relevant[egraph.node_class]).tolist()
    removed["unusable_or_unreachable"] = egraph.n_nodes - sum(keep)

    loops = [n for n in range(egraph.n_nodes) if keep[n] and node_class[n] in kids[n]]
    for n in loops:
        keep[n] = False
    removed["self_loop"] = len(loops)

    before = sum(keep)
    keep = _with_acyclic_terms(egraph, keep)
    removed["no_acyclic_term"] = before - sum(keep)

    before = sum(keep)
    if not (egraph.costs < 0).any():  # a superset of children may be cheaper otherwise
        keep = _without_dominated(egraph, keep, set(protect))
    removed["dominated"] = before - sum(keep)

    before = sum(keep)
    live = egraph.reachable_classes(roots, np.array(keep, dtype=bool))
    keep = [k and bool(live[node_class[n]]) for n, k in enumerate(keep)]
    removed["unreachable_after_pruning"] = before - sum(keep)

    nodes = [n for n in range(egraph.n_nodes) if keep[n]]
    classes = sorted({node_class[n] for n in nodes})
    component, size = _components(egraph, nodes)
    return Pruned(nodes, classes, component, size, removed)


def _with_acyclic_terms(egraph: EGraph, keep: list[bool]) -> list[bool]:
    """Keep nodes all of whose child classes have a finite acyclic term (bottom-up)."""
    kids = egraph.child_sets
    node_class = egraph.node_class.tolist()
    parents = egraph.parents
    pending = [len(k) for k in kids]
    has_term = [False] * egraph.n_classes
    queue = deque(node_class[n] for n in range(egraph.n_nodes) if keep[n] and not kids[n])
    while queue:
        c = queue.popleft()
        if has_term[c]:
            continue
        has_term[c] = True
        for p in parents[c]:
            if keep[p]:
                pending[p] -= 1
                if pending[p] == 0:
                    queue.append(node_class[p])
    return [keep[n] and pending[n] == 0 for n in range(egraph.n_nodes)]


def _without_dominated(egraph: EGraph, keep: list[bool], protect: set[int]) -> list[bool]:
    """Drop a node when a kept sibling costs no more and uses a subset of its children
    (nodes in ``protect`` are kept)."""
    kids = egraph.child_sets
    costs = egraph.costs.tolist()
    out = list(keep)
    for members in egraph.class_nodes:
        live = [n for n in members if keep[n]]
        if len(live) < 2:
            continue
        live.sort(key=lambda n: (costs[n], len(kids[n]), n))
        keepers: list[frozenset[int]] = []
        seen: set[tuple[int, ...]] = set()
        for n in live:
            mine = kids[n]
            dominated = mine in seen or any(k <= set(mine) for k in keepers[:_DOMINANCE_WINDOW])
            if dominated and n not in protect:
                out[n] = False
                continue
            seen.add(mine)
            keepers.append(frozenset(mine))
    return out


def _components(egraph: EGraph, nodes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Strongly connected components of the class graph (class -> child class) of ``nodes``."""
    k = egraph.n_classes
    kids = egraph.child_sets
    node_class = egraph.node_class
    src = [int(node_class[n]) for n in nodes for _ in kids[n]]
    dst = [d for n in nodes for d in kids[n]]
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(k, k)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    size = np.bincount(labels, minlength=labels.max(initial=0) + 1)[labels]
    return labels, size
