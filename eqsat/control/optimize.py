"""Optimization of a ControlProgram: the control passes, then each graph (a stage or
a region body) optimized with the rules as an e-graph of its own.

The top level sees a region as one opaque step priced by `region_costs`: the host's
read-back of its condition (trip count, continue flag) and the dispatch of its body's
program, plus the body's cost under the cost model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.control.graphs import compile_time_value
from eqsat.control.passes import PassLog, UnrollChoice, known_value, simplify
from eqsat.control.program import ControlProgram, IfRegion, LoopRegion, Stage, yield_name
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, OptimizeResult, optimize, prepare_egraph
from eqsat.program_cost import program_cost
from hwsim.hardware import Hardware


@dataclass
class StepCost:
    """One step's estimate: `label`, what it is, and cycles split by who spends them."""

    label: str
    kind: str  # stage | if | loop
    device: int  # the graphs' cost-model cycles (a loop: per trip x trips)
    control: int  # dispatches and read-backs
    note: str = ""

    @property
    def cycles(self) -> int:
        return self.device + self.control


@dataclass
class ControlOptimizeResult:
    original: ControlProgram
    program: ControlProgram
    log: PassLog
    unroll: list[UnrollChoice]
    results: dict[str, OptimizeResult] = field(default_factory=dict)  # by graph label
    before: list[StepCost] = field(default_factory=list)
    after: list[StepCost] = field(default_factory=list)


def region_costs(program: ControlProgram, hw: Hardware) -> list[StepCost]:
    """What each step costs under the cost model. A stage: one dispatch and its graph.
    An `if`: a read-back, a dispatch and the dearer branch (the condition is data). A
    loop: read-backs of a data-dependent trip count and condition, then per trip a
    dispatch, the body and (if the next condition is data) a read-back; trips are the
    trip count where it is known at compile time, else 1 (the figure is per trip)."""
    out = []
    rb, dispatch = hw.host_readback_cycles, hw.dispatch_cycles
    for k, step in enumerate(program.steps):
        if isinstance(step, Stage):
            out.append(
                StepCost(f"stage{k}", "stage", program_cost(step.graph, hw).cycles, dispatch)
            )
        elif isinstance(step, IfRegion):
            body = max(program_cost(step.then, hw).cycles, program_cost(step.orelse, hw).cycles)
            known = known_value(program, step.cond, k) is not None
            out.append(
                StepCost(f"if{k}", "if", body, dispatch + (0 if known else rb), "dearer branch")
            )
        else:
            out.append(_loop_cost(program, k, step, hw))
    return out


def _loop_cost(program: ControlProgram, k: int, loop: LoopRegion, hw: Hardware) -> StepCost:
    rb, dispatch = hw.host_readback_cycles, hw.dispatch_cycles
    trips_value = known_value(program, loop.max_trips, k)
    cond_known = known_value(program, loop.cond, k) is not None
    next_known = compile_time_value(loop.body, yield_name(0)) is not None
    trips = 1 if trips_value is None else max(int(trips_value.reshape(-1)[0]), 0)
    head = (rb if trips_value is None else 0) + (0 if cond_known else rb)
    per_trip_control = dispatch + (0 if next_known else rb)
    body = program_cost(loop.body, hw).cycles
    note = f"{trips} trips" if trips_value is not None else "per trip (trip count is data)"
    return StepCost(f"loop{k}", "loop", trips * body, head + trips * per_trip_control, note)


def optimize_control(
    program: ControlProgram,
    rules: CompiledRules,
    hw: Hardware,
    limits: Limits = DEFAULT_LIMITS,
    extractor: str = "greedy",
    progress: Callable[[str], None] | None = None,
    hoist: bool = True,
    unroll: bool = True,
    max_unroll_nodes: int = 512,
) -> ControlOptimizeResult:
    say = progress or (lambda _m: None)
    before = region_costs(program, hw)
    work = copy.deepcopy(program)
    work, log, choices = simplify(
        work,
        lambda g: program_cost(g, hw).cycles,
        hw.dispatch_cycles,
        hw.host_readback_cycles,
        max_unroll_nodes,
        hoist,
        unroll,
    )
    for line in log.lines:
        say(line)
    result = ControlOptimizeResult(program, work, log, choices, before=before)
    prepared = prepare_egraph(rules, hw)
    for label, graph in work.graphs():
        say(f"optimizing {label} ({sum(not n.is_leaf for _, n in graph)} ops)")
        res = optimize(graph, rules, hw, limits, extractor, progress=say, prepared=prepared)
        result.results[label] = res
        _replace(work, graph, res.graph)
    result.after = region_costs(work, hw)
    return result


def _replace(program: ControlProgram, old: Graph, new: Graph) -> None:
    for step in program.steps:
        if isinstance(step, Stage) and step.graph is old:
            step.graph = new
        elif isinstance(step, IfRegion):
            if step.then is old:
                step.then = new
            if step.orelse is old:
                step.orelse = new
        elif isinstance(step, LoopRegion) and step.body is old:
            step.body = new


def format_costs(before: list[StepCost], after: list[StepCost]) -> list[str]:
    lines = [f"  {'step':<14} {'kind':<6} {'device':>12} {'host control':>13}  note"]
    for title, costs in (("before", before), ("after", after)):
        lines.append(f"  {title}:")
        for c in costs:
            lines.append(f"  {c.label:<14} {c.kind:<6} {c.device:>12,} {c.control:>13,}  {c.note}")
        device = sum(c.device for c in costs)
        control = sum(c.control for c in costs)
        lines.append(f"  {'total':<14} {'':<6} {device:>12,} {control:>13,}")
    return lines
