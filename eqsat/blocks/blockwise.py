"""Optimizing a model block by block: each distinct block once, the copies reuse it.

Deep models repeat one layer many times (BERT-base 12, LLaMA-7B 32, GPT-3 96). The
graph is cut between layers (eqsat.blocks.segments), each distinct canonical block
is saturated and extracted once (or taken from the compile cache, or computed on a
Dask cluster), and the optimized blocks are stitched back (eqsat.blocks.stitch). The
result is priced and checked like a whole-graph result, and the report says where
the cuts were and which rewrites a whole-graph run could still have made across them.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from eqsat.blocks.cache import CompileCache, content_key
from eqsat.blocks.segments import Block, BlockPlan
from eqsat.blocks.serial import graph_from_json, graph_to_json
from eqsat.blocks.stitch import stitch
from eqsat.blocks.together import combine, split
from eqsat.config import DEFAULT_LIMITS, ILP_TIME_LIMIT, Limits
from eqsat.egraph.saturate import SATURATED, SaturationReport
from eqsat.extract import Extraction
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, OptimizeResult, ProgressFn, optimize, prepare_egraph
from eqsat.program_cost import program_cost
from hwsim.hardware import Hardware


@dataclass
class BlockOutcome:
    """What optimizing one distinct block gave (computed here, on a worker, or cached)."""

    graph: Graph
    stop_reason: str
    rounds: int
    nodes: int
    classes: int
    rules_fired: dict[str, int]
    seconds: float
    extractor: str
    status: str
    cached: bool = False
    shared: int = 1  # how many distinct blocks were in the e-graph these figures are of
    run: str = ""  # the saturation run these figures are of (shared by its blocks)


@dataclass
class BlockReport:
    plan: BlockPlan
    outcomes: dict[str, BlockOutcome]
    cache_hits: int = 0
    scheduler: str = "this process"
    seconds: dict[str, float] = field(default_factory=dict)


def optimize_blockwise(
    graph: Graph,
    plan: BlockPlan,
    rules: CompiledRules,
    hw: Hardware,
    limits: Limits = DEFAULT_LIMITS,
    extractor: str = "greedy",
    ilp_time_limit: float = ILP_TIME_LIMIT,
    progress: ProgressFn | None = None,
    cache: CompileCache | None = None,
    scheduler: Any = None,
) -> OptimizeResult:
    """Optimize `graph` by the blocks of `plan`. `scheduler`: a dask.distributed
    Client whose workers optimize the distinct blocks (None: this process)."""
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    distinct = plan.distinct
    say(
        f"blocks: {len(plan.blocks)} blocks, {len(distinct)} distinct "
        f"(the others reuse their optimization)"
    )
    keys = {
        key: _cache_key(group[0], rules, hw, limits, extractor, ilp_time_limit)
        for key, group in distinct.items()
    }
    outcomes: dict[str, BlockOutcome] = {}
    todo: list[str] = []
    for key, group in distinct.items():
        entry = cache.get(keys[key]) if cache is not None else None
        if entry is not None:
            outcomes[key] = _outcome_from_entry(entry, group[0].graph)
        else:
            todo.append(key)
    if cache is not None and len(todo) < len(distinct):
        say(f"  {len(distinct) - len(todo)} of {len(distinct)} distinct blocks from the cache")
    run = functools.partial(
        _optimize_blocks,
        rules=rules,
        hw=hw,
        extractor=extractor,
        ilp_time_limit=ilp_time_limit,
    )
    if scheduler is not None and todo:
        # one task per distinct block: the workers share the work
        futures = [
            scheduler.submit(run, [distinct[key][0].graph], limits, pure=False) for key in todo
        ]
        for key, fut in zip(todo, futures, strict=True):
            (outcomes[key],) = fut.result()
            say(_done_line([distinct[key]], outcomes[key]))
    elif todo:
        # all in one e-graph: one saturation for every distinct block (together.py)
        left = limits.time_limit - (time.perf_counter() - t0)
        graphs = [distinct[key][0].graph for key in todo]
        done = run(graphs, replace(limits, time_limit=max(left, 0.5)))
        for key, outcome in zip(todo, done, strict=True):
            outcomes[key] = outcome
        say(_done_line([distinct[k] for k in todo], done[0]))
    if cache is not None:
        for key in todo:
            cache.put(keys[key], _entry(outcomes[key]))
    t_opt = time.perf_counter()
    stitched = stitch(graph, plan.blocks, {k: o.graph for k, o in outcomes.items()})
    before, after = program_cost(graph, hw), program_cost(stitched, hw)
    kept = after.cycles > before.cycles
    if kept:
        stitched, after = graph, before
    t_end = time.perf_counter()
    runs = list({o.run or key: o for key, o in outcomes.items()}.values())
    report = BlockReport(
        plan,
        outcomes,
        cache_hits=len(distinct) - len(todo),
        scheduler=_describe(scheduler),
        seconds={"blocks": t_opt - t0, "stitch": t_end - t_opt},
    )
    result = OptimizeResult(
        original=graph,
        graph=stitched,
        before=before,
        after=after,
        saturation=_merged_saturation(runs, limits.node_limit),
        egraph_nodes=sum(o.nodes for o in runs),
        egraph_classes=sum(o.classes for o in runs),
        extraction=Extraction({}, float(after.cycles), (), (), extractor, _merged_status(runs)),
        kept_original=kept,
        times={
            "saturate": sum(o.seconds for o in runs if not o.cached),
            "extract": 0.0,
            "total": t_end - t0,
        },
    )
    result.blocks = report
    return result


def _optimize_blocks(
    blocks: list[Graph],
    limits: Limits,
    rules: CompiledRules,
    hw: Hardware,
    extractor: str,
    ilp_time_limit: float,
) -> list[BlockOutcome]:
    """Distinct blocks through the whole-graph optimizer, in one e-graph (also run on
    workers, which keep one prepared e-graph per rules and hardware for all the
    blocks they get). A block whose extracted program reads another block's leaves is
    optimized again on its own."""
    t = time.perf_counter()
    prepared = _worker_egraph(rules, hw)

    def one(g: Graph, lim: Limits):
        return optimize(
            g,
            rules,
            hw,
            lim,
            extractor=extractor,
            ilp_time_limit=ilp_time_limit,
            prepared=prepared,
        )

    if len(blocks) == 1:
        r = one(blocks[0], limits)
        return [_outcome(r, r.graph, time.perf_counter() - t, 1)]
    r = one(combine(blocks), limits)
    seconds = time.perf_counter() - t
    out = []
    for k, g in enumerate(blocks):
        part = split(r.graph, k, g)
        if part is None:
            t1 = time.perf_counter()
            alone = one(g, limits)
            out.append(_outcome(alone, alone.graph, time.perf_counter() - t1, 1))
        else:
            out.append(_outcome(r, part, seconds, len(blocks)))
    return out


def _outcome(r: OptimizeResult, graph: Graph, seconds: float, shared: int) -> BlockOutcome:
    return BlockOutcome(
        graph=graph,
        stop_reason=r.saturation.stop_reason,
        rounds=len(r.saturation.iterations),
        nodes=r.egraph_nodes,
        classes=r.egraph_classes,
        rules_fired=dict(r.saturation.rules_fired),
        seconds=seconds,
        extractor=r.extraction.extractor,
        status=r.extraction.status,
        shared=shared,
        run=f"{id(r)}",
    )


_WORKER_EGRAPHS: dict[str, Any] = {}


def _worker_egraph(rules: CompiledRules, hw: Hardware):
    key = content_key(rules.text, repr(hw))
    if key not in _WORKER_EGRAPHS:
        _WORKER_EGRAPHS.clear()  # one at a time: each holds all the rules
        _WORKER_EGRAPHS[key] = prepare_egraph(rules, hw)
    return _WORKER_EGRAPHS[key]


def _done_line(groups: list[list[Block]], o: BlockOutcome) -> str:
    ops = sum(len(g[0].nodes) for g in groups)
    uses = sum(len(g) for g in groups)
    what = f"{len(groups)} distinct blocks" if len(groups) > 1 else "1 distinct block"
    return (
        f"  {what} ({ops} ops, standing for {uses} blocks) in one e-graph: "
        f"{o.nodes:,} e-nodes, {o.rounds} rounds, {o.seconds:.2f} s"
    )


def _merged_saturation(outcomes, node_limit: int = 0) -> SaturationReport:
    outcomes = list(outcomes)
    fired: Counter[str] = Counter()
    for o in outcomes:
        fired.update(o.rules_fired)
    stops = [o.stop_reason for o in outcomes if o.stop_reason != SATURATED]
    report = SaturationReport(stop_reason=stops[0] if stops else SATURATED, rules_fired=fired)
    report.initial_nodes = sum(o.nodes for o in outcomes)
    report.node_limit = node_limit  # the limit each block ran under (not "limit 0")
    return report


def _merged_status(outcomes) -> str:
    statuses = {o.status for o in outcomes}
    return statuses.pop() if len(statuses) == 1 else "mixed"


def _describe(scheduler: Any) -> str:
    if scheduler is None:
        return "this process"
    info = scheduler.scheduler_info()
    return f"dask at {scheduler.scheduler.address} ({len(info.get('workers', {}))} workers)"


# ------------------------------------------------------------------ cache entries


def _cache_key(
    block: Block,
    rules: CompiledRules,
    hw: Hardware,
    limits: Limits,
    extractor: str,
    ilp_time_limit: float,
) -> str:
    return content_key(
        block.key,
        rules.text,
        ",".join(rules.rulesets),
        repr(hw),
        repr((limits.iter_limit, limits.node_limit, limits.time_limit, limits.memory_limit)),
        f"{extractor}:{ilp_time_limit}",
        code_version(),
    )


def _entry(o: BlockOutcome) -> dict[str, Any]:
    return {
        "graph": graph_to_json(o.graph),
        "stop_reason": o.stop_reason,
        "rounds": o.rounds,
        "nodes": o.nodes,
        "classes": o.classes,
        "rules_fired": o.rules_fired,
        "seconds": o.seconds,
        "extractor": o.extractor,
        "status": o.status,
        "shared": o.shared,
        "run": o.run,
    }


def _outcome_from_entry(entry: dict[str, Any], canonical: Graph) -> BlockOutcome:
    return BlockOutcome(
        graph=graph_from_json(entry["graph"], canonical.constants),
        stop_reason=str(entry["stop_reason"]),
        rounds=int(entry["rounds"]),
        nodes=int(entry["nodes"]),
        classes=int(entry["classes"]),
        rules_fired={str(k): int(v) for k, v in entry["rules_fired"].items()},
        seconds=float(entry["seconds"]),
        extractor=str(entry["extractor"]),
        status=str(entry["status"]),
        cached=True,
        shared=int(entry.get("shared", 1)),
        run="cache:" + str(entry.get("run", "")),
    )


@functools.cache
def code_version() -> str:
    """eqsat's version and a digest of the code that decides what the optimizer
    returns (eqsat/ and hwsim/), so that a changed cost model is a cache miss."""
    try:
        version = metadata.version("eqsat")
    except metadata.PackageNotFoundError:
        version = "unknown"
    h = hashlib.sha256(version.encode())
    root = Path(__file__).resolve().parents[2]
    for package in ("eqsat", "hwsim"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()
