"""Why the optimizer chose each kernel: what it covers, which rule built it, and what
it beat.

For every kernel of the extracted program: the statements of the input model it
computes, the rule that built its e-node (recorded during saturation by rules compiled
with provenance, eqsat/rules/provenance.py; "the model" when the e-node is the input's
own term), and the other e-nodes of its e-class with their costs and the reason each
lost, read from the cost model's account of it (no tile fits SRAM, spills, more DRAM
traffic, more cycles).

An alternative costs its own cycles plus the cheapest tree cost (`class_costs`) of
those of its operands the program does not compute anyway; it is compared with what
the program's kernels spend from those operands to the same e-class (a fused softmax
over a matmul's result against the five kernels of the unfused chain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from eqsat.costs import UNRUNNABLE_CYCLES, op_cost
from eqsat.egraph.decode import ENode
from eqsat.egraph.extraction import PricedEGraph, locate, term_key
from eqsat.ir.graph import Graph
from hwsim import Hardware

INPUT = "the model as written"
_LEAVES = ("input", "param", "literal", "const")


@dataclass
class Alternative:
    op: str
    cost: float  # own cycles + operands the program does not compute (module docstring)
    own_cycles: float
    built_by: str
    why: str


@dataclass
class KernelExplanation:
    name: str  # op.statement, as the compiled program names the kernel
    op: str
    eclass: str
    cost: float
    own_cycles: float
    built_by: str
    covers: list[str] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "kernel": self.name,
            "op": self.op,
            "eclass": self.eclass,
            "cost": self.cost,
            "own_cycles": self.own_cycles,
            "built_by": self.built_by,
            "covers": self.covers,
            "alternatives": [a.__dict__ for a in self.alternatives],
        }


def class_costs(priced: PricedEGraph, max_rounds: int = 64) -> dict[str, float]:
    """Cheapest tree cost of every e-class (own cycles plus operands'), by relaxation."""
    best: dict[str, float] = dict.fromkeys(priced.decoded.classes, math.inf)
    nodes = [n for ns in priced.decoded.classes.values() for n in ns if n.id in priced.costs]
    for _ in range(max_rounds):
        changed = False
        for n in nodes:
            total = priced.costs[n.id] + sum(best[c] for c in n.children)
            if total < best[n.eclass]:
                best[n.eclass] = total
                changed = True
        if not changed:
            break
    return best


def _built_by(priced: PricedEGraph, node: ENode, inputs: set[tuple]) -> str:
    key = term_key(node)
    if key in inputs:
        return INPUT
    return priced.decoded.provenance.get(key, "not recorded (rules compiled without provenance)")


def _why(
    hw: Hardware,
    priced: PricedEGraph,
    best: dict[str, float],
    alt: ENode,
    alt_cost: float,
    span: float,
    own: float,
) -> str:
    """Why `alt` (costing `alt_cost`) lost; `span`: what the chosen kernels spend
    computing the same class from `alt`'s operands; `own`: the chosen kernel's cycles."""
    if span > own:
        win = f"the chosen kernels computing the same from its operands cost {span:,.0f} cycles"
    else:
        win = f"the chosen kernel costs {own:,.0f} cycles"
    culprit = _unrunnable(priced, best, alt)
    typed = priced.typed
    if culprit is not None:
        what = "it" if culprit is alt else f"its operand {culprit.op}"
        in_types = tuple(typed.class_types[c] for c in culprit.children)
        cost = op_cost(hw, culprit.op, in_types, typed.node_types[culprit.id], dict(culprit.attrs))
        planned = (
            ""
            if cost is None
            else f" ({cost.cycles - UNRUNNABLE_CYCLES:,.0f} cycles as planned, spilling)"
        )
        return (
            f"SRAM overflow: {what} keeps more than the {hw.sram_bytes:,}-byte SRAM holds"
            f"{planned}, so it is priced unrunnable; {win}"
        )
    in_types = tuple(typed.class_types[c] for c in alt.children)
    cost = op_cost(hw, alt.op, in_types, typed.node_types[alt.id], dict(alt.attrs))
    if cost is not None and cost.spill_bytes:
        return f"SRAM overflow: its working set spills {cost.spill_bytes:,} bytes to DRAM; {win}"
    if alt_cost <= span:
        return f"as cheap ({alt_cost:,.0f} vs {span:,.0f} cycles here): either would do"
    return f"more cycles ({alt_cost:,.0f}); {win}"


def explain(
    original: Graph,
    extracted: Graph,
    priced: PricedEGraph,
    hw: Hardware,
    max_alternatives: int = 4,
) -> list[KernelExplanation]:
    """One explanation per kernel of `extracted` (the optimizer's result, whose e-graph
    `priced` was kept); `original` is the model it was optimized from."""
    decoded = priced.decoded
    best = class_costs(priced)
    where = locate(extracted, decoded)
    computed = {c for c in where if c is not None}  # classes the program computes anyway
    chosen_nodes = [
        None if where[i] is None else _chosen_node(decoded.classes[where[i]], node, where)
        for i, node in extracted
    ]
    own_cost = [0.0 if n is None else priced.costs.get(n.id, 0.0) for n in chosen_nodes]
    orig_classes = locate(original, decoded)
    inputs = _original_terms(original, orig_classes)
    out = []
    for i, node in extracted:
        chosen = chosen_nodes[i]
        if node.is_leaf or node.op in _LEAVES or chosen is None or not own_cost[i]:
            continue  # a free view, or weights prepared at load time: not a kernel
        eclass = where[i]
        own = own_cost[i]
        exp = KernelExplanation(
            name=f"{node.op}.{node.name or f'n{i}'}",
            op=node.op,
            eclass=eclass,
            cost=own,
            own_cycles=own,
            built_by=_built_by(priced, chosen, inputs),
            covers=_covers(original, orig_classes, eclass, set(chosen.children)),
        )
        alts: dict[str, tuple[float, ENode]] = {}
        for n in decoded.classes[eclass]:
            if n.id == chosen.id or n.id not in priced.costs:
                continue
            # its own cycles plus operands the program does not compute anyway
            total = priced.costs[n.id] + sum(best[c] for c in n.children if c not in computed)
            if n.op not in alts or total < alts[n.op][0]:
                alts[n.op] = (total, n)
        for total, n in sorted(alts.values(), key=lambda t: t[0])[:max_alternatives]:
            if math.isinf(total):
                continue
            span = _span_cost(extracted, where, own_cost, i, set(n.children))
            exp.alternatives.append(
                Alternative(
                    op=n.op,
                    cost=total,
                    own_cycles=priced.costs[n.id],
                    built_by=_built_by(priced, n, inputs),
                    why=_why(hw, priced, best, n, total, span, own),
                )
            )
        out.append(exp)
    return out


def _span_cost(
    graph: Graph, where: list[str | None], own: list[float], i: int, stop: set[str]
) -> float:
    """Cycles of the program's kernels from node i down to the classes in `stop`."""
    seen: set[int] = set()
    stack = [i]
    while stack:
        j = stack.pop()
        if j in seen or (j != i and where[j] in stop):
            continue
        seen.add(j)
        stack.extend(graph.nodes[j].inputs)
    return sum(own[j] for j in seen)


def _unrunnable(priced: PricedEGraph, best: dict[str, float], node: ENode) -> ENode | None:
    """The e-node priced unrunnable (no tile fits SRAM) in `node`'s cheapest tree."""
    seen: set[str] = set()
    while node is not None and node.id not in seen:
        seen.add(node.id)
        if priced.costs.get(node.id, 0.0) >= UNRUNNABLE_CYCLES:
            return node
        worst = max(node.children, key=lambda c: best[c], default=None)
        if worst is None or best[worst] < UNRUNNABLE_CYCLES:
            return None
        node = min(
            (n for n in priced.decoded.classes[worst] if n.id in priced.costs),
            key=lambda n: priced.costs[n.id] + sum(best[c] for c in n.children),
            default=None,
        )
    return None


def _original_terms(graph: Graph, classes: list[str | None]) -> set[tuple]:
    terms = set()
    for i, node in graph:
        if classes[i] is None or node.is_leaf:
            continue
        children = tuple(classes[j] for j in node.inputs)
        if None not in children and not (node.opdef.variadic and len(children) > 2):
            terms.add((node.op, children, node.attrs))
    return terms


def _chosen_node(candidates: list[ENode], node, where: list[str | None]) -> ENode | None:
    children = tuple(where[j] for j in node.inputs)
    for n in candidates:
        if n.op == node.op and n.children == children and n.attrs == node.attrs:
            return n
    return next((n for n in candidates if n.op == node.op), None)


def _covers(graph: Graph, classes: list[str | None], eclass: str, operands: set[str]) -> list[str]:
    """Statements of the input model between the kernel's operands and its result."""
    start = [i for i, c in enumerate(classes) if c == eclass]
    seen: set[int] = set()
    stack = list(start)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        for j in graph.nodes[i].inputs:
            node = graph.nodes[j]
            if classes[j] in operands or node.is_leaf:
                continue
            stack.append(j)
    return [
        f"{graph.nodes[i].name or f'n{i}'} = {graph.nodes[i].op}"
        for i in sorted(seen)
        if not graph.nodes[i].is_leaf
    ]


def _cycles(c: float) -> str:
    return "unrunnable" if c >= UNRUNNABLE_CYCLES else f"{c:,.0f} cycles"


def format_explanations(items: list[KernelExplanation]) -> str:
    lines = []
    for e in items:
        lines.append(f"{e.name}: {_cycles(e.own_cycles)}, built by {e.built_by}")
        if e.covers:
            lines.append(f"  covers  {', '.join(e.covers)}")
        for a in e.alternatives:
            lines.append(f"  beat    {a.op} ({a.built_by}): {_cycles(a.cost)}; {a.why}")
    return "\n".join(lines)
