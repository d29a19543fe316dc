"""One point of an exploration: the model optimized, compiled and simulated (or only
priced by the cost model) on one hardware variant. Runs in this process or on a Dask
worker; its result row is cached with the compile cache, so a rerun resumes."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eqsat.blocks import CompileCache, optimize_blockwise, plan_blocks
from eqsat.blocks.blockwise import code_version
from eqsat.blocks.cache import content_key
from eqsat.blocks.segments import block_key
from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, optimize
from hwsim.hardware import Hardware


@dataclass
class Point:
    """A result row. `area_macs` and `area_sram_bytes` are the area proxy."""

    changes: str
    cycles: int
    seconds: float  # the model's latency at the hardware's clock
    estimated: bool
    kernels: int
    dram_bytes: int
    area_macs: int
    area_sram_bytes: int
    compile_seconds: float
    cached: bool = False


def evaluate_point(
    graph: Graph,
    rules: CompiledRules,
    hw: Hardware,
    label: str,
    estimate: bool,
    cache_dir: str | None,
    limits: Limits = DEFAULT_LIMITS,
    seed: int = 0,
) -> Point:
    cache = CompileCache(Path(cache_dir)) if cache_dir else None
    key = content_key(
        "explore-point",
        block_key(graph),
        rules.text,
        repr(hw),
        repr(limits),
        str(estimate),
        str(seed),
        code_version(),
    )
    if cache is not None and (entry := cache.get(key)) is not None:
        return Point(**{**entry["point"], "cached": True})
    t = time.perf_counter()
    plan = plan_blocks(graph, rules.nestings)
    if plan.repeats:
        result = optimize_blockwise(graph, plan, rules, hw, limits, cache=cache)
    else:
        result = optimize(graph, rules, hw, limits)
    if estimate:
        cycles, kernels, dram = result.after.cycles, result.after.kernels, result.after.dram_bytes
    else:
        from backend import compile_graph
        from hwsim import simulate

        bindings = random_bindings(graph, seed)
        compiled = compile_graph(result.graph, hw, bindings)
        report = simulate(compiled.program, hw, compiled.feeds(bindings)).report
        cycles, kernels = report.cycles, len(compiled.kernels)
        dram = report.dram_bytes
    point = Point(
        changes=label,
        cycles=int(cycles),
        seconds=cycles / (hw.clock_ghz * 1e9),
        estimated=estimate,
        kernels=int(kernels),
        dram_bytes=int(dram),
        area_macs=hw.array_rows * hw.array_cols,
        area_sram_bytes=hw.sram_bytes + hw.acc_bytes,
        compile_seconds=time.perf_counter() - t,
    )
    if cache is not None:
        cache.put(key, {"point": _plain(asdict(point))})
    return point


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "cached"}
