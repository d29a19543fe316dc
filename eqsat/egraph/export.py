"""The egglog program eqsat runs for a model, as one text a user can read or replay:
the prelude (sorts, shape analysis), the compiled rules, the hardware's facts, the
model's terms, then a schedule and an `extract` per output.

eqsat itself drives saturation round by round from Python (a back-off scheduler whose
match budget follows the node and memory limits, the shape analysis saturated between
rounds: eqsat/egraph/saturate.py); the schedule written here is the plain equivalent
without those limits: `rounds` rounds of every ruleset in order, each followed by the
analysis."""

from __future__ import annotations

from collections.abc import Sequence

from eqsat.egraph.encoding import ANALYSIS, program_prelude
from eqsat.egraph.program import graph_program
from eqsat.ir.graph import Graph


def egglog_program(
    graph: Graph,
    rules_text: str,
    rulesets: Sequence[str],
    facts: str,
    rounds: int,
    extra_facts: str = "",
) -> str:
    """The whole program; `facts` are the hardware's (rules.predicates.hardware_facts),
    `extra_facts` what a pass adds once the model is in (quantization seeds)."""
    model, names = graph_program(graph)
    runs = " ".join(f"(run {r})" for r in rulesets)
    analysis = f"(saturate (run {ANALYSIS}))"
    sections = [
        ("sorts, constructors and the shape analysis", program_prelude()),
        ("the rules", rules_text),
        ("what the rules may read about the hardware", facts),
        (f"the model '{graph.name}': one term per live node", model),
    ]
    if extra_facts:
        sections.append(("facts added once the model is in", extra_facts))
    schedule = f"(run-schedule {analysis} (repeat {rounds} (seq {runs} {analysis})))\n"
    extracts = "".join(f"(extract {names[i]})  ; output {name}\n" for name, i in graph.outputs)
    sections.append(
        (
            f"saturation: {rounds} rounds of every ruleset, the analysis after each "
            "(eqsat runs them under a back-off scheduler and its node, time and memory "
            "limits), then the outputs; extraction here is egglog's own (by term size), "
            "not the hardware cost model's",
            schedule + extracts,
        )
    )
    out = []
    for title, text in sections:
        out.append(f";; ---- {title}\n{text.rstrip()}\n")
    return "\n".join(out)
