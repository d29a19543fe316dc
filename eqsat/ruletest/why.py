"""`eqsat rules why A B`: do the rules prove two programs equal, and how.

Both programs enter one e-graph (leaves with one name, kind and type are one leaf);
saturation with the rules decides it: the outputs are equal when egglog `check`s them
in one e-class. egglog 13.2's proof facility is not usable from its Python bindings
(`prove` panics unless the e-graph was built in its proof mode), so the chain is
reconstructed:

1. a minimal set of rules that still proves it, by deletion: drop each rule that
   fired in turn and keep it out when the rest still prove the equality;
2. a replay with that set, one rule at a time and one iteration per application,
   recording after each application that matched the term of each side's e-class
   nearest to the other side (eqsat.ruletest.terms), until the sides meet.

Every rule is loaded once, each into a ruleset of its own, and each trial runs
between egglog `push` and `pop`, so a trial costs its saturation only.

When the rules do not prove it, each side's e-class after saturation is searched for
the term nearest to the other side, with how many of the other side's nodes it
reproduces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from egglog.bindings import EGraph as EggGraph

from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.egraph.decode import decode
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.extraction import locate, serialize
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import run_commands, saturate, saturate_analysis
from eqsat.ir.graph import Graph
from eqsat.rules.compiler import compile_rule
from eqsat.rules.library import Rule, RuleCollection
from eqsat.rules.predicates import hardware_facts
from eqsat.ruletest.egraph import same_class
from eqsat.ruletest.terms import Term, TermFinder, graph_term
from hwsim.hardware import Hardware


@dataclass
class Step:
    rule: Rule
    matches: int
    left: str | None  # the left side's term nearest the right, when it changed
    right: str | None


@dataclass
class Nearest:
    """One output pair after saturation: each side's term nearest to the other."""

    name: str
    left: Term
    left_score: int  # nodes of the right side's term the left term reproduces
    right: Term
    right_score: int
    left_target: Term  # the sides as written
    right_target: Term


@dataclass
class WhyResult:
    equal: list[bool]  # per output pair
    pairs: list[str]  # output names (of the left program)
    fired: dict[str, int]  # matches per egglog rule name (NAME, NAME-rev)
    fired_rules: int = 0  # rules (both directions counted once) that matched
    minimal: list[Rule] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    replay_met: bool = False  # the replay reached the equality
    chained: bool = False  # the minimal set and the replay were computed
    nearest: list[Nearest] = field(default_factory=list)

    @property
    def proved(self) -> bool:
        return all(self.equal)


class _Session:
    """One e-graph with the prelude, the hardware facts and every rule loaded, each
    rule in a ruleset of its own; programs come and go with push/pop."""

    def __init__(self, rules: RuleCollection, hw: Hardware, left: Graph, right: Graph):
        self.rules = list(rules)
        self.ruleset = {r.name: f"why-{k}" for k, r in enumerate(self.rules)}
        self.egraph = EggGraph()
        run_commands(self.egraph, program_prelude())
        text = [f"(ruleset {name})" for name in self.ruleset.values()]
        for r in self.rules:
            text += compile_rule(r.ast, self.ruleset[r.name], r.file, "")
        run_commands(self.egraph, "\n".join(text))
        run_commands(self.egraph, hardware_facts(hw))
        self.left, self.right = left, right
        left_text, self.left_names = _program(left, "$a")
        right_text, self.right_names = _program(right, "$b")
        self.program = left_text + right_text
        self.pairs = [
            (name, self.left_names[i], self.right_names[j])
            for (name, i), (_, j) in zip(left.outputs, right.outputs, strict=True)
        ]

    def trial(
        self, chosen: Sequence[Rule], limits: Limits, nearest: bool = False
    ) -> tuple[list[bool], dict[str, int], list[Nearest]]:
        """Saturate both programs with `chosen`: which pairs are equal, matches per
        rule and, if asked for and not all are equal, the nearest terms."""
        run_commands(self.egraph, "(push)")
        try:
            run_commands(self.egraph, self.program)
            names = {n for r in chosen for n in r.egglog_names}
            rulesets = [self.ruleset[r.name] for r in chosen]
            report = saturate(self.egraph, rulesets, names, limits)
            equal = [same_class(self.egraph, a, b) for _, a, b in self.pairs]
            near = self._nearest() if nearest and not all(equal) else []
            return equal, dict(report.rules_fired), near
        finally:
            run_commands(self.egraph, "(pop)")

    def _nearest(self) -> list[Nearest]:
        decoded = decode(serialize(self.egraph))
        finder = TermFinder(decoded)
        lclass, rclass = locate(self.left, decoded), locate(self.right, decoded)
        out = []
        for (name, i), (_, j) in zip(self.left.outputs, self.right.outputs, strict=True):
            lt, rt = graph_term(self.left, i), graph_term(self.right, j)
            left, ls = finder.nearest(lclass[i], rt)
            right, rs = finder.nearest(rclass[j], lt)
            out.append(Nearest(name, left, ls, right, rs, lt, rt))
        return out

    def replay(self, chosen: Sequence[Rule], limits: Limits) -> tuple[list[Step], bool]:
        """Apply `chosen` one rule and one iteration at a time, in rounds, and record
        how each side's nearest term to the other moves, until they meet."""
        steps: list[Step] = []
        run_commands(self.egraph, "(push)")
        try:
            run_commands(self.egraph, self.program)
            saturate_analysis(self.egraph)
            last = self._sides()
            for _ in range(limits.iter_limit):
                progressed = False
                for rule in chosen:
                    out = run_commands(self.egraph, f"(run {self.ruleset[rule.name]} 1)")
                    if not any(res.report.updated for res in out):
                        continue
                    progressed = True  # its seeds (lists a guard reads) count too
                    matches = sum(
                        v
                        for res in out
                        for k, v in res.report.num_matches_per_rule.items()
                        if k in rule.egglog_names
                    )
                    saturate_analysis(self.egraph)
                    now = self._sides()
                    if now == last:
                        continue
                    steps.append(
                        Step(
                            rule,
                            matches,
                            now[0] if now[0] != last[0] else None,
                            now[1] if now[1] != last[1] else None,
                        )
                    )
                    last = now
                    if all(same_class(self.egraph, a, b) for _, a, b in self.pairs):
                        return steps, True
                if not progressed:
                    break
            return steps, all(same_class(self.egraph, a, b) for _, a, b in self.pairs)
        finally:
            run_commands(self.egraph, "(pop)")

    def _sides(self) -> tuple[str, str]:
        """Each side's terms nearest to the other side, as text (all pairs)."""
        near = self._nearest()
        return (
            "; ".join(n.left.text() for n in near),
            "; ".join(n.right.text() for n in near),
        )


def _program(graph: Graph, prefix: str) -> tuple[str, dict[int, str]]:
    """egglog text adding `graph` with its globals renamed to `prefix`N."""
    text, names = graph_program(graph)
    text = re.sub(r"\$n(\d+)", lambda m: f"{prefix}{m.group(1)}", text)
    return text, {i: re.sub(r"^\$n", prefix, n) for i, n in names.items()}


def why(
    left: Graph,
    right: Graph,
    rules: RuleCollection,
    hw: Hardware,
    limits: Limits = DEFAULT_LIMITS,
    chain: bool = True,
) -> WhyResult:
    """Whether `rules` prove the outputs of `left` and `right` equal (pairwise, in
    order); if so (and `chain`) a minimal set of rules and the replay with it."""
    session = _Session(rules, hw, left, right)
    equal, fired, near = session.trial(session.rules, limits, nearest=True)
    result = WhyResult(equal, [name for name, _, _ in session.pairs], fired, nearest=near)
    if not result.proved:
        return result
    if not chain:
        return result
    result.chained = True
    by_name = {n: r for r in session.rules for n in r.egglog_names}
    needed = list(dict.fromkeys(by_name[n] for n in fired if n in by_name))
    needed.sort(key=lambda r: -sum(fired.get(n, 0) for n in r.egglog_names))
    result.fired_rules = len(needed)
    for rule in list(needed):
        rest = [r for r in needed if r is not rule]
        ok, _, _ = session.trial(rest, limits)
        if all(ok):
            needed = rest
    order = {r.name: k for k, r in enumerate(session.rules)}
    result.minimal = sorted(needed, key=lambda r: order[r.name])
    result.steps, result.replay_met = session.replay(result.minimal, limits)
    return result


def format_why(result: WhyResult, left_label: str, right_label: str) -> str:
    lines = []
    names = result.pairs
    for name, eq in zip(names, result.equal, strict=True):
        verdict = "equal" if eq else "NOT proved equal"
        lines.append(f"output {name}: {verdict}")
    if result.proved and not result.chained:
        lines.append(f"the rules prove {left_label} = {right_label}")
        lines.append(_fired_line(result.fired))
        return "\n".join(lines)
    if result.proved and not result.minimal:
        lines.append(f"{left_label} and {right_label} are the same term: no rule is needed")
        return "\n".join(lines)
    if result.proved:
        lines.append(
            f"the rules prove {left_label} = {right_label}; {len(result.minimal)} of the "
            f"{result.fired_rules} rules that fired suffice:"
        )
        for r in result.minimal:
            doc = f"  # {r.doc}" if r.doc else ""
            lines.append(f"  {r.name} ({r.location}){doc}")
        if result.steps:
            lines.append("chain (one rule at a time; each side's term nearest to the other):")
            for k, s in enumerate(result.steps, 1):
                lines.append(
                    f"  {k}. {s.rule.name} ({s.matches} match{'es' if s.matches != 1 else ''})"
                )
                if s.left is not None:
                    lines.append(f"       left:  {s.left}")
                if s.right is not None:
                    lines.append(f"       right: {s.right}")
        if not result.replay_met:
            lines.append(
                "  (the one-rule-at-a-time replay stopped before the sides met; the "
                "saturation above proves it)"
            )
        return "\n".join(lines)
    lines.append(
        f"the rules do not prove {left_label} = {right_label}; nearest terms after saturation:"
    )
    for n in result.nearest:
        lines.append(f"  output {n.name}:")
        lines.append(f"    left as written:  {n.left_target.text()}")
        lines.append(
            f"    left reaches:     {n.left.text()}  "
            f"({n.left_score} of the right's {n.right_target.size} nodes)"
        )
        lines.append(f"    right as written: {n.right_target.text()}")
        lines.append(
            f"    right reaches:    {n.right.text()}  "
            f"({n.right_score} of the left's {n.left_target.size} nodes)"
        )
    lines.append(_fired_line(result.fired))
    return "\n".join(lines)


def _fired_line(fired: dict[str, int]) -> str:
    top = sorted(((c, n) for n, c in fired.items() if c), reverse=True)
    if not top:
        return "no rule fired"
    more = f", and {len(top) - 8} more" if len(top) > 8 else ""
    return "rules that fired: " + ", ".join(f"{n} ({c})" for c, n in top[:8]) + more
