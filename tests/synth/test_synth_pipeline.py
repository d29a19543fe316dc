"""Rule synthesis end to end on a small configuration ({add, neg}, size 2, three
matrix variables): the file it writes is valid, sound and minimal, and it finds
add commutativity."""

from __future__ import annotations

import pytest

from eqsat.rules import load_rules_text
from eqsat.synth import SynthConfig, synthesize
from eqsat.synth.derive import Prover
from eqsat.synth.emit import SynthRule
from eqsat.synth.shapes import Partition
from eqsat.synth.terms import typing
from eqsat.verify.check import PASSED
from eqsat.verify.rules import verify_rules

RANKS = {"a": 2, "b": 2, "c": 2}


@pytest.fixture(scope="module")
def result():
    return synthesize(SynthConfig(("add", "neg"), size=2, scalars=(), seed=3))


@pytest.fixture(scope="module")
def written(result):
    return load_rules_text(result.text("test"), "<synth>")


def _prover(result, skip: str | None = None) -> Prover:
    prover = Prover()
    for name, k in result.rules:
        if name != skip:
            prover.add(f"t-{name}", k.rule.text(name, k.guarded))
    return prover


def test_counts_add_up(result):
    sel = result.selection
    assert result.enumeration.complete and sel.complete
    assert sel.checked == sel.candidates
    # every candidate is derived, refuted or kept (kept ones may be dropped again)
    assert sel.derivable + len(sel.unsound) + len(sel.kept) + len(sel.redundant) == sel.candidates
    assert len(result.rules) == len(sel.kept) >= 2


def test_every_written_rule_parses_is_documented_and_passes_verify_rules(result, written):
    assert len(written) == len(result.rules)
    assert all(r.doc for r in written)
    report = verify_rules(written, examples=60, seed=11, jobs=1)
    assert report.results and all(r.status == PASSED for r in report.results)


def test_header_says_how_the_file_was_made(result):
    text = result.text("eqsat rules synthesize --ops add,neg --size 2")
    head = text.split("ruleset")[0]
    assert "command: eqsat rules synthesize --ops add,neg --size 2" in head
    assert f"kept: {len(result.rules)}" in head
    assert f"candidates found: {result.found}" in head


def test_add_commutativity_is_found(result):
    lhs, rhs = ("add", "a", "b"), ("add", "b", "a")
    _, partition = typing(lhs, RANKS)
    assert _prover(result).proves(lhs, rhs, RANKS, partition)
    # and not by accident: without rules the e-graph does not merge them
    assert not Prover().proves(lhs, rhs, RANKS, partition)


def test_kept_rules_do_not_derive_each_other(result):
    for name, k in result.rules:
        rule: SynthRule = k.rule
        prover = _prover(result, skip=name)
        assert not prover.proves(rule.lhs, rule.rhs, dict(rule.ranks), rule.partition), name


def test_a_false_identity_is_not_derived(result):
    # a + b = a - b is not an identity; the kept rules must not prove it
    lhs, rhs = ("add", "a", ("neg", "b")), ("add", "a", "b")
    partition = Partition().union([("a.0", "b.0"), ("a.1", "b.1")])
    assert not _prover(result).proves(lhs, rhs, RANKS, partition)
