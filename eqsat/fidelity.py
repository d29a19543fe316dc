"""How well the cost model predicts the simulator: per kernel and per program.

Extraction trusts `eqsat.costs.op_cost`; where it is wrong, the optimizer picks the
wrong program (and can make one slower than the input). This module compiles a
graph, simulates it, and sets every node's predicted cycles next to the simulated
cycles of the kernels the backend emitted for it (its main kernel and any helper
kernel: a convolution's prep, a weight copy), grouped by the kinds of kernel that
matter for accuracy. Layout ops the backend turns into free views have no kernel and
are not compared.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.costs import zero_point_sums_cost
from eqsat.ir.graph import Graph
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import contraction_of
from eqsat.program_cost import GraphFacts, graph_op_cost, program_cost
from eqsat.weights import RUNTIME, graph_value_classes
from hwsim.hardware import Hardware

# The kinds the acceptance of cost fidelity is stated in, then the rest.
KINDS = (
    "matmul",
    "conv",
    "int8",
    "normalize",
    "pooling",
    "attention",
    "elementwise",
    "reduce",
    "other",
)


def kernel_kind(op_name: str) -> str:
    """The kind of kernel a node of `op_name` runs as."""
    op = REGISTRY[op_name]
    contraction = contraction_of(op_name)
    if contraction in ("qmatmul", "qconv2d") or op.kind is OpKind.QUANT:
        return "int8"
    if "attention" in op_name:
        return "attention"
    if op_name.startswith("winograd_"):  # a Winograd convolution's transform kernels
        return "conv"
    if contraction is not None:
        return "conv" if REGISTRY[contraction].kind is OpKind.CONV else "matmul"
    if "pool" in op_name:
        return "pooling"
    if op.kind is OpKind.NORMALIZE:
        return "normalize"
    if op.kind is OpKind.REDUCE:
        return "reduce"
    if op.kind is OpKind.ELEMENTWISE or op.kind is OpKind.FUSED:
        return "elementwise"
    return "other"


@dataclass(frozen=True)
class KernelRow:
    label: str  # graph/statement:op
    op: str
    kind: str
    predicted: int
    simulated: int

    @property
    def error(self) -> float:
        """Signed relative error of the prediction, (model - sim) / sim."""
        return (self.predicted - self.simulated) / self.simulated if self.simulated else 0.0


@dataclass(frozen=True)
class ProgramRow:
    graph: str
    predicted: int
    simulated: int
    kernels: tuple[KernelRow, ...]

    @property
    def error(self) -> float:
        return (self.predicted - self.simulated) / self.simulated if self.simulated else 0.0


def measure_program(
    graph: Graph,
    hw: Hardware,
    bindings: Mapping[str, np.ndarray],
    params: Mapping[str, np.ndarray] | None = None,
) -> ProgramRow:
    """Compile and simulate `graph`; predicted against simulated cycles, per node and
    for the whole program. `params`: values the compiler needs beyond the bindings
    (a quantized program's int8 weights and scales)."""
    from backend import compile_graph
    from hwsim import simulate

    compiled = compile_graph(graph, hw, dict(params) if params else None)
    feeds = {**bindings, **(params or {})}
    result = simulate(compiled.program, hw, compiled.feeds(feeds), check_races=False)
    spans = {k.name: k.cycles for k in result.report.kernels}
    simulated: dict[int, int] = defaultdict(int)
    for k in compiled.kernels:
        if k.node >= 0:
            simulated[k.node] += spans[k.name]
    rows = []
    classes = graph_value_classes(graph)
    facts = GraphFacts.of(graph)
    for i, cycles in sorted(simulated.items()):
        node = graph.nodes[i]
        in_types = [graph.nodes[j].type for j in node.inputs]
        cost = graph_op_cost(graph, i, hw, facts)
        if cost is None:
            continue
        runtime = [classes[j] == RUNTIME for j in node.inputs]  # its zero-point sums too
        sums = zero_point_sums_cost(hw, node.op, in_types, node.attr_dict, runtime)
        label = f"{graph.name}/{node.name or f'n{i}'}:{node.op}"
        rows.append(KernelRow(label, node.op, kernel_kind(node.op), cost.cycles + sums, cycles))
    predicted = program_cost(graph, hw).cycles
    return ProgramRow(graph.name, predicted, result.report.cycles, tuple(rows))


@dataclass(frozen=True)
class KindSummary:
    kind: str
    count: int
    median: float  # of |error|
    worst: KernelRow


def by_kind(rows: Sequence[KernelRow]) -> list[KindSummary]:
    """Median and worst absolute relative error per kind, in KINDS order."""
    groups: dict[str, list[KernelRow]] = defaultdict(list)
    for r in rows:
        groups[r.kind].append(r)
    out = []
    for kind in KINDS:
        group = groups.get(kind)
        if group:
            worst = max(group, key=lambda r: abs(r.error))
            median = statistics.median(abs(r.error) for r in group)
            out.append(KindSummary(kind, len(group), median, worst))
    return out
