"""The reference meaning of a ControlProgram: each graph by eqsat.interpreter, the
control in Python (what the host does, without timing)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from eqsat.control.program import (
    ControlProgram,
    IfRegion,
    LoopRegion,
    Stage,
    graph_reads,
    yield_name,
)
from eqsat.errors import UserError
from eqsat.interpreter import BindingError, check_binding, evaluate
from eqsat.ir.graph import Graph

# A loop that would run more trips than this is refused rather than left to hang
# (EQSAT_MAX_TRIPS overrides); the host simulator has the same limit.
MAX_TRIPS = int(os.environ.get("EQSAT_MAX_TRIPS", 100_000))


class TripLimitError(UserError):
    """A loop ran past MAX_TRIPS trips."""


@dataclass
class ControlTrace:
    """What the control did: the branch each `if` took and the trips of each loop,
    by step index, in execution order."""

    branches: list[tuple[int, bool]] = field(default_factory=list)
    trips: list[tuple[int, int]] = field(default_factory=list)


def truth(value: np.ndarray) -> bool:
    """A condition's value: its one element is nonzero."""
    return bool(np.asarray(value).reshape(-1)[0] != 0)


def trip_limit(value: np.ndarray) -> int:
    return max(int(np.asarray(value).reshape(-1)[0]), 0)


def run_graph(graph: Graph, env: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Evaluate one stage or body graph on the named values it reads."""
    return evaluate(graph, {name: env[name] for name in graph_reads(graph)})


def initial_env(
    program: ControlProgram, bindings: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The model's inputs and params (checked against their types) and its constants."""
    env: dict[str, np.ndarray] = dict(program.known)
    for name, t in program.bound_names().items():
        if name not in bindings:
            kind = "input" if name in program.inputs else "param"
            raise BindingError(f"no value given for {kind} '{name}'")
        env[name] = check_binding(name, bindings[name], t)
    return env


def run_control(
    program: ControlProgram, bindings: Mapping[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], ControlTrace]:
    """The outputs of `program` by name, and the control trace."""
    env = initial_env(program, bindings)
    trace = ControlTrace()
    for k, step in enumerate(program.steps):
        if isinstance(step, Stage):
            env.update(run_graph(step.graph, env))
        elif isinstance(step, IfRegion):
            taken = truth(env[step.cond])
            trace.branches.append((k, taken))
            values = run_graph(step.then if taken else step.orelse, env)
            env.update({r: values[yield_name(j)] for j, r in enumerate(step.results)})
        else:
            env.update(run_loop(k, step, env, trace))
    return {name: env[name] for name in program.outputs}, trace


def run_loop(
    k: int, loop: LoopRegion, env: dict[str, np.ndarray], trace: ControlTrace
) -> dict[str, np.ndarray]:
    limit = trip_limit(env[loop.max_trips])
    cond = truth(env[loop.cond])
    local = dict(env)
    for inner, init in loop.carried:
        local[inner] = env[init]
    trips = 0
    while trips < limit and cond:
        if trips >= MAX_TRIPS:
            raise TripLimitError(
                f"the loop at step {k} is still running after {MAX_TRIPS:,} trips "
                "(EQSAT_MAX_TRIPS raises the limit)"
            )
        if loop.index is not None:
            local[loop.index] = np.array(trips, dtype=np.int32)
        values = run_graph(loop.body, local)
        cond = truth(values[yield_name(0)])
        for j, (inner, _) in enumerate(loop.carried):
            local[inner] = values[yield_name(j + 1)]
        trips += 1
    trace.trips.append((k, trips))
    return {r: local[inner] for r, (inner, _) in zip(loop.results, loop.carried, strict=True)}
