"""Symbolic shapes, fingerprints and candidate orientation of the rule synthesizer."""

from __future__ import annotations

import pytest

from eqsat.synth.emit import SynthRule, domain_guards
from eqsat.synth.fingerprint import Fingerprinter, floats_match
from eqsat.synth.select import orient
from eqsat.synth.shapes import Partition, SynthError, signature
from eqsat.synth.terms import identity_text, rule_syntax, size, typing

RANKS = {"a": 2, "b": 2, "c": 2, "s": 0}


def test_matmul_unifies_inner_dims_and_transpose_swaps():
    shape, p = typing(("matmul", "a", ("transpose", "b")), RANKS)
    assert shape == ("a.0", "b.0")
    assert p.find("a.1") == p.find("b.1")
    assert p.find("a.0") != p.find("b.0")


def test_elementwise_unifies_matrices_and_broadcasts_scalars():
    shape, p = typing(("add", "a", "b"), RANKS)
    assert p.find("a.0") == p.find("b.0") and p.find("a.1") == p.find("b.1")
    shape, p = typing(("mul", "s", "a"), RANKS)
    assert shape == ("a.0", "a.1") and p == Partition()


def test_transpose_and_matmul_of_a_scalar_do_not_type():
    assert typing(("transpose", "s"), RANKS) is None
    assert typing(("matmul", "a", "s"), RANKS) is None


def test_add_with_own_transpose_forces_a_square():
    _, p = typing(("add", "a", ("transpose", "a")), RANKS)
    assert p.find("a.0") == p.find("a.1")


def _key(fp, t):
    shape, p = typing(t, RANKS)
    return fp.key(t, shape, p)


def test_fingerprints_separate_transpose_from_identity_and_join_commuted_sums():
    fp = Fingerprinter(RANKS, seed=0)
    assert _key(fp, ("transpose", ("transpose", "a")))[0] == _key(fp, "a")[0]
    assert _key(fp, ("transpose", "a"))[0] != _key(fp, "a")[0]
    assert _key(fp, ("add", "a", "b"))[0] == _key(fp, ("add", "b", "a"))[0]
    assert _key(fp, ("sub", "a", "b"))[0] != _key(fp, ("sub", "b", "a"))[0]


def test_float_fingerprints_agree_within_tolerance_on_reassociation():
    fp = Fingerprinter(RANKS, seed=1)
    left = ("matmul", ("matmul", "a", "b"), "c")
    right = ("matmul", "a", ("matmul", "b", "c"))
    kl, kr = _key(fp, left), _key(fp, right)
    assert kl[0] == kr[0]  # integers: exact
    assert floats_match(kl[1], kr[1])
    assert not floats_match(kl[1], _key(fp, ("matmul", ("matmul", "a", "c"), "b"))[1])


def test_unknown_and_unfingerprintable_ops_are_errors():
    with pytest.raises(SynthError, match=r"unknown op 'ad'.*'add'"):
        signature("ad")
    with pytest.raises(SynthError, match="cannot be fingerprinted"):
        signature("softmax")


def test_orientation_puts_the_larger_side_left_and_refuses_unbound_variables():
    big, small = ("neg", ("neg", "a")), "a"
    assert orient(small, big) == (big, small)
    # the right-hand side may lose a variable, never gain one
    assert orient("a", ("sub", ("add", "a", "b"), "b")) == (("sub", ("add", "a", "b"), "b"), "a")
    assert orient(("sub", "a", "a"), ("sub", "b", "b")) is None


def test_rule_text_guards_and_identity():
    lhs = ("transpose", ("matmul", "a", "b"))
    rhs = ("matmul", ("transpose", "b"), ("transpose", "a"))
    _, p = typing(lhs, RANKS)
    rule = SynthRule(lhs, rhs, (("a", 2), ("b", 2)), p)
    assert rule.bidirectional and size(lhs) == 2 and rule.size == 3
    text = rule.text("syn-1-matmul-transpose", guarded=True)
    assert text.splitlines()[0] == "# (a @ b)^T = b^T @ a^T"
    assert "rank(a) == 2, rank(b) == 2, dim(a, 1) == dim(b, 0)" in text
    assert rule_syntax(lhs) == "transpose(matmul(a, b), perm=[1, 0])"
    assert identity_text(("neg", ("mul", "a", "b"))) == "-(a * b)"


def test_guards_say_shape_equality_once():
    _, p = typing(("add", ("add", "a", "b"), "c"), RANKS)
    guards = domain_guards(["a", "b", "c"], RANKS, p)
    assert guards[3:] == ["shape(a) == shape(b)", "shape(a) == shape(c)"]


def test_unguarded_form_is_tried_only_where_types_agree_on_every_probed_shape():
    from eqsat.synth.generality import type_preserving

    assert type_preserving(("add", "a", "b"), ("add", "b", "a"))
    assert type_preserving(
        ("matmul", ("matmul", "a", "b"), "c"), ("matmul", "a", ("matmul", "b", "c"))
    )
    # a wider scalar-role operand widens the left side only
    assert not type_preserving(
        ("sub", ("sub", "s", "a"), ("add", "b", "s")), ("neg", ("add", "a", "b"))
    )
    # transpose of a broadcast vector does not type
    lhs = ("transpose", ("add", "a", "b"))
    assert not type_preserving(lhs, ("add", ("transpose", "a"), ("transpose", "b")))


def test_identities_that_cancel_in_floats_are_screened_out():
    from eqsat.synth.stability import float_stable

    def stable(lhs, rhs):
        _, p = typing(lhs, RANKS)
        _, p = typing(rhs, RANKS, p)
        return float_stable(lhs, rhs, RANKS, p, both_ways=True)

    # true over the reals; a large `a` cancels in a - (a + c) and `b` magnifies the rest
    assert not stable(
        ("sub", ("sub", "a", "a"), ("mul", "b", "c")), ("mul", "b", ("sub", "a", ("add", "a", "c")))
    )
    assert stable(("mul", ("mul", "a", "b"), "c"), ("mul", "a", ("mul", "b", "c")))
    assert stable(("matmul", ("matmul", "a", "b"), "c"), ("matmul", "a", ("matmul", "b", "c")))
