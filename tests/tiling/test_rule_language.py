"""The rule language's additions for tiling: predicate guards, min/max, and patterns
that leave an implementation choice (`tile`) out matching the untiled op only."""

from __future__ import annotations

import pytest

from eqsat.rules import compile_rules, load_rules_text
from eqsat.rules.errors import GuardTypeError, RuleSyntaxError


def compiled(text: str) -> str:
    return compile_rules(load_rules_text(text, "t.rules"))


def test_predicate_binds_and_min_clamps():
    text = compiled(
        "ruleset t\n"
        "# tile it\n"
        "tile: r = matmul(a, b) => matmul(a, b, tile=[min(TM, dim(r, -2)), TN, max(TK, 1)])\n"
        "      if tile_candidate(dtype(a), TM, TN, TK)\n"
    )
    assert "(TileCandidate t_1 v_TM v_TN v_TK)" in text
    assert "(= v_r (Matmul v_a v_b (INil)))" in text  # the untiled matmul only
    assert "(ICons (min v_TM t_3) (ICons v_TN (ICons (max v_TK 1) (INil))))" in text


def test_an_explicit_tile_pattern_matches_any_tile():
    text = compiled("ruleset t\n# any\nr: matmul(a, b, tile=T) => matmul(a, b)\n")
    assert "(Matmul v_a v_b v_T)" in text
    assert "(Matmul v_a v_b (INil))" in text


@pytest.mark.parametrize(
    "guard, error, words",
    [
        ("tile_candidates(dtype(a), TM, TN, TK)", GuardTypeError, "unknown predicate"),
        ("tile_candidate(dtype(a), TM, TN)", GuardTypeError, "write tile_candidate(D, TM"),
        ("tile_candidate(1, TM, TN, TK)", GuardTypeError, "argument D"),
        ("rank(a) + 1", RuleSyntaxError, "a guard compares two expressions"),
    ],
)
def test_predicate_mistakes_are_located(guard, error, words):
    src = f"ruleset t\n# doc\nr: matmul(a, b) => matmul(a, b) if {guard}\n"
    with pytest.raises(error) as err:
        compiled(src)
    assert words in str(err.value)
    assert "t.rules:3:" in str(err.value)


def test_min_needs_two_numbers_of_one_kind():
    with pytest.raises(GuardTypeError, match="min"):
        compiled("ruleset t\n# doc\nr: matmul(a, b) => matmul(a, b, tile=[min(1, 2.0), 1, 1])\n")
