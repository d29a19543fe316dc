"""The serialized e-graph as flat arrays.

Extraction runs on the egraph-serialize JSON format (what egglog's
``serialize(...).to_json()`` writes and extraction-gym reads) so that any extractor
also works on e-graphs that did not come from us. Node ids and class ids stay
strings at the boundary; inside, nodes are ``0..n_nodes-1`` and classes
``0..n_classes-1`` so that the extractors can use lists and numpy arrays.

Reading and writing that JSON is serialized.py's job (load_egraph, parse_json,
to_json_dict); it builds on this module, not the other way round.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from eqsat.extract.errors import EGraphFormatError, ExtractError, NoTermError

_PYTHON_SOURCE = "<python>"


class NodeSpec(NamedTuple):
    """One e-node built in Python; ``children`` are class ids (a class stands for its nodes)."""

    id: str
    op: str
    eclass: str
    children: Sequence[str] = ()
    cost: float = 1.0
    subsumed: bool = False


class UnknownClassError(ExtractError, LookupError):
    """A class id given by the caller (a root, a choice) is not in the e-graph."""


class EGraph:
    """An immutable e-graph: nodes with an op, a class, child classes and a cost.

    ``costs`` is independent of how the graph was built: ``with_costs`` swaps in the
    costs of a hardware model without touching the structure.
    """

    def __init__(
        self,
        *,
        node_ids: Sequence[str],
        ops: Sequence[str],
        class_ids: Sequence[str],
        node_class: np.ndarray,
        child_ptr: np.ndarray,
        child_class: np.ndarray,
        costs: np.ndarray,
        subsumed: np.ndarray,
        roots: Sequence[int],
        class_data: Mapping[str, Any],
        source: str,
        missing_roots: Sequence[str] = (),
    ) -> None:
        self.node_ids: tuple[str, ...] = tuple(node_ids)
        self.ops: tuple[str, ...] = tuple(ops)
        self.class_ids: tuple[str, ...] = tuple(class_ids)
        self.node_class = _frozen(node_class, np.int64)
        self.child_ptr = _frozen(child_ptr, np.int64)
        self.child_class = _frozen(child_class, np.int64)
        self.costs = _frozen(costs, np.float64)
        self.subsumed = _frozen(subsumed, np.bool_)
        self.roots: tuple[int, ...] = tuple(int(r) for r in roots)
        self.class_data: dict[str, Any] = dict(class_data)
        self.source = source
        #: Root class ids the file named that no node belongs to (dropped from ``roots``).
        self.missing_roots: tuple[str, ...] = tuple(missing_roots)
        self.class_index: dict[str, int] = {c: i for i, c in enumerate(self.class_ids)}

    # ------------------------------------------------------------------ sizes

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_classes(self) -> int:
        return len(self.class_ids)

    def __repr__(self) -> str:
        return f"EGraph({self.source!r}, {self.n_nodes} nodes, {self.n_classes} classes)"

    # ---------------------------------------------------------- derived views

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Node id -> node index."""
        return {n: i for i, n in enumerate(self.node_ids)}

    def children(self, node: int) -> tuple[int, ...]:
        """Child classes of ``node`` in argument order (repeats kept, as the term needs them)."""
        lo, hi = self.child_ptr[node], self.child_ptr[node + 1]
        return tuple(self.child_class[lo:hi].tolist())

    @cached_property
    def child_sets(self) -> list[tuple[int, ...]]:
        """Distinct child classes per node: what DAG cost and constraints care about."""
        ptr = self.child_ptr.tolist()
        flat = self.child_class.tolist()
        return [tuple(sorted(set(flat[ptr[i] : ptr[i + 1]]))) for i in range(self.n_nodes)]

    @cached_property
    def class_nodes(self) -> list[list[int]]:
        """Nodes of each class, in node order."""
        out: list[list[int]] = [[] for _ in range(self.n_classes)]
        for n, c in enumerate(self.node_class.tolist()):
            out[c].append(n)
        return out

    @cached_property
    def parents(self) -> list[list[int]]:
        """For each class, the nodes that have it as a child (each node listed once)."""
        out: list[list[int]] = [[] for _ in range(self.n_classes)]
        for n, kids in enumerate(self.child_sets):
            for c in kids:
                out[c].append(n)
        return out

    @cached_property
    def usable(self) -> np.ndarray:
        """Nodes an extractor may choose: not subsumed and of finite cost."""
        mask = ~self.subsumed & np.isfinite(self.costs)
        mask.flags.writeable = False
        return mask

    # ------------------------------------------------------------------ roots

    def class_of(self, class_id: str) -> int:
        """Class index of ``class_id``; a typed error names the missing id."""
        try:
            return self.class_index[str(class_id)]
        except KeyError:
            raise UnknownClassError(f"{self.source}: no e-class {class_id!r}") from None

    def default_roots(self) -> list[int]:
        """Roots when the caller names none.

        The stored ``root_eclasses`` if any; else the classes egglog marks as a
        ``let`` binding in ``class_data``; else the classes that no node uses.
        """
        if self.roots:
            return list(self.roots)
        if self.missing_roots:
            raise NoTermError(
                f"{self.source}: no root class has a node (root class(es) "
                f"{list(self.missing_roots)} name no e-class of the file)"
            )
        lets = [
            self.class_index[c]
            for c, data in self.class_data.items()
            if isinstance(data, Mapping) and "let" in data and c in self.class_index
        ]
        if lets:
            return sorted(lets)
        used = np.zeros(self.n_classes, dtype=bool)
        used[self.child_class] = True
        tops = np.flatnonzero(~used).tolist()
        if not tops:
            raise NoTermError(
                f"{self.source}: no root classes stored and every class is used by a node; "
                "name the roots explicitly"
            )
        return tops

    def resolve_roots(self, roots: Iterable[str] | None) -> list[int]:
        """Class indices of ``roots`` (ids), or of ``default_roots()`` when None/empty."""
        ids = list(roots) if roots is not None else []
        if not ids:
            return self.default_roots()
        return sorted({self.class_of(r) for r in ids})

    def reachable_classes(
        self, roots: Iterable[int], node_mask: np.ndarray | None = None
    ) -> np.ndarray:
        """Classes reachable from ``roots`` through any node in ``node_mask`` (default: usable)."""
        mask = (self.usable if node_mask is None else node_mask).tolist()
        seen = [False] * self.n_classes
        stack = list(roots)
        for r in stack:
            seen[r] = True
        class_nodes, kids = self.class_nodes, self.child_sets
        while stack:
            c = stack.pop()
            for n in class_nodes[c]:
                if mask[n]:
                    for d in kids[n]:
                        if not seen[d]:
                            seen[d] = True
                            stack.append(d)
        return np.array(seen, dtype=bool)

    # ------------------------------------------------------------ new graphs

    def with_costs(self, costs: Sequence[float] | np.ndarray | Mapping[str, float]) -> EGraph:
        """Same structure, new node costs: a full array (by node index) or {node id: cost}."""
        if isinstance(costs, Mapping):
            new = self.costs.copy()
            index = self.node_index
            for nid, value in costs.items():
                if nid not in index:
                    raise EGraphFormatError(self.source, f"cost given for unknown node {nid!r}")
                new[index[nid]] = check_cost(value, self.source, nid)
        else:
            new = np.asarray(costs, dtype=np.float64)
            if new.shape != (self.n_nodes,):
                raise EGraphFormatError(
                    self.source, f"expected {self.n_nodes} costs, got shape {new.shape}"
                )
            bad = np.isnan(new) | (new == -np.inf)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise EGraphFormatError(
                    self.source, f"node {self.node_ids[i]!r}: cost {new[i]} is not a number or +inf"
                )
        return self._replace(costs=new)

    def with_roots(self, roots: Iterable[str]) -> EGraph:
        """Same graph with the given root class ids stored."""
        return self._replace(roots=sorted({self.class_of(r) for r in roots}), missing_roots=())

    def _replace(self, **changes: Any) -> EGraph:
        fields = {
            "node_ids": self.node_ids,
            "ops": self.ops,
            "class_ids": self.class_ids,
            "node_class": self.node_class,
            "child_ptr": self.child_ptr,
            "child_class": self.child_class,
            "costs": self.costs,
            "subsumed": self.subsumed,
            "roots": self.roots,
            "class_data": self.class_data,
            "source": self.source,
            "missing_roots": self.missing_roots,
        }
        fields.update(changes)
        return EGraph(**fields)

    # ------------------------------------------------------------ building

    @classmethod
    def from_nodes(
        cls,
        nodes: Iterable[NodeSpec | tuple[Any, ...]],
        roots: Iterable[str] = (),
        *,
        class_data: Mapping[str, Any] | None = None,
        source: str = _PYTHON_SOURCE,
    ) -> EGraph:
        """Build from Python node specs (children given as class ids)."""
        specs = [n if isinstance(n, NodeSpec) else NodeSpec(*n) for n in nodes]
        return assemble(
            node_ids=[str(s.id) for s in specs],
            ops=[str(s.op) for s in specs],
            eclasses=[str(s.eclass) for s in specs],
            children=[[str(c) for c in s.children] for s in specs],
            costs=[check_cost(s.cost, source, s.id) for s in specs],
            subsumed=[bool(s.subsumed) for s in specs],
            roots=[str(r) for r in roots],
            class_data=dict(class_data or {}),
            source=source,
        )

    @classmethod
    def from_classes(
        cls,
        classes: Mapping[str, Sequence[tuple[str, Sequence[str], float]]],
        roots: Iterable[str] = (),
        *,
        source: str = _PYTHON_SOURCE,
    ) -> EGraph:
        """Compact form for tests: {class: [(op, child classes, cost), ...]}; node ids ``class.i``."""
        specs = [
            NodeSpec(f"{c}.{i}", op, c, tuple(kids), cost)
            for c, members in classes.items()
            for i, (op, kids, cost) in enumerate(members)
        ]
        return cls.from_nodes(specs, roots, source=source)


# ------------------------------------------- construction helpers (shared with serialized.py)


def _frozen(values: Any, dtype: Any) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.flags.writeable = False
    return arr


def check_cost(value: Any, source: str, node: Any) -> float:
    """A node cost as float: a number, negative allowed (maxsat's e-graphs reward some
    nodes), +inf = never choose; NaN and -inf are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise EGraphFormatError(source, f"node {node!r}: cost must be a number, got {value!r}")
    cost = float(value)
    if math.isnan(cost) or cost == -math.inf:
        raise EGraphFormatError(
            source, f"node {node!r}: cost must be a number or +inf, got {value!r}"
        )
    return cost


def assemble(
    *,
    node_ids: list[str],
    ops: list[str],
    eclasses: list[str],
    children: list[list[str]],
    costs: list[float],
    subsumed: list[bool],
    roots: list[str],
    class_data: dict[str, Any],
    source: str,
) -> EGraph:
    """Index nodes and classes (first appearance order) and check references."""
    seen: set[str] = set()
    for nid in node_ids:
        if nid in seen:
            raise EGraphFormatError(source, f"duplicate node id {nid!r}")
        seen.add(nid)
    class_index: dict[str, int] = {}
    for c in eclasses:
        class_index.setdefault(c, len(class_index))
    ptr = np.zeros(len(node_ids) + 1, dtype=np.int64)
    flat: list[int] = []
    for i, kids in enumerate(children):
        for k in kids:
            if k not in class_index:
                raise EGraphFormatError(
                    source, f"node {node_ids[i]!r}: child class {k!r} has no nodes"
                )
            flat.append(class_index[k])
        ptr[i + 1] = len(flat)
    # A root that names no class is kept aside, not fatal: extraction-gym's lean-egg
    # files name non-canonical root ids; the other roots can still be extracted.
    root_idx = [class_index[r] for r in roots if r in class_index]
    missing_roots = [r for r in dict.fromkeys(roots) if r not in class_index]
    return EGraph(
        node_ids=node_ids,
        ops=ops,
        class_ids=list(class_index),
        node_class=np.array([class_index[c] for c in eclasses], dtype=np.int64),
        child_ptr=ptr,
        child_class=np.array(flat, dtype=np.int64),
        costs=np.array(costs, dtype=np.float64),
        subsumed=np.array(subsumed, dtype=bool),
        roots=sorted(set(root_idx)),
        class_data=class_data,
        source=source,
        missing_roots=missing_roots,
    )
