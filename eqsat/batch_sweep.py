"""Performance modelling over a dimension (batch size, sequence length): for each value,
the model's roofline (FLOPs, DRAM bytes, compute and memory time at peak, the bound),
the cost model's expected runtime of the optimized program, its simulated runtime, the
memory it needs and whether that fits the device; then the value to serve at.

The value chosen is the smallest whose model roofline is compute-bound (arithmetic
intensity at or past the hardware's ridge point: more batch then buys no more
throughput per byte) among those that fit the device memory; if none is compute-bound,
the largest that fits (the most throughput the memory allows).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from backend import compile_graph
from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, optimize
from eqsat.profile import KernelProfile, profile_run
from eqsat.program_cost import program_cost
from eqsat.roofline import model_roofline
from hwsim import Hardware, simulate
from hwsim.costmodel import roofline_terms

_SWEEP = re.compile(r"^([A-Za-z_]\w*)=(\d+(?:,\d+)*)$")


def parse_sweep(text: str) -> tuple[str, list[int]]:
    """'B=1,2,4' -> ('B', [1, 2, 4]); ValueError with what is expected otherwise."""
    m = _SWEEP.match(text.replace(" ", ""))
    if not m:
        raise ValueError(f"expected NAME=V1,V2,... with positive integers, got '{text}'")
    values = [int(v) for v in m.group(2).split(",")]
    if any(v < 1 or v > 2**20 for v in values):
        raise ValueError(f"sweep values must be between 1 and {2**20:,}, got '{text}'")
    return m.group(1), sorted(set(values))


@dataclass
class SweepPoint:
    value: int
    flops: int
    dram_bytes: int
    compute_cycles: float  # the busier compute unit at peak
    memory_cycles: float  # the model's DRAM bytes at peak bandwidth
    bound: str  # "matrix", "vector" or "dram" (the model roofline's)
    roofline_cycles: int
    expected_cycles: int  # the cost model's estimate of the program run
    simulated_cycles: int | None
    weight_bytes: int
    memory_bytes: int  # weights, inputs, outputs and live activations (liveness-planned)
    fits: bool | None  # None: the hardware file gives no capacity
    dtype: str  # the dtype most of the model's MACs run in (whose roof and ridge apply)
    kernels: list[KernelProfile] = field(default_factory=list)

    @property
    def intensity(self) -> float:
        return self.flops / self.dram_bytes if self.dram_bytes else float("inf")

    @property
    def compute_bound(self) -> bool:
        return self.bound != "dram"

    def runtime_cycles(self) -> int:
        return self.simulated_cycles if self.simulated_cycles is not None else self.expected_cycles

    def as_dict(self, hw: Hardware) -> dict:
        seconds = self.runtime_cycles() / (hw.clock_ghz * 1e9)
        return {
            "value": self.value,
            "flops": self.flops,
            "dram_bytes": self.dram_bytes,
            "intensity": self.intensity,
            "compute_cycles": self.compute_cycles,
            "memory_cycles": self.memory_cycles,
            "bound": self.bound,
            "roofline_cycles": self.roofline_cycles,
            "expected_cycles": self.expected_cycles,
            "simulated_cycles": self.simulated_cycles,
            "expected_error": None
            if not self.simulated_cycles
            else self.expected_cycles / self.simulated_cycles - 1,
            "latency_s": seconds,
            "throughput_per_s": self.value / seconds if seconds else None,
            "weight_bytes": self.weight_bytes,
            "memory_bytes": self.memory_bytes,
            "fits": self.fits,
        }


def ridge_point(hw: Hardware, dtype: str) -> float:
    """FLOPs per DRAM byte where the matrix unit's peak meets the DRAM bandwidth."""
    return 2 * hw.macs_per_cycle[dtype] / hw.dram_bytes_per_cycle


def measure_point(
    graph: Graph,
    value: int,
    hw: Hardware,
    rules: CompiledRules | None,
    limits: Limits = DEFAULT_LIMITS,
    simulate_run: bool = True,
) -> SweepPoint:
    """One point: `graph` already has the dimension bound to `value`. `rules=None`: the
    model as written (no optimization)."""
    roof = model_roofline(graph, hw)
    terms = roofline_terms(hw, roof.macs, roof.vector_ops, roof.dram_bytes)
    program = optimize(graph, rules, hw, limits).graph if rules is not None else graph
    expected = program_cost(program, hw).cycles
    compiled = compile_graph(program, hw)
    weights = sum(n.type.nbytes for _, n in graph if n.op in ("param", "literal"))
    memory = compiled.footprint.planned_bytes
    simulated, kernels = None, []
    if simulate_run:
        feeds = compiled.feeds(random_bindings(graph, 0))
        report = simulate(compiled.program, hw, feeds, check_races=False, record=True).report
        simulated = report.cycles
        kernels = profile_run(compiled.program, hw, report)
    capacity = hw.dram_capacity_bytes
    return SweepPoint(
        value=value,
        flops=2 * sum(roof.macs.values()) + roof.vector_ops,
        dram_bytes=roof.dram_bytes,
        compute_cycles=max(terms["matrix"], terms["vector"]),
        memory_cycles=terms["dram"],
        bound=roof.bound,
        roofline_cycles=roof.cycles,
        expected_cycles=int(expected),
        simulated_cycles=simulated,
        weight_bytes=weights,
        memory_bytes=memory,
        fits=None if capacity is None else memory <= capacity,
        dtype=max(roof.macs, key=roof.macs.__getitem__) if roof.macs else "f32",
        kernels=kernels,
    )


def choose(points: list[SweepPoint]) -> tuple[SweepPoint | None, str]:
    """The point to serve at and why (see the module docstring)."""
    fitting = [p for p in points if p.fits is not False]
    if not fitting:
        return None, "no value fits the device memory"
    bound = [p for p in fitting if p.compute_bound]
    if bound:
        return min(bound, key=lambda p: p.value), "the smallest compute-bound value that fits"
    best = max(fitting, key=lambda p: p.value)
    return best, "no value is compute-bound: the largest that fits"


def sweep(
    bind: Callable[[int], Graph],
    values: list[int],
    hw: Hardware,
    rules: CompiledRules | None,
    limits: Limits = DEFAULT_LIMITS,
    simulate_run: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[SweepPoint]:
    """`bind(v)`: the model with the swept dimension set to v."""
    out = []
    for i, v in enumerate(values):
        if progress is not None:
            progress(f"[{i + 1}/{len(values)}] {v}")
        out.append(measure_point(bind(v), v, hw, rules, limits, simulate_run))
    return out
