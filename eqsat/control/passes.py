"""Passes over a ControlProgram, each with a log line of what it did.

These move values between graphs, which rules cannot: a rule rewrites terms inside one
e-graph, and each body is an e-graph of its own whose leaves stand for outer values
(a rule cannot see that a leaf is loop-invariant or that a condition is known, since
neither is a property of the body's terms). So hoisting, folding, unrolling and
merging are graph passes; the rules then optimize each resulting graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from eqsat.control.graphs import GraphWriter, compact, compile_time_value, renamed_outputs
from eqsat.control.program import (
    ControlProgram,
    IfRegion,
    LoopRegion,
    Stage,
    Step,
    yield_name,
)
from eqsat.fold import fold_constants
from eqsat.ir.graph import Graph, Node
from eqsat.ir.types import DType, TensorType


@dataclass
class PassLog:
    lines: list[str] = field(default_factory=list)
    folded_ifs: int = 0
    hoisted: int = 0
    unrolled: int = 0
    merged: int = 0

    def say(self, line: str) -> None:
        self.lines.append(line)


def known_value(program: ControlProgram, name: str, upto: int) -> np.ndarray | None:
    """The compile-time value of `name` as step `upto` sees it, if it has one."""
    if name in program.known:
        return program.known[name]
    for step in reversed(program.steps[:upto]):
        if isinstance(step, Stage) and name in dict(step.graph.outputs):
            return compile_time_value(step.graph, name)
        if not isinstance(step, Stage) and name in step.results:
            return None
    return None


def fold_stage_constants(program: ControlProgram, log: PassLog) -> None:
    """Evaluate what depends only on constants in every graph (eqsat.fold)."""
    for step in program.steps:
        if isinstance(step, Stage):
            step.graph = fold_constants(step.graph)
        elif isinstance(step, IfRegion):
            step.then, step.orelse = fold_constants(step.then), fold_constants(step.orelse)
        else:
            step.body = fold_constants(step.body)


def fold_known_ifs(program: ControlProgram, log: PassLog) -> None:
    """An `if` whose condition is known at compile time becomes the taken branch."""
    steps: list[Step] = []
    for k, step in enumerate(program.steps):
        if isinstance(step, IfRegion):
            value = known_value(program, step.cond, k)
            if value is not None:
                taken = bool(np.asarray(value).reshape(-1)[0] != 0)
                body = step.then if taken else step.orelse
                names = {yield_name(j): r for j, r in enumerate(step.results)}
                steps.append(Stage(renamed_outputs(body, names, f"{program.name}.if{k}")))
                log.folded_ifs += 1
                log.say(
                    f"if ({step.cond}) is known at compile time ({'true' if taken else 'false'}): "
                    f"folded to its {'then' if taken else 'else'} branch"
                )
                continue
        steps.append(step)
    program.steps = steps


def hoist_invariants(
    program: ControlProgram,
    log: PassLog,
    price: Callable[[Graph], int] | None = None,
    dispatch: int = 0,
) -> None:
    """Values of a loop body computed only from outer values (not from carried values
    or the index) move to a stage before the loop: computed once, not per trip. Where
    no stage precedes the loop the hoisted stage is a program of its own, and it must
    pay for its dispatch: (trips - 1) x its cost > dispatch (trips: the trip count
    where known, else 2)."""
    steps: list[Step] = []
    for k, step in enumerate(program.steps):
        if isinstance(step, LoopRegion):
            hoisted = _hoist(program, k, step)
            if hoisted is not None:
                stage, body, count = hoisted
                merges = bool(steps) and isinstance(steps[-1], Stage)
                trips = known_value(program, step.max_trips, k)
                n = 2 if trips is None else int(np.asarray(trips).reshape(-1)[0])
                saved = (n - 1) * price(stage) if price is not None else 1
                if merges or saved > dispatch:
                    step.body = body
                    steps.append(Stage(stage))
                    log.hoisted += count
                    log.say(f"loop {k}: hoisted {count} loop-invariant value(s) out of the body")
                else:
                    log.say(
                        f"loop {k}: kept {count} loop-invariant value(s) in the body (hoisting "
                        f"saves {saved:,} cycles, less than a dispatch, {dispatch:,})"
                    )
        steps.append(step)
    program.steps = steps


def _hoist(program: ControlProgram, k: int, loop: LoopRegion) -> tuple[Graph, Graph, int] | None:
    body = loop.body
    inner = {name for name, _ in loop.carried} | ({loop.index} if loop.index else set())
    invariant = [False] * len(body.nodes)
    # ... and computed from an outer value: what only constants give (an iota, a fill,
    # a reshape of one) the backend lays out at compile time, so there is nothing to hoist
    outer = [False] * len(body.nodes)
    for i, node in body:
        if node.op == "input":
            invariant[i] = outer[i] = str(node.attr("name")) not in inner
        elif node.is_leaf:
            invariant[i] = True
        else:
            invariant[i] = all(invariant[j] for j in node.inputs)
            outer[i] = invariant[i] and any(outer[j] for j in node.inputs)
    live = body.live()
    users = body.users()
    outputs = {i for _, i in body.outputs}
    frontier = [
        live[i]
        and outer[i]
        and not node.is_leaf
        and (i in outputs or any(live[u] and not invariant[u] for u in users[i]))
        for i, node in body
    ]
    chosen = [i for i, f in enumerate(frontier) if f]
    if not chosen:
        return None
    names = {i: f"{program.name}_loop{k}_inv{n}" for n, i in enumerate(chosen)}
    # The stage computes the frontier values from the outer values.
    need = [False] * len(body.nodes)
    stack = list(chosen)
    while stack:
        i = stack.pop()
        if not need[i]:
            need[i] = True
            stack.extend(body.nodes[i].inputs)
    pre = GraphWriter(f"{program.name}.loop{k}_hoisted", body.dims)
    where = pre.copy(body, nodes=need)
    pre.graph.outputs = [(names[i], where[i]) for i in chosen]  # type: ignore[misc]
    # The body reads them as inputs.
    rest = GraphWriter(body.name, body.dims)
    remap: list[int | None] = [None] * len(body.nodes)
    for i, node in body:
        if not live[i]:
            continue
        if i in names:
            remap[i] = rest.leaf("input", names[i], node.type)
        elif outer[i] and not node.is_leaf:
            continue  # only the frontier is read by the body
        else:
            remap[i] = _copy_one(rest, body, i, remap)
    rest.graph.outputs = [(n, remap[i]) for n, i in body.outputs]  # type: ignore[misc]
    return pre.graph, compact(rest.graph), len(chosen)


def _copy_one(w: GraphWriter, source: Graph, i: int, remap: list[int | None]) -> int:
    """Copy node i of `source` into `w`, its operands already placed in `remap`."""
    node = source.nodes[i]
    mask = [j == i for j in range(len(source.nodes))]
    if node.is_leaf:
        return w.copy(source, nodes=mask)[i]  # type: ignore[return-value]
    inputs = tuple(remap[j] for j in node.inputs)
    w.graph.nodes.append(Node(node.op, inputs, node.attrs, node.type, node.name))  # type: ignore[arg-type]
    return len(w.graph.nodes) - 1


@dataclass(frozen=True)
class UnrollChoice:
    """What unrolling a loop would save or cost, as the cost model prices it."""

    trips: int
    rolled_cycles: int
    unrolled_cycles: int
    nodes: int

    @property
    def pays(self) -> bool:
        return self.unrolled_cycles < self.rolled_cycles


def unrollable(program: ControlProgram, k: int, loop: LoopRegion) -> int | None:
    """The trip count of a loop that runs exactly that many trips whatever the data
    (trip count and condition known, the next condition a nonzero constant)."""
    trips = known_value(program, loop.max_trips, k)
    cond = known_value(program, loop.cond, k)
    if trips is None or cond is None:
        return None
    n = max(int(np.asarray(trips).reshape(-1)[0]), 0)
    if n and not np.asarray(cond).reshape(-1)[0]:
        return 0
    nxt = compile_time_value(loop.body, yield_name(0))
    if n > 1 and (nxt is None or not np.asarray(nxt).reshape(-1)[0]):
        return None
    return n


def unrolled_graph(program: ControlProgram, k: int, loop: LoopRegion, trips: int) -> Graph:
    """`trips` copies of the body chained through the carried values, as one stage."""
    w = GraphWriter(f"{program.name}.loop{k}_unrolled", loop.body.dims)
    types = {str(n.attr("name")): n.type for _, n in loop.body.inputs}
    current: dict[str, int] = {}
    for inner, init in loop.carried:
        t = types.get(inner) or _result_type(loop, inner)
        current[inner] = w.leaf("input", init, t)
    for trip in range(trips):
        bound = dict(current)
        if loop.index is not None:
            bound[loop.index] = w.const(np.array(trip), TensorType(DType.I32, ()))
        where = w.copy(loop.body, bound)
        outs = dict(loop.body.outputs)
        current = {
            inner: where[outs[yield_name(j + 1)]]  # type: ignore[misc]
            for j, (inner, _) in enumerate(loop.carried)
        }
    w.graph.outputs = [
        (r, current[inner]) for r, (inner, _) in zip(loop.results, loop.carried, strict=True)
    ]
    return compact(w.graph)


def _result_type(loop: LoopRegion, inner: str) -> TensorType:
    j = [name for name, _ in loop.carried].index(inner)
    return loop.body.nodes[dict(loop.body.outputs)[yield_name(j + 1)]].type


def unroll_loops(
    program: ControlProgram,
    log: PassLog,
    price: Callable[[Graph], int],
    dispatch: int,
    readback: int,
    max_nodes: int,
) -> list[UnrollChoice]:
    """Unroll loops with a compile-time trip count where it pays: the rolled loop costs
    trips x (dispatch + body), the unrolled one its own graph's cost plus one dispatch
    (`price` is the cost model); code size is bounded by `max_nodes` graph nodes."""
    choices = []
    steps: list[Step] = []
    for k, step in enumerate(program.steps):
        if isinstance(step, LoopRegion):
            trips = unrollable(program, k, step)
            if trips is not None:
                body_nodes = sum(not n.is_leaf for _, n in step.body)
                nodes = trips * body_nodes
                if nodes <= max_nodes:
                    graph = unrolled_graph(program, k, step, trips)
                    reads_cond = compile_time_value(step.body, yield_name(0)) is None
                    per_trip = dispatch + price(step.body) + (readback if reads_cond else 0)
                    choice = UnrollChoice(trips, trips * per_trip, dispatch + price(graph), nodes)
                    choices.append(choice)
                    if choice.pays:
                        steps.append(Stage(graph))
                        log.unrolled += 1
                        log.say(
                            f"loop {k}: unrolled {trips} trips ({choice.rolled_cycles:,} -> "
                            f"{choice.unrolled_cycles:,} estimated cycles)"
                        )
                        continue
                    log.say(
                        f"loop {k}: kept rolled ({trips} trips: unrolled "
                        f"{choice.unrolled_cycles:,} >= rolled {choice.rolled_cycles:,} cycles)"
                    )
                else:
                    log.say(
                        f"loop {k}: kept rolled ({trips} trips x {body_nodes} ops exceeds the "
                        f"unroll budget of {max_nodes} ops)"
                    )
        steps.append(step)
    program.steps = steps
    return choices


def merge_stages(program: ControlProgram, log: PassLog) -> None:
    """Adjacent stages become one graph (one program, one dispatch, one e-graph)."""
    steps: list[Step] = []
    for step in program.steps:
        if isinstance(step, Stage) and steps and isinstance(steps[-1], Stage):
            steps[-1] = Stage(_merged(steps[-1].graph, step.graph))
            log.merged += 1
            continue
        steps.append(step)
    program.steps = steps
    prune_outputs(program)


def _merged(a: Graph, b: Graph) -> Graph:
    w = GraphWriter(a.name, a.dims)
    where_a = w.copy(a)
    defined = {name: where_a[i] for name, i in a.outputs}
    where_b = w.copy(b, defined)  # type: ignore[arg-type]
    outputs = [(n, where_a[i]) for n, i in a.outputs]
    outputs += [(n, where_b[i]) for n, i in b.outputs if n not in defined]
    w.graph.outputs = outputs  # type: ignore[assignment]
    return w.graph


def prune_outputs(program: ControlProgram) -> None:
    """Stages output only what a later step or the model reads."""
    later: set[str] = set(program.outputs)
    for step in reversed(program.steps):
        if isinstance(step, Stage):
            step.graph.outputs = [(n, i) for n, i in step.graph.outputs if n in later]
            step.graph = compact(step.graph)
        later |= step.reads()
    program.steps = [s for s in program.steps if not isinstance(s, Stage) or s.graph.outputs]


def simplify(
    program: ControlProgram,
    price: Callable[[Graph], int],
    dispatch: int,
    readback: int,
    max_unroll_nodes: int = 512,
    hoist: bool = True,
    unroll: bool = True,
) -> tuple[ControlProgram, PassLog, list[UnrollChoice]]:
    """All passes in order: fold constants, fold known ifs, hoist, unroll, merge."""
    log = PassLog()
    fold_stage_constants(program, log)
    fold_known_ifs(program, log)
    if hoist:
        hoist_invariants(program, log, price, dispatch)
    choices = []
    if unroll:
        choices = unroll_loops(program, log, price, dispatch, readback, max_unroll_nodes)
    merge_stages(program, log)
    fold_stage_constants(program, log)
    return program, log, choices
