"""Equality saturation with a schedule, limits and a report.

The schedule is: the `analysis` ruleset (shapes and dtypes) to saturation, then
rounds of one iteration of each optimisation ruleset, each round followed by the
analysis again so that guards see the shapes of new terms. egglog has no node or
time limit inside a run, so rounds are run one at a time and the limits are checked
between them; within a round a back-off scheduler skips any rule whose matches
exceed the remaining node budget, which bounds how far one round can overshoot.
The time and memory limits are the whole optimization's (eqsat.budget): a round is
not started when it and the extraction after it are predicted to overrun the time,
and the node budget is capped by what the memory left can hold and extract.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from egglog.bindings import EGraph

from eqsat.budget import Budget, default_memory_limit
from eqsat.config import Limits
from eqsat.egraph.encoding import ANALYSIS, op_of_constructor
from eqsat.summary import human_bytes

SATURATED = "saturated"
ITERATION_LIMIT = "iteration_limit"
NODE_LIMIT = "node_limit"
TIME_LIMIT = "time_limit"
MEMORY_LIMIT = "memory_limit"
RULES_SKIPPED = "rules_skipped"  # the graph stopped growing only because rules were skipped


@dataclass(frozen=True)
class Iteration:
    nodes: int  # Op e-nodes after the round
    seconds: float
    matches: int


@dataclass
class SaturationReport:
    stop_reason: str = SATURATED
    iterations: list[Iteration] = field(default_factory=list)
    initial_nodes: int = 0
    rules_fired: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    skipped_rules: tuple[str, ...] = ()  # skipped by the scheduler in the last round
    node_limit: int = 0  # the limit in force when saturation stopped
    memory_limit: int = 0
    # The last round's per-rule match limit (the e-nodes left under the cap, shared
    # among the rules that matched) and the matches each skipped rule had in its search
    rule_share: int = 0
    skipped_matches: dict[str, int] = field(default_factory=dict)

    def describe_stop(self) -> str:
        """Why saturation stopped, in words a person reads."""
        if self.stop_reason == NODE_LIMIT:
            return f"node limit reached at {self.nodes:,} e-nodes (limit {self.node_limit:,})"
        if self.stop_reason == MEMORY_LIMIT:
            return (
                f"memory limit: stopped at {self.nodes:,} e-nodes so that extraction fits "
                f"in {human_bytes(self.memory_limit)} (--memory-limit)"
            )
        if self.stop_reason == TIME_LIMIT:
            return "time limit: the next round and extraction would not fit (--time-limit)"
        if self.stop_reason == RULES_SKIPPED:
            return self._describe_skipped()
        if self.stop_reason == ITERATION_LIMIT:
            return f"iteration limit ({len(self.iterations)} rounds)"
        return self.stop_reason.replace("_", " ")

    @property
    def nodes(self) -> int:
        return self.iterations[-1].nodes if self.iterations else self.initial_nodes

    def _describe_skipped(self) -> str:
        """RULES_SKIPPED in numbers: the node limit was not reached; what stopped the run
        is the scheduler's per-rule match limit, which these rules' matches exceed."""
        shown = self.skipped_rules[:4]
        names = ", ".join(
            f"{r} {self.skipped_matches[r]:,}" if r in self.skipped_matches else r for r in shown
        ) + (", ..." if len(self.skipped_rules) > 4 else "")
        if not self.rule_share:  # a merged report (block-wise) has no round details
            return (
                f"rules skipped by the scheduler ({names}): their matches exceeded the "
                "per-rule share of the node budget and nothing else grew the e-graph"
            )
        return (
            f"rules skipped by the scheduler at {self.nodes:,} e-nodes, below the node "
            f"limit {self.node_limit:,}: each round a rule may add at most {self.rule_share:,} "
            f"matches (the e-nodes left under the limit shared among the matching rules), "
            f"these rules had more ({names} matches) and nothing else grew the e-graph"
        )


# One top-level form of an egglog program: strings and comments are skipped whole so
# that their parentheses do not count.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n]*|[()]')


def top_level_forms(text: str) -> list[str]:
    """`text` cut after each top-level form (comments and blanks go with the form they
    precede; anything unbalanced at the end is kept, for egglog to report)."""
    forms: list[str] = []
    depth = start = 0
    for token in _TOKEN.finditer(text):
        if token.group() == "(":
            depth += 1
        elif token.group() == ")":
            depth -= 1
            if depth == 0:
                forms.append(text[start : token.end()])
                start = token.end()
    if text[start:].strip():
        forms.append(text[start:])
    return forms


def run_commands(egraph: EGraph, text: str) -> list:
    """Parse and run an egglog program form by form. egglog 13.2 gives every parsed
    node a span holding a copy of the whole text it was parsed from, so parsing a
    program at once costs memory and time quadratic in its length (the prelude's 60 kB:
    330 MB and 0.5 s; the bundled rules' 100 kB held another ~0.9 GB); one form at a
    time each copy is that form's text (2 MB, a few milliseconds)."""
    commands = [c for form in top_level_forms(text) for c in egraph.parse_program(form)]
    return egraph.run_program(*commands)


def _sizes(egraph: EGraph) -> dict[str, int]:
    out = run_commands(egraph, "(print-size)")[-1]
    return dict(out.sizes)


def op_node_count(sizes: dict[str, int]) -> int:
    ctors = op_of_constructor()
    return sum(n for name, n in sizes.items() if name in ctors)


def saturate_analysis(egraph: EGraph) -> None:
    run_commands(egraph, f"(run-schedule (saturate (run {ANALYSIS})))")


def saturate(
    egraph: EGraph,
    rulesets: list[str],
    rule_names: set[str],
    limits: Limits,
    progress=None,
    budget: Budget | None = None,
) -> SaturationReport:
    """Grow `egraph` with `rulesets` until saturated or a limit is hit. `budget`: the
    time and memory the whole optimization has (default: from `limits`, from now)."""
    start = time.perf_counter()
    if budget is None:
        budget = Budget(limits.time_limit, limits.memory_limit or default_memory_limit())
    saturate_analysis(egraph)
    sizes = _sizes(egraph)
    report = SaturationReport(
        initial_nodes=op_node_count(sizes),
        node_limit=limits.node_limit,
        memory_limit=budget.memory,
    )
    if not rulesets:
        report.seconds = time.perf_counter() - start
        return report
    nodes = report.initial_nodes
    active = len(rule_names)
    while True:
        if len(report.iterations) >= limits.iter_limit:
            report.stop_reason = ITERATION_LIMIT
            break
        if nodes >= limits.node_limit:
            report.stop_reason = NODE_LIMIT
            break
        cap = min(limits.node_limit, budget.node_cap(nodes))
        if nodes >= cap:
            report.stop_reason = MEMORY_LIMIT
            break
        round_seconds, round_nodes = _predicted_round(report)
        after = min(max(round_nodes, nodes), cap)
        if round_seconds + budget.extraction_seconds(after) >= budget.remaining():
            report.stop_reason = TIME_LIMIT
            break
        t0 = time.perf_counter()
        # Share the remaining node budget among the rules that are matching, so that
        # one round cannot overshoot the node limit by more than a few RHS nodes per match.
        share = max((cap - nodes) // max(active, 1), 1)
        runs = " ".join(f"(run-with bo {r})" for r in rulesets)
        out = run_commands(
            egraph,
            f"(run-schedule (let-scheduler bo (back-off :match-limit {share} :ban-length 1)) "
            f"(seq {runs}))",
        )
        matches: Counter[str] = Counter()
        searched: set[str] = set()
        found: Counter[str] = Counter()  # matches each rule's search found
        for result in out:
            matches.update(result.report.num_matches_per_rule)
            for it in result.report.iterations:
                for rule, reports in it.rule_set_report.rule_reports.items():
                    found[rule] += sum(r.num_matches for r in reports)
                    if any(r.num_matches for r in reports):
                        searched.add(rule)
        # The back-off scheduler searches a rule, finds more matches than the budget
        # and skips it: such a rule shows up as matched in the search but not applied.
        banned = searched - set(matches)
        report.rule_share = share
        report.skipped_matches = {r: found[r] for r in banned}
        active = len(searched)
        saturate_analysis(egraph)
        new_sizes = _sizes(egraph)
        nodes = op_node_count(new_sizes)
        fired = {k: v for k, v in matches.items() if k in rule_names}
        report.rules_fired.update({k: v for k, v in fired.items() if v})
        report.iterations.append(Iteration(nodes, time.perf_counter() - t0, sum(fired.values())))
        if progress is not None:
            progress(len(report.iterations), nodes, time.perf_counter() - start)
        if new_sizes == sizes:
            if not banned:
                report.stop_reason = SATURATED
            elif cap < limits.node_limit:  # the rules' share was cut by the memory left
                report.stop_reason = MEMORY_LIMIT
            else:
                report.stop_reason = RULES_SKIPPED
            report.skipped_rules = tuple(sorted(banned))
            break
        sizes = new_sizes
    report.seconds = time.perf_counter() - start
    return report


def _predicted_round(report: SaturationReport) -> tuple[float, int]:
    """Seconds the next round will take and e-nodes it will leave, if the e-graph
    keeps growing as it did in the last round.

    egglog cannot stop inside a round, so a round predicted to overrun the time limit
    is not started: the last round's time and size times its growth factor.
    """
    if not report.iterations:
        return 0.0, report.initial_nodes
    last = report.iterations[-1]
    before = report.iterations[-2].nodes if len(report.iterations) > 1 else report.initial_nodes
    growth = max(last.nodes / max(before, 1), 1.0)
    return last.seconds * growth, int(last.nodes * growth)
