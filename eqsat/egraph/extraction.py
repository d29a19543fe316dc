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
            key = (n.op, in_types, n.attrs)
            if key not in memo:
                cost = op_cost(hw, n.op, in_types, typed.node_types[n.id], dict(n.attrs))
                memo[key] = 0.0 if cost is None else float(cost.cycles)
            costs[n.id] = memo[key]
            if n.op in _INT8_PRODUCTS:  # zero-point sums of run-time operands
                runtime = [values.get(c, RUNTIME) == RUNTIME for c in n.children]
                costs[n.id] += zero_point_sums_cost(hw, n.op, in_types, dict(n.attrs), runtime)
            if n.op == "reshape" and n.children:
                shape = typed.node_types[n.id].shape
                costs[n.id] += _view_copy(typed, values, n.children[0], shape, hw, copies)
    return PricedEGraph(typed, costs, by_id)


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
    index = {term_key(n): n.eclass for nodes in decoded.classes.values() for n in nodes}
    live = graph.live()
    classes: list[str | None] = [None] * len(graph.nodes)
    for i, node in graph:
        if not live[i]:
            continue
        children = tuple(classes[j] for j in node.inputs)
        if node.opdef.variadic and len(children) == 1:
            # A variadic op of one operand is that operand (see egraph.program).
            classes[i] = children[0]
            continue
        if node.opdef.variadic and len(children) > 2:
            # Entered as right-nested binary terms: look up the innermost first.
            tail = children[-1]
            for k in range(len(children) - 2, 0, -1):
                tail = index[(node.op, (children[k], tail), node.attrs)]
            children = (children[0], tail)
        classes[i] = index[(node.op, children, node.attrs)]
    return classes


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
    # Leaves first, in the order the model declared them, so printed models read alike.
    order = [c for c in leaf_order if c in chosen]
    order += [c for c in extraction.order if c not in set(order)]
    for eclass in order:
        node = priced.by_id[extraction.choice[eclass]]
        built[eclass] = b.add(
            node.op,
            tuple(built[c] for c in node.children),
            dict(node.attrs),
            (names or {}).get(eclass),
        )
    for out_name, eclass in outputs:
        b.output(out_name, built[eclass])
    b.graph.constants = dict(constants or {})
    b.graph.constants = b.graph.used_constants()
    return b.graph


def extract_program(
    priced: PricedEGraph,
    roots: list[str],
    extractor: str,
    time_limit: float,
    tick: Callable[[], None] | None = None,
) -> Extraction:
    # joint moves: the merged products of TASO's rules pay off only together
    return extract(
        priced.extraction_graph(roots),
        extractor,
        roots,
        time_limit=time_limit,
        tick=tick,
        joint=True,
    )
