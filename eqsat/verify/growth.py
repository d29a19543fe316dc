"""Find rules that keep matching their own output (`eqsat rules check --growth`).

A sound rule can still make the optimizer loop or blow up: if what it builds is again
an instance of its own left-hand side with something new in it (a new constant, a new
attribute value, a deeper term), every round adds nodes and saturation never ends. An
e-graph absorbs a rule that merely rebuilds an existing term (add-comm twice gives the
same class), so growth, not matching, is the symptom. For each rule a small probe
model is one generated instance of its left-hand side (hypothesis `find`);
the rule alone runs on it for a few rounds, and a rule whose e-graph grows in every
round without saturating is reported with its node counts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from egglog.bindings import EGraph
from hypothesis import HealthCheck, Phase, Verbosity, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from eqsat.config import Limits
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import SATURATED, run_commands, saturate
from eqsat.ir.graph import Graph
from eqsat.rules import Rule, compile_rules
from eqsat.verify.generate import find_instance
from eqsat.verify.guards import Facts
from eqsat.verify.instance import Direction, directions

ROUNDS = 6
NODE_LIMIT = 20_000


@dataclass
class Growth:
    rule: Rule
    nodes: list[int] = field(default_factory=list)  # program e-nodes: start, then per round
    stop_reason: str = ""
    probe: Graph | None = None

    @property
    def self_feeding(self) -> bool:
        """Grew in every round and never saturated."""
        grew = all(b > a for a, b in zip(self.nodes, self.nodes[1:], strict=False))
        return self.stop_reason != SATURATED and len(self.nodes) > ROUNDS and grew


def probe(direction: Direction, facts: Facts | None, seed: int = 0) -> Graph | None:
    """An instance of the direction's left-hand side (the first hypothesis finds)."""

    @st.composite
    def instances(draw):
        return find_instance(draw, direction, facts)

    try:
        inst = find(
            instances(),
            lambda i: i is not None,
            settings=settings(
                max_examples=30,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.quiet,
                phases=(Phase.generate,),  # generation already prefers small instances
            ),
            random=random.Random(seed),
        )
    except NoSuchExample:
        return None
    graph = inst.builder.graph
    graph.outputs = [(f"root_{k}", n) for k, n in inst.roots.items()]
    return graph


def growth(rule: Rule, facts: Facts | None, hw_facts: str = "", rounds: int = ROUNDS) -> Growth:
    """Run `rule` alone on a probe of its (first) left-hand side for `rounds` rounds."""
    out = Growth(rule)
    out.probe = probe(directions(rule)[0], facts)
    if out.probe is None:
        return out
    egraph = EGraph()
    run_commands(egraph, program_prelude())
    run_commands(egraph, compile_rules([rule], include_approx=True))
    if hw_facts:
        run_commands(egraph, hw_facts)
    text, _ = graph_program(out.probe)
    run_commands(egraph, text)
    limits = Limits(iter_limit=rounds, node_limit=NODE_LIMIT, time_limit=20.0)
    report = saturate(egraph, [rule.egglog_ruleset], set(rule.egglog_names), limits)
    out.nodes = [report.initial_nodes] + [it.nodes for it in report.iterations]
    out.stop_reason = report.stop_reason
    return out


def hardware_facts_text(hw_name: str) -> str:
    """egglog commands for the predicate guards' rows (empty without predicates)."""
    try:
        from eqsat.rules.predicates import hardware_facts
    except ImportError:  # pragma: no cover - a tree without predicate guards
        return ""
    from hwsim.hardware import load_hardware

    return hardware_facts(load_hardware(hw_name))
