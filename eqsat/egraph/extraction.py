"""From a grown e-graph to the cheapest program: costs, extraction, rebuilding.

The e-graph is serialized (egraph-serialize JSON), decoded, typed with the registry,
priced with the hardware cost model, and handed to an extractor from eqsat.extract;
the choice is rebuilt into a typed Graph.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from egglog.bindings import EGraph as EggGraph

from eqsat.costs import op_cost, reshape_copy_cost, view_kind, zero_point_sums_cost
from eqsat.egraph.decode import DecodedEGraph, ENode, decode
from eqsat.egraph.typing import TypedEGraph, type_egraph
from eqsat.extract import EGraph, Extraction, NodeSpec, extract
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ops import REGISTRY
from eqsat.weights import RUNTIME, eclass_value_classes, is_prepared, stored_transposed
from hwsim.hardware import Hardware


def serialize(egraph: EggGraph) -> dict[str, Any]:
    return json.loads(egraph.serialize([]).to_json())


def term_key(node: ENode) -> tuple:
    return (node.op, node.children, node.attrs)


@dataclass
class PricedEGraph:
    typed: TypedEGraph
    costs: dict[str, float]  # node id -> cycles (valid nodes only)
    by_id: dict[str, ENode]

    @property
    def decoded(self) -> DecodedEGraph:
        return self.typed.decoded

    def extraction_graph(self, roots: list[str]) -> EGraph:
        specs = [
            NodeSpec(n.id, n.op, n.eclass, n.children, self.costs[n.id])
            for nodes in self.decoded.classes.values()
            for n in nodes
            if n.id in self.costs
        ]
        return EGraph.from_nodes(specs, roots)


def _int8_products() -> frozenset[str]:
    from eqsat.ops.fused import contraction_of
    from eqsat.ops.registry import REGISTRY

    return frozenset(n for n in REGISTRY if contraction_of(n) in ("qmatmul", "qconv2d"))


_INT8_PRODUCTS = _int8_products()


def price(
    serialized: dict[str, Any], hw: Hardware, tick: Callable[[], None] | None = None
) -> PricedEGraph:
    """Cycles of every typed e-node. `tick`: called per e-node (a deadline check)."""
    tick = tick or (lambda: None)
    typed = type_egraph(decode(serialized))
    costs: dict[str, float] = {}
    by_id: dict[str, ENode] = {}
    memo: dict[tuple, float] = {}
    copies: dict[tuple, float] = {}
    values = eclass_value_classes(typed.decoded.classes, lambda n: n.children, lambda n: n.op)
    for nodes in typed.decoded.classes.values():
        for n in nodes:
            tick()
            by_id[n.id] = n
            if n.id not in typed.node_types:
                continue
            kids = [values[c] for c in n.children if c in values]
            if len(kids) == len(n.children) and (
                is_prepared(n.op, kids) or stored_transposed(n.op, kids)
            ):
                costs[n.id] = 0.0  # computed once when the weights are loaded, or stored so
                continue
            in_types = tuple(typed.class_types[c] for c in n.children)
            spliced = 0
            if _variadic(n.op):
                # a part that is itself this op is spliced in by `rebuild`: its pieces
                # are copied by its own node, once, in this node's kernel (whose launch
                # the part's node need not pay again)
                parts = [
                    c for c in n.children if not _holds(typed.decoded.classes[c], n.op, n.attrs)
                ]
                spliced = len(n.children) - len(parts)
                in_types = tuple(typed.class_types[c] for c in parts)
            key = (n.op, in_types, n.attrs)
            if key not in memo:
                out = typed.node_types[n.id]
                cost = op_cost(hw, n.op, in_types, out, dict(n.attrs)) if in_types else None
                memo[key] = 0.0 if cost is None else float(cost.cycles)
            costs[n.id] = max(0.0, memo[key] - spliced * hw.launch_cycles)
            if n.op in _INT8_PRODUCTS:  # zero-point sums of run-time operands
                runtime = [values.get(c, RUNTIME) == RUNTIME for c in n.children]
                costs[n.id] += zero_point_sums_cost(hw, n.op, in_types, dict(n.attrs), runtime)
            if n.op == "reshape" and n.children:
                shape = typed.node_types[n.id].shape
                costs[n.id] += _view_copy(typed, values, n.children[0], shape, hw, copies)
    return PricedEGraph(typed, costs, by_id)


def _variadic(op: str) -> bool:
    """Is `op` a registry op of any number of operands (concat)?"""
    return op in REGISTRY and REGISTRY[op].variadic


def _holds(nodes: list[ENode], op: str, attrs: tuple) -> bool:
    """Does an e-class of `nodes` hold an `op` node with `attrs`?"""
    return any(v.op == op and v.attrs == attrs for v in nodes)


def _view_copy(
    typed: TypedEGraph, values: dict, child: str, shape: tuple, hw: Hardware, memo: dict
) -> float:
    """What reshaping e-class `child` costs beyond the free reshape: the copy of a
    strided view (eqsat.costs.reshape_copy_cost), at the cheapest of the class's
    terms (0 if any of them is no such view)."""
    key = (child, shape)
    if key not in memo:
        best = None
        for v in typed.decoded.classes[child]:
            if v.id not in typed.node_types or not v.children:
                best = 0
                break
            if values.get(v.children[0], RUNTIME) != RUNTIME:
                best = 0
                break
            copy = reshape_copy_cost(
                hw,
                v.op,
                typed.class_types[v.children[0]],
                dict(v.attrs),
                typed.node_types[v.id],
                shape,
                _all_views(typed, v.children[0], set()),
            )
            cycles = 0 if copy is None else copy.cycles
            best = cycles if best is None else min(best, cycles)
            if best == 0:
                break
        memo[key] = float(best or 0)
    return memo[key]


def _all_views(typed: TypedEGraph, eclass: str, seen: set[str]) -> bool:
    """Is every term of `eclass` a view of another value (eqsat.costs.view_kind; an
    identity reshape is as its operand's class is)?"""
    seen.add(eclass)
    for p in typed.decoded.classes[eclass]:
        if p.op not in REGISTRY or p.id not in typed.node_types:
            return False
        operand = typed.class_types.get(p.children[0]) if p.children else None
        kind = view_kind(p.op, typed.node_types[p.id], operand)  # type: ignore[arg-type]
        if kind is None:
            kind = p.children[0] not in seen and _all_views(typed, p.children[0], seen)
        if not kind:
            return False
    return True


def locate(graph: Graph, decoded: DecodedEGraph) -> list[str | None]:
    """The e-class of every live node of `graph` (which entered the e-graph unchanged)."""
    return locate_terms(graph, decoded)[0]


def locate_terms(graph: Graph, decoded: DecodedEGraph) -> tuple[list[str | None], dict[str, str]]:
    """(the e-class of every live node of `graph`, the e-node that spells `graph` in
    each class it uses): the input program as an extraction, a seed for local search."""
    index = {term_key(n): n for nodes in decoded.classes.values() for n in nodes}
    live = graph.live()
    classes: list[str | None] = [None] * len(graph.nodes)
    spelled: dict[str, str] = {}

    def find(key: tuple) -> str:
        node = index[key]
        spelled.setdefault(node.eclass, node.id)
        return node.eclass

    for i, node in graph:
        if not live[i]:
            continue
        children = tuple(classes[j] for j in node.inputs)
        if node.opdef.variadic and len(children) == 1:
            # A variadic op of one operand is that operand (see egraph.program).
            classes[i] = children[0]
            continue
        if node.opdef.variadic and len(children) > 2:
            # Entered as right-nested binary terms (an extracted one may nest otherwise:
            # `rebuild` splices nested parts): any binary nesting the e-graph holds.
            classes[i] = _nested(children, node.op, node.attrs, index, spelled)
        else:
            classes[i] = find((node.op, children, node.attrs))
    return classes, spelled


def _nested(
    parts: tuple, op: str, attrs: tuple, index: Mapping[tuple, ENode], spelled: dict[str, str]
) -> str:
    """The class of `op(parts...)` held as some nesting of binary `op` nodes (right-nested
    tried first), recording the nodes it goes through in `spelled`."""
    memo: dict[tuple[int, int], tuple[str, list[ENode]] | None] = {}

    def span(i: int, j: int) -> tuple[str, list[ENode]] | None:
        if i == j:
            return parts[i], []
        if (i, j) not in memo:
            memo[i, j] = None
            for m in range(i, j):
                left, right = span(i, m), span(m + 1, j)
                node = left and right and index.get((op, (left[0], right[0]), attrs))
                if node:
                    memo[i, j] = node.eclass, [*left[1], *right[1], node]
                    break
        return memo[i, j]

    found = span(0, len(parts) - 1)
    if found is None:
        raise KeyError((op, parts, attrs))
    for node in found[1]:
        spelled.setdefault(node.eclass, node.id)
    return found[0]


def rebuild(
    priced: PricedEGraph,
    extraction: Extraction,
    outputs: list[tuple[str, str]],
    name: str,
    dims: dict[str, int],
    names: dict[str, str] | None = None,
    leaf_order: tuple[str, ...] | list[str] = (),
    constants: Mapping[str, np.ndarray] | None = None,
) -> Graph:
    """The chosen terms as a Graph; `outputs` are (output name, e-class); `constants`:
    the values of the literals the terms may use (the input graph's)."""
    b = GraphBuilder(name, dims)
    built: dict[str, int] = {}
    chosen = set(extraction.order)
    spliced = _spliced(priced, extraction, {c for _, c in outputs})
    # Leaves first, in the order the model declared them, so printed models read alike.
    order = [c for c in leaf_order if c in chosen]
    order += [c for c in extraction.order if c not in set(order)]

    def operands(eclass: str) -> list[str]:
        """A variadic node's operand classes, the parts spliced into it expanded."""
        out: list[str] = []
        for c in priced.by_id[extraction.choice[eclass]].children:
            out += operands(c) if c in spliced else [c]
        return out

    for eclass in order:
        if eclass in spliced:
            continue
        node = priced.by_id[extraction.choice[eclass]]
        kids = operands(eclass) if _variadic(node.op) else node.children
        built[eclass] = b.add(
            node.op,
            tuple(built[c] for c in kids),
            dict(node.attrs),
            (names or {}).get(eclass),
        )
    for out_name, eclass in outputs:
        b.output(out_name, built[eclass])
    b.graph.constants = dict(constants or {})
    b.graph.constants = b.graph.used_constants()
    return b.graph


def _spliced(priced: PricedEGraph, extraction: Extraction, outputs: set[str]) -> set[str]:
    """Classes whose chosen node is a variadic op (concat) read once, by a node of the
    same op and attributes: the e-graph holds a concat of n parts as n - 1 nested binary
    ones, and the program gets one kernel copying each part once."""
    node = {c: priced.by_id[extraction.choice[c]] for c in extraction.order}
    uses: dict[str, int] = {}
    for n in node.values():
        for c in n.children:
            uses[c] = uses.get(c, 0) + 1
    return {
        c
        for n in node.values()
        if _variadic(n.op)
        for c in n.children
        if c not in outputs and uses[c] == 1 and node[c].op == n.op and node[c].attrs == n.attrs
    }


def extract_program(
    priced: PricedEGraph,
    roots: list[str],
    extractor: str,
    time_limit: float,
    tick: Callable[[], None] | None = None,
    seed: Mapping[str, str] | None = None,
) -> Extraction:
    """`seed`: class -> e-node of a known program (the input's, from `locate_terms`);
    greedy's local search also starts from it, so the answer is never costlier."""
    # joint moves: the merged products of TASO's rules pay off only together
    return extract(
        priced.extraction_graph(roots),
        extractor,
        roots,
        time_limit=time_limit,
        tick=tick,
        joint=True,
        seeds=[seed] if seed else (),
    )
