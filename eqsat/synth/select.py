"""Choose the rules to keep from the candidates, smallest first (Ruler's choice loop).

A candidate is a class member paired with its class's representative, oriented so
that the right-hand side binds no variable the left does not (else it is not a
rewrite and is dropped), its variables renamed in order of appearance (renamings of
one identity are one candidate). For each candidate in order: if the rules kept so far
derive it in the e-graph it is dropped (a batch of candidates is tested in one
e-graph first; what the batch misses is tested alone, with the rules kept since);
else it is checked with verify-rules' property check, first without guards when both
sides keep one type on every probed shape (generality.py; a rule that holds for every
rank and broadcast is kept as general as it is) and then with the guards of its shape
domain, and kept if a form passes. A last pass drops, largest first, every kept rule
the others derive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from eqsat.rules import load_rules_text
from eqsat.synth.derive import Prover
from eqsat.synth.emit import RULESET, SynthRule, rule_name
from eqsat.synth.enumerate import TermClass
from eqsat.synth.generality import type_preserving
from eqsat.synth.shapes import Partition
from eqsat.synth.stability import float_stable
from eqsat.synth.terms import Term, rename, rule_syntax, size, typing, variables
from eqsat.verify.check import PASSED, check_direction
from eqsat.verify.instance import directions

# Hypothesis examples per direction while choosing: as many as `eqsat verify-rules`
# runs by default. Fewer let through identities that hold over the reals but lose
# digits in floats (a - (a + b*c) = b*(a - (a + c)) passed 30 and failed at 42).
VERIFY_EXAMPLES = 100
# Candidates tested for derivability in one e-graph.
WINDOW = 48


@dataclass
class Kept:
    name: str
    rule: SynthRule
    guarded: bool
    text: str
    ruleset: str


@dataclass
class Selection:
    kept: list[Kept] = field(default_factory=list)
    candidates: int = 0  # distinct candidate rules (after renaming)
    not_rewrites: int = 0  # each side has a variable the other lacks
    derivable: int = 0
    unsound: list[str] = field(default_factory=list)  # refuted by the float screen or verify-rules
    redundant: list[str] = field(default_factory=list)  # kept, then derived by later ones
    checked: int = 0  # candidates examined before the time budget ran out
    complete: bool = True
    seconds: float = 0.0


def canonical_names(
    lhs: Term, rhs: Term, ranks: Mapping[str, int], pool: Mapping[int, Sequence[str]]
) -> dict[str, str]:
    """Variables renamed in order of appearance: the first matrix becomes pool[2][0]..."""
    out: dict[str, str] = {}
    used = {r: 0 for r in pool}
    for v in variables(lhs) + variables(rhs):
        if v not in out:
            r = ranks[v]
            out[v] = pool[r][used[r]]
            used[r] += 1
    return out


def orient(a: Term, b: Term) -> tuple[Term, Term] | None:
    """(lhs, rhs) with vars(rhs) <= vars(lhs), the larger term on the left."""
    va, vb = set(variables(a)), set(variables(b))
    if va == vb:
        ka, kb = (size(a), rule_syntax(a)), (size(b), rule_syntax(b))
        return (a, b) if ka >= kb else (b, a)
    if vb < va:
        return a, b
    if va < vb:
        return b, a
    return None


def candidates(
    classes: Iterable[TermClass], ranks: Mapping[str, int]
) -> tuple[list[SynthRule], int]:
    """Distinct candidate rules in the order they are considered; and the count of
    pairs that are no rewrite."""
    pool: dict[int, list[str]] = {}
    for v, r in ranks.items():
        pool.setdefault(r, []).append(v)
    seen: set[tuple[str, str]] = set()
    out: list[SynthRule] = []
    not_rewrites = 0
    for c in classes:
        for m in c.members:
            pair = orient(c.rep, m)
            if pair is None:
                not_rewrites += 1
                continue
            names = canonical_names(*pair, ranks, pool)
            lhs, rhs = rename(pair[0], names), rename(pair[1], names)
            key = (rule_syntax(lhs), rule_syntax(rhs))
            if key in seen:
                continue
            seen.add(key)
            used = variables(lhs)
            rule_ranks = {names_to: ranks[v] for v, names_to in names.items()}
            typed = typing(lhs, rule_ranks)
            typed_r = typing(rhs, rule_ranks, typed[1]) if typed else None
            assert typed_r is not None, "a class member must type under its partition"
            partition = _restrict(c.partition.rename(names), used)
            partition = partition.merge(typed_r[1])
            out.append(SynthRule(lhs, rhs, tuple((v, rule_ranks[v]) for v in used), partition))
    out.sort(
        key=lambda r: (
            r.size,
            size(r.lhs) + size(r.rhs),
            -len(r.names),
            rule_syntax(r.lhs),
            rule_syntax(r.rhs),
        )
    )
    return out, not_rewrites


def _restrict(p: Partition, names: Sequence[str]) -> Partition:
    keep = set(names)
    classes = [frozenset(d for d in c if d.rpartition(".")[0] in keep) for c in p.classes]
    return Partition(frozenset(c for c in classes if len(c) > 1))


def passes(text: str, seed: int, examples: int = VERIFY_EXAMPLES) -> bool:
    """Every direction of the rule passes verify-rules' property check (eqsat.verify.check)
    on `examples` generated instances, at least one of which was found. Hypothesis only
    generates here: a failure ends the check at once instead of shrinking a
    counterexample nobody reads (shrinking was most of the time spent)."""
    rules = load_rules_text(f"ruleset {RULESET}\n{text}", "<candidate>")
    return all(
        check_direction(d, examples, seed, shrink=False).status == PASSED
        for r in rules
        for d in directions(r)
    )


def select(
    pending: Sequence[SynthRule],
    seed: int,
    prover: Prover | None = None,
    deadline: float | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> Selection:
    """Keep candidates the kept rules do not derive and verify-rules accepts."""
    start = time.perf_counter()
    prover = prover or Prover()
    out = Selection(candidates=len(pending))
    for first in range(0, len(pending), WINDOW):
        window = pending[first : first + WINDOW]
        derived = prover.prove_all([(c.lhs, c.rhs, dict(c.ranks), c.partition) for c in window])
        for i, (c, d) in enumerate(zip(window, derived, strict=True)):
            if deadline is not None and time.perf_counter() >= deadline:
                out.complete = False
                break
            # What the batch missed is checked alone (it then has the whole node budget
            # and the rules kept since the batch ran).
            if d or prover.proves(c.lhs, c.rhs, dict(c.ranks), c.partition):
                out.derivable += 1
            else:
                _try_keep(c, out, prover, seed)
            out.checked = first + i + 1
            if progress is not None:
                progress(out.checked, len(pending), len(out.kept))
        if not out.complete:
            break
    minimize(out, prover)
    out.seconds = time.perf_counter() - start
    return out


def _try_keep(cand: SynthRule, out: Selection, prover: Prover, seed: int) -> None:
    """Verify `cand` (unguarded, then guarded) and keep the first form that passes."""
    if not float_stable(cand.lhs, cand.rhs, dict(cand.ranks), cand.partition, cand.bidirectional):
        out.unsound.append(cand.identity())
        return
    name = rule_name(len(out.kept) + 1, cand)
    general = type_preserving(cand.lhs, cand.rhs) and (
        not cand.bidirectional or type_preserving(cand.rhs, cand.lhs)
    )
    for guarded in (False, True) if general else (True,):
        text = cand.text(name, guarded)
        if passes(text, seed):
            ruleset = f"{RULESET}-{len(out.kept) + 1}"
            prover.add(ruleset, text)
            out.kept.append(Kept(name, cand, guarded, text, ruleset))
            return
    out.unsound.append(cand.identity())


def minimize(selection: Selection, prover: Prover) -> None:
    """Drop, largest first, each kept rule that the remaining ones derive."""
    dropped: list[str] = []
    order = sorted(selection.kept, key=lambda k: (k.rule.size, size(k.rule.lhs) + size(k.rule.rhs)))
    for k in reversed(order):
        ranks = dict(k.rule.ranks)
        if prover.proves(k.rule.lhs, k.rule.rhs, ranks, k.rule.partition, [k.ruleset, *dropped]):
            dropped.append(k.ruleset)
            selection.redundant.append(k.rule.identity())
    selection.kept = [k for k in selection.kept if k.ruleset not in dropped]
