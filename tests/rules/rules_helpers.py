"""Run compiled rules on a small model in egglog and decode the result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from egglog import bindings

from eqsat.egraph.decode import DecodedEGraph, ENode, decode
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import run_commands
from eqsat.rules import RuleCollection, load_rules
from frontend import check_model, parse_model

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "sample.rules"


def sample() -> RuleCollection:
    return load_rules([SAMPLE])


@dataclass
class Result:
    egraph: DecodedEGraph
    roots: dict[str, str]  # model value name -> e-class id
    matches: dict[str, int]  # egglog rule name -> matches in the optimisation run

    def nodes(self, name: str, op: str | None = None) -> list[ENode]:
        """The e-nodes in the class of model value `name` (optionally of one op)."""
        found = self.egraph.classes[self.roots[name]]
        return [n for n in found if op is None or n.op == op]

    def class_nodes(self, eclass: str, op: str | None = None) -> list[ENode]:
        return [n for n in self.egraph.classes[eclass] if op is None or n.op == op]

    def same(self, a: str, b: str) -> bool:
        return self.roots[a] == self.roots[b]


def run_rules(
    model: str,
    rules: RuleCollection,
    ruleset: str,
    include_approx: bool = False,
    rounds: int = 1,
) -> Result:
    """Encode `model`, saturate the analysis, then `rounds` times: run `ruleset` once
    and saturate the analysis again. `matches` are those of the last round."""
    graph = check_model(parse_model(model))
    text, globals_ = graph_program(graph)
    egraph = bindings.EGraph()
    for program in (program_prelude(), rules.compile(include_approx), text):
        run_commands(egraph, program)
    saturate = "(run-schedule (saturate (run analysis)))"
    run_commands(egraph, saturate)
    for _ in range(rounds):
        [report] = run_commands(egraph, f"(run {ruleset} 1)")
        matches = dict(report.report.num_matches_per_rule)
        run_commands(egraph, saturate)
    span = bindings.RustSpan("test", 0, 0)
    data = json.loads(
        egraph.serialize([bindings.Var(span, g) for g in globals_.values()]).to_json()
    )
    # root_eclasses follows the order of the roots asked for
    roots = {
        graph.nodes[i].name: cid for i, cid in zip(globals_, data["root_eclasses"], strict=True)
    }
    return Result(decode(data), roots, matches)
