"""Derivability in an e-graph: do rules already kept prove lhs == rhs?

One egglog e-graph holds the prelude (ops, shape analysis) and every kept rule, each
in a ruleset of its own so that a check can leave one rule out. A check pushes the
e-graph, adds both sides as a program over inputs of concrete shapes (each dim class
of the identity's partition a distinct size, so shape guards hold exactly when the
partition forces them), runs the chosen rulesets for a bounded number of rounds
(eqsat.egraph.saturate: node and time limits), asks egglog whether the two roots are
one e-class, and pops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from egglog.bindings import EGraph

from eqsat.config import Limits
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import run_commands, saturate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.rules import load_rules_text
from eqsat.synth.fingerprint import class_sizes
from eqsat.synth.shapes import FIXED_ATTRS, Partition, var_shape
from eqsat.synth.terms import Term, variables

# A derivation the kept rules find in a few rounds. The node budget is shared among
# the rules by the back-off scheduler (eqsat.egraph.saturate), so it grows with the
# number of kept rules: with too small a share associativity and commutativity are
# banned at their first matches. Rules never merge classes of different shapes
# (generality.py), so growth is bounded by the rounds.
ROUNDS = 6  # for one identity alone
BATCH_ROUNDS = 4  # for a batch (a filter: what it misses is checked alone)
NODE_LIMIT = 20_000  # e-nodes for one identity in the e-graph ...
NODE_CAP = 60_000  # ... and at most for a whole batch
PER_RULE = 100  # at least this many e-nodes of budget per kept rule direction
CHECK_SECONDS = 5.0


Identity = tuple[Term, Term, Mapping[str, int], Partition]  # lhs, rhs, ranks, partition


def instances_program(identities: Sequence[Identity]) -> tuple[str, list[tuple[str, str]]]:
    """egglog `let`s for both sides of each identity, on f32 inputs of its own (named
    `<var>_<index>`, so that identities share no e-class); returns the text and the
    (lhs, rhs) globals of each."""
    f32 = DType.parse("f32")
    builder = GraphBuilder("synth", cse=True)
    roots = []
    for i, (lhs, rhs, ranks, partition) in enumerate(identities):
        names = variables(lhs) + [v for v in variables(rhs) if v not in variables(lhs)]
        symbols = [d for v in names for d in var_shape(v, ranks[v])]
        sizes = class_sizes(partition, symbols, 0)
        leaves = {}
        for v in names:
            shape = tuple(sizes[partition.find(d)] for d in var_shape(v, ranks[v]))
            leaves[v] = builder.leaf("input", f"{v}_{i}", TensorType(f32, shape))

        def build(t: Term, leaves=leaves) -> int:
            if isinstance(t, str):
                return leaves[t]
            return builder.add(t[0], [build(c) for c in t[1:]], FIXED_ATTRS.get(t[0], {}))

        roots.append((build(lhs), build(rhs)))
        builder.output(f"lhs_{i}", roots[-1][0])
        builder.output(f"rhs_{i}", roots[-1][1])
    text, globals_ = graph_program(builder.graph)
    return text, [(globals_[left], globals_[right]) for left, right in roots]


class _AllMerged(Exception):
    """Raised from the saturation's progress callback to end a run early."""


class Prover:
    """Kept rules in an e-graph, and the bounded test of whether they derive an identity."""

    def __init__(self, rounds: int = ROUNDS, node_limit: int = NODE_LIMIT):
        self.rounds = rounds
        self.node_limit = node_limit
        self.egraph = EGraph()
        run_commands(self.egraph, program_prelude())
        self.rulesets: list[str] = []
        self.rule_names: dict[str, tuple[str, ...]] = {}

    def add(self, ruleset: str, rule_text: str) -> None:
        """Load one rule (rule-language text) into its own ruleset."""
        rules = load_rules_text(f"ruleset {ruleset}\n{rule_text}", f"<{ruleset}>")
        run_commands(self.egraph, rules.compile())
        self.rulesets.append(ruleset)
        self.rule_names[ruleset] = tuple(n for r in rules for n in r.egglog_names)

    def proves(
        self,
        lhs: Term,
        rhs: Term,
        ranks: Mapping[str, int],
        partition: Partition,
        without: Iterable[str] = (),
    ) -> bool:
        """Whether the kept rules (but those in `without`) merge lhs and rhs."""
        return self.prove_all([(lhs, rhs, ranks, partition)], without)[0]

    def prove_all(self, identities: Sequence[Identity], without: Iterable[str] = ()) -> list[bool]:
        """For each identity, whether the kept rules (but those in `without`) merge its
        sides, all in one e-graph (the node limit scales with the number of identities)."""
        if not identities:
            return []
        text, roots = instances_program(identities)
        skip = set(without)
        chosen = [r for r in self.rulesets if r not in skip]
        names = {n for r in chosen for n in self.rule_names[r]}
        merged = [left == right for left, right in roots]

        def all_merged(*_: object) -> None:
            """After each round: stop as soon as every identity is proved."""
            for i, (left, right) in enumerate(roots):
                merged[i] = merged[i] or self._same(left, right)
            if all(merged):
                raise _AllMerged

        run_commands(self.egraph, "(push)")
        try:
            run_commands(self.egraph, text)
            if chosen and not all(merged):
                limits = Limits(
                    iter_limit=self.rounds
                    if len(identities) == 1
                    else min(self.rounds, BATCH_ROUNDS),
                    node_limit=max(
                        min(self.node_limit * len(identities), NODE_CAP), PER_RULE * len(names)
                    ),
                    time_limit=CHECK_SECONDS,
                )
                try:
                    saturate(self.egraph, chosen, names, limits, progress=all_merged)
                except _AllMerged:
                    return merged
            all_merged()
        except _AllMerged:
            pass
        finally:
            run_commands(self.egraph, "(pop)")
        return merged

    def _same(self, left: str, right: str) -> bool:
        try:
            run_commands(self.egraph, f"(check (= {left} {right}))")
        except Exception:  # egglog raises EggSmolError when the check fails
            return False
        return True
