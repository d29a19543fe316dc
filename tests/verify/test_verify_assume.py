"""`assume` clauses: a rule states what it assumes of its tensors' values (true by
construction where it applies); verify-rules checks it exactly there and says so."""

from __future__ import annotations

import pytest

from eqsat.rules import GuardTypeError, RuleSyntaxError, load_rules_text
from eqsat.verify.check import FAILED, PASSED, check_direction
from eqsat.verify.report import result_line
from eqsat.verify.rules import select

SQRT_SQUARE = "# sqrt(x*x) = x for x >= 0\nsqrt-square: sqrt(mul(x, x)) => x"
BIAS = (
    "# acc*s + b = (acc + round(b/s))*s\n"
    "q-bias: add(mul(cast(acc, dtype=f32), s), b)"
    " => mul(cast(add(acc, cast(div(b, s), dtype=i32)), dtype=f32), s)"
    " if dtype(acc) == i32, rank(b) == rank(s), shape(b) == shape(s)"
)


def direction(text: str):
    [d] = select(load_rules_text("ruleset t\n" + text + "\n", "t.rules"))
    return d


def test_a_rule_sound_only_for_non_negative_inputs_passes_when_it_says_so() -> None:
    assert check_direction(direction(SQRT_SQUARE), 60, seed=3).status == FAILED
    result = check_direction(direction(SQRT_SQUARE + " assume x >= 0"), 60, seed=3)
    assert result.status == PASSED
    assert "assuming x >= 0" in result_line(result, 12)


def test_magnitude_assumption_bounds_a_rounding_error() -> None:
    """round(b/s) is off by up to s/2: within 1% only against a large accumulator."""
    loose = direction(BIAS + " assume s > 0 approx 0.01")
    assert check_direction(loose, 80, seed=5).status == FAILED
    tight = direction(BIAS + " assume s > 0, abs(acc) >= 64 approx 0.01")
    assert check_direction(tight, 80, seed=5).status == PASSED


def test_assumption_names_a_left_hand_side_tensor() -> None:
    with pytest.raises(GuardTypeError) as err:
        load_rules_text("ruleset t\n# x\nr: relu(x) => x assume y >= 0\n", "t.rules")
    assert (err.value.line, err.value.col) == (3, 24)


def test_assumption_is_a_bound_not_an_equation() -> None:
    with pytest.raises(RuleSyntaxError) as err:
        load_rules_text("ruleset t\n# x\nr: relu(x) => x assume x == 0\n", "t.rules")
    assert "bounds values" in str(err.value)
