"""The host side of the machine: it runs control regions around device programs.

A `HostProgram` holds named device programs and a list of host steps: `Run` dispatches
one program (its input buffers fed from the host's named values in DRAM, its output
buffers becoming named values), `Branch` reads a condition back from DRAM and runs one
of two step lists, `Repeat` reads a trip count and a continue flag back and runs its
body while both allow. The host's time is part of the count: every dispatch costs
`hw.dispatch_cycles`, every value read back `hw.host_readback_cycles`; device time is
each program's simulated cycles. Nothing overlaps: the host waits for each program
before it reads its results (a data-dependent branch serializes the machine).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .hardware import Hardware
from .isa import Program
from .report import SimReport, SimulationError
from .simulator import simulate

# A loop still running after this many trips is an error, not a hang (HWSIM_MAX_TRIPS).
MAX_TRIPS = int(os.environ.get("HWSIM_MAX_TRIPS", 100_000))


@dataclass(frozen=True)
class Feed:
    """Input buffer `buffer` of a program gets host value `value` (None: zeros),
    transposed by `perm` first where given."""

    buffer: str
    value: str | None
    perm: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Result:
    """Output buffer `buffer` becomes host value `value`, of shape `shape`."""

    value: str
    buffer: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Run:
    program: str
    feeds: tuple[Feed, ...]
    results: tuple[Result, ...]


@dataclass(frozen=True)
class Branch:
    """results[i] = then_values[i] if cond else else_values[i] (host bookkeeping only).
    `cond` is a value name, or a bool known at compile time (no read-back)."""

    cond: str | bool
    then: tuple[HostStep, ...]
    orelse: tuple[HostStep, ...]
    results: tuple[tuple[str, str, str], ...]  # (result, then value, else value)


@dataclass(frozen=True)
class Repeat:
    """ONNX Loop semantics: while trip < trips and cond: run body; cond = next cond.
    `trips` is a value name, or an int known at compile time (no read-back)."""

    trips: str | int
    cond: str | bool
    carried: tuple[tuple[str, str], ...]  # (value inside the body, initial value)
    index: str | None  # the trip number, passed with the dispatch
    body: tuple[HostStep, ...]
    next_cond: str | bool
    next_values: tuple[str, ...]  # body values carried into the next trip, in order
    results: tuple[tuple[str, str], ...]  # (result, value inside the body)


HostStep = Run | Branch | Repeat


@dataclass
class HostProgram:
    name: str
    programs: dict[str, Program]
    steps: tuple[HostStep, ...]
    outputs: tuple[str, ...]
    # Values the host holds from the start: constants it reads, programs' tables.
    constants: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class HostReport:
    """Cycles split into device work and host control, with counts."""

    device_cycles: int = 0
    dispatch_cycles: int = 0
    readback_cycles: int = 0
    dispatches: int = 0
    readbacks: int = 0
    runs: Counter = field(default_factory=Counter)  # program -> times dispatched
    branches: list[tuple[str, bool]] = field(default_factory=list)  # (cond, taken)
    trips: list[int] = field(default_factory=list)  # per loop execution
    reports: list[tuple[str, SimReport]] = field(default_factory=list)

    @property
    def control_cycles(self) -> int:
        return self.dispatch_cycles + self.readback_cycles

    @property
    def cycles(self) -> int:
        return self.device_cycles + self.control_cycles


class _Host:
    def __init__(self, program: HostProgram, hw: Hardware, check_races: bool):
        self.program = program
        self.hw = hw
        self.check_races = check_races
        self.report = HostReport()

    def read_back(self, values: Mapping[str, np.ndarray], name: str) -> np.ndarray:
        if name not in values:
            raise SimulationError(f"error: host reads '{name}', which no program wrote")
        self.report.readbacks += 1
        self.report.readback_cycles += self.hw.host_readback_cycles
        return np.asarray(values[name]).reshape(-1)

    def flag(self, values: Mapping[str, np.ndarray], cond: str | bool) -> bool:
        if isinstance(cond, bool):
            return cond
        return bool(self.read_back(values, cond)[0] != 0)

    def run(self, steps: tuple[HostStep, ...], values: dict[str, np.ndarray]) -> None:
        for step in steps:
            if isinstance(step, Run):
                self.dispatch(step, values)
            elif isinstance(step, Branch):
                taken = self.flag(values, step.cond)
                self.report.branches.append((step.cond, taken))
                self.run(step.then if taken else step.orelse, values)
                for result, a, b in step.results:
                    values[result] = values[a if taken else b]
            else:
                self.repeat(step, values)

    def repeat(self, step: Repeat, values: dict[str, np.ndarray]) -> None:
        if isinstance(step.trips, int):
            limit = step.trips
        else:
            limit = int(self.read_back(values, step.trips)[0])
        cond = self.flag(values, step.cond)
        for inner, init in step.carried:
            values[inner] = values[init]
        trips = 0
        while trips < limit and cond:
            if trips >= MAX_TRIPS:
                raise SimulationError(
                    f"error: a loop is still running after {MAX_TRIPS:,} trips "
                    "(HWSIM_MAX_TRIPS raises the limit)"
                )
            if step.index is not None:
                values[step.index] = np.array(trips, dtype=np.int32)
            self.run(step.body, values)
            nexts = [values[v] for v in step.next_values]
            for (inner, _), value in zip(step.carried, nexts, strict=True):
                values[inner] = value
            trips += 1
            cond = self.flag(values, step.next_cond)
        self.report.trips.append(trips)
        for result, inner in step.results:
            values[result] = values[inner]

    def dispatch(self, step: Run, values: dict[str, np.ndarray]) -> None:
        program = self.program.programs[step.program]
        buffers = program.buffer_map
        feeds = {}
        for feed in step.feeds:
            shape = buffers[feed.buffer].shape
            if feed.value is None:
                feeds[feed.buffer] = np.zeros(shape, dtype=np.int8)
                continue
            if feed.value not in values:
                raise SimulationError(
                    f"error: program {step.program} reads '{feed.value}', which no program wrote"
                )
            value = np.asarray(values[feed.value])
            if value.dtype.kind in "fV" or value.dtype.name == "bfloat16":
                value = value.astype(np.float32)
            if feed.perm:
                value = np.transpose(value, feed.perm)
            feeds[feed.buffer] = np.ascontiguousarray(value).reshape(shape)
        result = simulate(program, self.hw, feeds, check_races=self.check_races)
        self.report.dispatches += 1
        self.report.dispatch_cycles += self.hw.dispatch_cycles
        self.report.device_cycles += result.report.cycles
        self.report.runs[step.program] += 1
        self.report.reports.append((step.program, result.report))
        for r in step.results:
            values[r.value] = np.asarray(result.outputs[r.buffer]).reshape(r.shape)


def run_host(
    program: HostProgram,
    hw: Hardware,
    values: Mapping[str, np.ndarray],
    *,
    check_races: bool = True,
) -> tuple[dict[str, np.ndarray], HostReport]:
    """Run `program` with the host's initial DRAM values (inputs, params, program data
    by name; its own `constants` where `values` has no other); returns its outputs by
    name and the report."""
    host = _Host(program, hw, check_races)
    env = {**program.constants, **values}
    host.run(program.steps, env)
    missing = [name for name in program.outputs if name not in env]
    if missing:
        raise SimulationError(f"error: outputs never written: {', '.join(missing)}")
    return {name: env[name] for name in program.outputs}, host.report
