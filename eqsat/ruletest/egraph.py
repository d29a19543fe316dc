"""A graph saturated by rules in an e-graph we keep, to ask it questions: are two
terms in one e-class (egglog `check`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from egglog.bindings import EggSmolError
from egglog.bindings import EGraph as EggGraph

from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import SaturationReport, run_commands, saturate
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules


@contextmanager
def saturated(
    prepared: EggGraph, graph: Graph, rules: CompiledRules, limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[dict[int, str], SaturationReport]]:
    """`graph` grown by `rules` on top of `prepared` (an e-graph from
    `eqsat.pipeline.prepare_egraph`: prelude, rules, hardware facts), with the
    optimizer's schedule; yields node -> its egglog global and the saturation report.
    `prepared` is back as it was afterwards (egglog push/pop)."""
    run_commands(prepared, "(push)")
    try:
        text, names = graph_program(graph)
        run_commands(prepared, text)
        report = saturate(prepared, list(rules.rulesets), set(rules.names), limits)
        yield names, report
    finally:
        run_commands(prepared, "(pop)")


def same_class(egraph: EggGraph, a: str, b: str) -> bool:
    """Whether the egglog globals `a` and `b` are in one e-class."""
    try:
        run_commands(egraph, f"(check (= {a} {b}))")
    except EggSmolError:
        return False
    return True
