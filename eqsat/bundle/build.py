"""`compile_bundle`: one optimization for every bucket of a dimension's range.

Each bucket's masked model (eqsat/bundle/masking.py) goes side by side into ONE e-graph
(eqsat/blocks/together.py: leaves kept apart by a per-bucket prefix). Saturation runs
once; rules whose guards read shapes see each bucket's own S, and since every e-node's
cost is priced from its own shapes, extracting the combined roots extracts each
bucket's program at that bucket's costs. The result splits back per bucket and each
part is lowered to a hwsim program.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eqsat.blocks.together import combine, split
from eqsat.bundle.errors import BundleError
from eqsat.bundle.masking import PaddedModel, pad_model
from eqsat.bundle.ranges import DimRange, check_buckets
from eqsat.bundle.source import ModelSource, as_stored
from eqsat.config import DEFAULT_LIMITS, ILP_TIME_LIMIT, Limits
from eqsat.ir.graph import Graph
from eqsat.program_cost import program_cost
from hwsim.hardware import PRESETS, Hardware, load_hardware

Progress = Callable[[str], None]


@dataclass
class BucketProgram:
    """One bucket: the optimized masked graph, how to feed it, its estimate and code."""

    size: int
    graph: Graph
    inputs: dict[str, tuple[int, ...]]  # model input -> padded axes
    outputs: dict[str, tuple[tuple[int, int, int], ...]]  # output -> (axis, before, after)
    masks: dict[str, str]  # role -> mask input name
    est_cycles: int
    asm: str
    compiled: object = None  # backend CompiledProgram, built on first use


@dataclass
class Bundle:
    """Programs for every bucket of one dimension, the model and its params."""

    source: ModelSource
    dim: DimRange
    hw_spec: str  # a preset name, or the text of a hardware TOML file
    programs: dict[int, BucketProgram]
    stats: dict = field(default_factory=dict)
    _hw: Hardware | None = None

    @property
    def buckets(self) -> list[int]:
        return sorted(self.programs)

    @property
    def name(self) -> str:
        return self.source.model.name

    def hardware(self) -> Hardware:
        if self._hw is None:
            self._hw = hardware_from_spec(self.hw_spec)
        return self._hw

    def compiled(self, size: int):
        """The lowered program of bucket `size` (lowered again from its graph when the
        bundle was read from a file; the result must match the stored assembly)."""
        prog = self.programs[size]
        if prog.compiled is None:
            from backend import compile_graph

            prog.compiled = compile_graph(prog.graph, self.hardware())
            if prog.compiled.asm != prog.asm:
                raise BundleError(
                    f"bucket {size}: the program lowered from the stored graph differs from the "
                    "stored assembly (a bundle written by another backend version): compile "
                    "the bundle again"
                )
        return prog.compiled


def hardware_spec(hw: str | Path) -> str:
    """What a bundle keeps of --hw: the preset's name or the TOML file's text."""
    text = str(hw)
    if text in PRESETS:
        return text
    load_hardware(text)  # a bad file fails here, with its own message
    return Path(text).read_text()


def hardware_from_spec(spec: str) -> Hardware:
    if spec in PRESETS:
        return load_hardware(spec)
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(spec)
    try:
        return load_hardware(f.name)
    finally:
        Path(f.name).unlink(missing_ok=True)


def padded_bucket(source: ModelSource, dim: str, size: int) -> PaddedModel:
    """The masked model at S = size (the axes of S found against the model at size + 1)."""
    return pad_model(source.graph(dim, size), source.graph(dim, size + 1), dim, source.where)


def compile_bundle(
    source: ModelSource | str | Path,
    dim: DimRange,
    buckets: Sequence[int],
    hw: str | Path = "edge",
    *,
    rules=None,
    limits: Limits = DEFAULT_LIMITS,
    extractor: str = "greedy",
    ilp_time_limit: float = ILP_TIME_LIMIT,
    optimize: bool = True,
    seed: int = 0,
    progress: Progress | None = None,
) -> Bundle:
    """Compile `source` for every bucket of `dim`: mask, optimize all buckets in one
    e-graph (unless optimize=False), lower each. Params the model's arrays do not hold
    are drawn from `seed` once and stored in the bundle."""
    from backend import compile_graph
    from eqsat.pipeline import optimize as run_optimizer
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths

    say = progress or (lambda _m: None)
    if not isinstance(source, ModelSource):
        source = ModelSource.from_file(source)
    if dim.name not in source.dim_names():
        listed = ", ".join(sorted(source.dim_names())) or "none"
        raise BundleError(
            f"model '{source.model.name}' has no dimension '{dim.name}' (its dimensions: {listed})"
        )
    try:
        sizes = check_buckets(dim, buckets)
    except ValueError as e:
        raise BundleError(f"--buckets: {e}") from None
    spec = hardware_spec(hw)
    hardware = hardware_from_spec(spec)
    t0 = time.perf_counter()
    padded = [padded_bucket(source, dim.name, b) for b in sizes]
    source.fill_params(padded[-1].graph, seed)
    t_mask = time.perf_counter()
    stats: dict = {"buckets": sizes, "mask_seconds": t_mask - t0, "optimized": optimize}
    graphs = [p.graph for p in padded]
    if optimize:
        compiled_rules = rules or compile_rule_paths([DEFAULT_RULES_DIR])
        say(
            f"optimizing {len(sizes)} buckets of {source.model.name} ({dim.name} = "
            f"{', '.join(map(str, sizes))}) in one e-graph for {hardware.name}"
        )
        cpu = time.process_time()
        result = run_optimizer(
            combine(graphs),
            compiled_rules,
            hardware,
            limits,
            extractor=extractor,
            ilp_time_limit=ilp_time_limit,
            progress=say,
        )
        stats.update(
            egraph_nodes=result.egraph_nodes,
            rounds=len(result.saturation.iterations),
            stop=result.saturation.describe_stop(),
            optimize_seconds=result.times.get("total", 0.0),
            optimize_cpu_seconds=time.process_time() - cpu,
        )
        parts = []
        for k, g in enumerate(graphs):
            part = split(result.graph, k, g)
            if part is None:  # the program read another bucket's leaf: optimize it alone
                say(f"bucket {sizes[k]}: the extracted program crossed buckets; optimized alone")
                part = run_optimizer(g, compiled_rules, hardware, limits, extractor=extractor).graph
            parts.append(part)
    else:
        parts = graphs
    programs = {}
    for b, p, part in zip(sizes, padded, parts, strict=True):
        part = as_stored(part, f"bucket {b}")
        compiled = compile_graph(part, hardware)
        programs[b] = BucketProgram(
            b,
            part,
            p.inputs,
            p.outputs,
            p.masks,
            int(program_cost(part, hardware).cycles),
            compiled.asm,
            compiled,
        )
    stats["compile_seconds"] = time.perf_counter() - t0
    return Bundle(source, dim, spec, programs, stats, hardware)
