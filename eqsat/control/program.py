"""The control IR: static stages and regions over named values.

Every value of a program has a name. A graph (a stage or a body) reads outer values
through its `input` and `param` leaves, named as those values (a body's carried values
and loop index are inputs too), and defines values through its outputs. A body's
outputs are named `yield_0`, `yield_1`, ... in the order of its `yield`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.ir.types import TensorType


def yield_name(k: int) -> str:
    return f"yield_{k}"


@dataclass
class Stage:
    """Straight-line work: its outputs are named values of the program."""

    graph: Graph

    def reads(self) -> set[str]:
        return graph_reads(self.graph)


@dataclass
class IfRegion:
    """results = then's yields if cond (one element) is nonzero, else orelse's."""

    cond: str
    then: Graph
    orelse: Graph
    results: tuple[str, ...]

    def reads(self) -> set[str]:
        return {self.cond} | graph_reads(self.then) | graph_reads(self.orelse)

    def bodies(self) -> list[Graph]:
        return [self.then, self.orelse]


@dataclass
class LoopRegion:
    """ONNX Loop: while trip < max_trips and cond: cond, carried = body(...).
    The body yields the next cond, then the next carried values; results are the
    final carried values."""

    max_trips: str
    cond: str
    carried: tuple[tuple[str, str], ...]  # (name in the body, initial value)
    index: str | None
    body: Graph
    results: tuple[str, ...]

    def reads(self) -> set[str]:
        inner = {name for name, _ in self.carried} | ({self.index} if self.index else set())
        outer = graph_reads(self.body) - inner
        return {self.max_trips, self.cond} | {init for _, init in self.carried} | outer

    def bodies(self) -> list[Graph]:
        return [self.body]


Step = Stage | IfRegion | LoopRegion


@dataclass
class ControlProgram:
    """A model with regions: its leaves, steps in order and outputs by value name."""

    name: str
    inputs: dict[str, TensorType]  # model inputs
    params: dict[str, TensorType]  # model params (weights)
    steps: list[Step]
    outputs: list[str]
    dims: dict[str, int] = field(default_factory=dict)
    # Compile-time values of names (consts declared at top level), for folding.
    known: dict[str, np.ndarray] = field(default_factory=dict)

    def graphs(self) -> list[tuple[str, Graph]]:
        """Every graph with a label: stage_K, ifK_then, ifK_else, loopK_body."""
        out = []
        for k, step in enumerate(self.steps):
            if isinstance(step, Stage):
                out.append((f"stage{k}", step.graph))
            elif isinstance(step, IfRegion):
                out += [(f"if{k}_then", step.then), (f"if{k}_else", step.orelse)]
            else:
                out.append((f"loop{k}_body", step.body))
        return out

    def bound_names(self) -> dict[str, TensorType]:
        return {**self.inputs, **self.params}

    def regions(self) -> int:
        return sum(not isinstance(s, Stage) for s in self.steps)


def graph_reads(graph: Graph) -> set[str]:
    """The outer names a graph reads (its input and param leaves)."""
    return {str(n.attr("name")) for _, n in graph.inputs + graph.params}
