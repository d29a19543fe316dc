"""The optimizer: model graph + rules + hardware -> the cheapest equivalent graph."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from egglog.bindings import EGraph as EggGraph

from eqsat.budget import Budget, OutOfTime, deadline_checker, default_memory_limit
from eqsat.config import DEFAULT_LIMITS, ILP_TIME_LIMIT, Limits
from eqsat.custom_instr import instructions_in_use_for
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.extraction import (
    PricedEGraph,
    extract_program,
    locate_terms,
    price,
    rebuild,
    serialize,
)
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import SaturationReport, run_commands, saturate
from eqsat.extract import Extraction
from eqsat.extract.result import OUT_OF_TIME
from eqsat.ir.graph import Graph
from eqsat.program_cost import ProgramCost, program_cost
from eqsat.rules.predicates import hardware_facts
from eqsat.tiling import prefer_explicit_tiles
from hwsim.hardware import Hardware


@dataclass(frozen=True)
class CompiledRules:
    """egglog text of a rule collection, the rulesets to run and the rule names."""

    text: str
    rulesets: tuple[str, ...]
    names: frozenset[str]
    # (consumer op, producer op) -> rules whose patterns nest them (eqsat.blocks.seams)
    nestings: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


@dataclass
class OptimizeResult:
    original: Graph
    graph: Graph
    before: ProgramCost
    after: ProgramCost
    saturation: SaturationReport
    egraph_nodes: int
    egraph_classes: int
    extraction: Extraction
    kept_original: bool  # extraction found nothing cheaper than the input
    times: dict[str, float] = field(default_factory=dict)
    priced: PricedEGraph | None = None  # kept on request: the e-graph with its costs
    roots: list[str] = field(default_factory=list)
    quant: Any = None  # eqsat.quant.run.QuantRun when the command quantized
    blocks: Any = None  # eqsat.blocks.BlockReport when optimized block by block


ProgressFn = Callable[[str], None]


@instructions_in_use_for("hw")  # the e-graph's datatype holds hw's instruction ops
def optimize(
    graph: Graph,
    rules: CompiledRules,
    hw: Hardware,
    limits: Limits = DEFAULT_LIMITS,
    extractor: str = "greedy",
    ilp_time_limit: float = ILP_TIME_LIMIT,
    progress: ProgressFn | None = None,
    keep_egraph: bool = False,
    facts: str = "",
    baseline: Graph | None = None,
    prepared: EggGraph | None = None,
) -> OptimizeResult:
    """`facts`: egglog commands run once the model is in (the quantization pass's
    `term = param` equalities). `baseline`: the program the result is compared with
    and falls back to (default `graph`; the quantization pass annotates `graph`).
    `prepared`: an e-graph from `prepare_egraph(rules, hw)` to reuse (loading the rules
    takes about a second; blockwise optimization pays it once for all blocks).

    `limits.time_limit` and `limits.memory_limit` bound the whole call: saturation
    stops early enough for extraction to fit (eqsat.budget), the ILP gets what time
    is left, and an extraction that still runs out of time keeps the input program."""
    say = progress or (lambda _msg: None)
    t_start = time.perf_counter()
    budget = Budget(limits.time_limit, limits.memory_limit or default_memory_limit(), t_start)
    if prepared is None:
        egraph = prepare_egraph(rules, hw)
    else:  # the model goes on top of the prepared state, which `pop` restores below
        egraph = prepared
        run_commands(egraph, "(push)")
    text, _ = graph_program(graph)
    run_commands(egraph, text)
    if facts:
        run_commands(egraph, facts)

    def on_round(i: int, nodes: int, seconds: float) -> None:
        say(f"  round {i}: {nodes:,} e-nodes, {seconds:.2f} s")

    report = saturate(
        egraph, list(rules.rulesets), set(rules.names), limits, on_round, budget=budget
    )
    t_sat = time.perf_counter()

    say(f"extracting ({extractor}) from {report.nodes:,} e-nodes")
    serialized = serialize(egraph)
    if prepared is not None:
        run_commands(egraph, "(pop)")
    del egraph  # egglog's memory is not needed while Python prices the copy
    tick = deadline_checker(budget)
    base = graph if baseline is None else baseline
    before = program_cost(base, hw)
    try:
        priced = price(serialized, hw, tick)
        del serialized
        classes, spelled = locate_terms(graph, priced.decoded)
        roots = sorted({classes[i] for _, i in graph.outputs})
        ilp_seconds = min(ilp_time_limit, max(budget.remaining(), 1.0))
        extraction = extract_program(priced, roots, extractor, ilp_seconds, tick, spelled)
    except OutOfTime:
        say("time limit reached during extraction: the input program is kept")
        return OptimizeResult(
            original=base,
            graph=base,
            before=before,
            after=before,
            saturation=report,
            egraph_nodes=report.nodes,
            egraph_classes=0,
            extraction=Extraction({}, float(before.cycles), (), (), extractor, OUT_OF_TIME),
            kept_original=True,
            times={
                "saturate": t_sat - t_start,
                "extract": time.perf_counter() - t_sat,
                "total": time.perf_counter() - t_start,
            },
        )
    extraction = prefer_explicit_tiles(priced, extraction)
    names = _class_names(graph, classes)
    outputs = [(name, classes[i]) for name, i in graph.outputs]
    leaf_order = [classes[i] for i, n in graph if n.is_leaf and classes[i] is not None]
    optimized = rebuild(
        priced, extraction, outputs, graph.name, graph.dims, names, leaf_order, graph.constants
    )
    t_ext = time.perf_counter()

    after = program_cost(optimized, hw)
    kept = after.cycles > before.cycles
    if kept:
        # Greedy extraction is a heuristic; never hand back something worse.
        optimized, after = base, before
    return OptimizeResult(
        original=base,
        graph=optimized,
        before=before,
        after=after,
        saturation=report,
        egraph_nodes=priced.decoded.n_nodes,
        egraph_classes=len(priced.decoded.classes),
        extraction=extraction,
        kept_original=kept,
        times={
            "saturate": t_sat - t_start,
            "extract": t_ext - t_sat,
            "total": time.perf_counter() - t_start,
        },
        priced=priced if keep_egraph else None,
        roots=roots,
    )


@instructions_in_use_for("hw")
def prepare_egraph(rules: CompiledRules, hw: Hardware) -> EggGraph:
    """A fresh e-graph with the program sorts, the rules and the hardware's facts
    loaded: what every optimization starts from."""
    egraph = EggGraph()
    run_commands(egraph, program_prelude())
    run_commands(egraph, rules.text)
    # What rules may read about the target (tile candidates), before any rule runs.
    run_commands(egraph, hardware_facts(hw))
    return egraph


def _class_names(graph: Graph, classes: list[str | None]) -> dict[str, str]:
    """Keep the model's statement names on the e-classes they ended up in."""
    out: dict[str, str] = {}
    for i, node in graph:
        if node.name and classes[i] is not None:
            out.setdefault(classes[i], node.name)
    return out


__all__ = ["CompiledRules", "OptimizeResult", "PricedEGraph", "optimize"]
