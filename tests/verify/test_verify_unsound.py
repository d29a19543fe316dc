"""Negative tests (egg's style): every deliberately unsound rule of
tests/data/unsound.rules is rejected with a counterexample, including rules that hold
only for non-negative inputs; and the CLI reports each one and exits 1."""

from __future__ import annotations

import pytest

from eqsat.cli import main
from eqsat.rules import load_rules
from eqsat.verify.check import FAILED, check_direction
from eqsat.verify.report import format_counterexample
from eqsat.verify.rules import select
from tests.conftest import ROOT
from tests.strategies import scaled

UNSOUND = ROOT / "tests" / "data" / "unsound.rules"
DIRECTIONS = select(load_rules(UNSOUND))


def test_the_file_has_the_mistakes_the_issue_lists():
    names = {d.name for d in DIRECTIONS}
    assert names >= {
        "sub-comm",
        "add-zero-bcast",
        "matmul-transpose-noswap",
        "transpose-softmax-axis",
        "matmul-relu-bias",
        "relu-add-order",
        "sqrt-square",
        "relu-drop",
    }


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_unsound_rule_is_rejected_with_a_counterexample(direction):
    result = check_direction(direction, scaled(100), seed=11)
    assert result.status == FAILED, f"{direction.name} was not caught"
    cx = result.counterexample
    assert cx is not None and cx.reason
    text = format_counterexample(result, [str(UNSOUND)])
    assert "instance (lhs_* is the left-hand side" in text
    assert f"--rule {direction.name} --seed 11" in text
    if cx.outputs:  # a value counterexample prints the inputs and both results in full
        assert "input " in text and "left-hand side" in text and "right-hand side" in text


def test_non_negative_only_rules_fail_on_a_negative_input():
    for name in ("sqrt-square", "relu-drop"):
        (direction,) = select(load_rules(UNSOUND), [name])
        cx = check_direction(direction, scaled(100), seed=3).counterexample
        assert cx is not None
        (x,) = cx.inputs.values()
        assert (x < 0).any()


def test_shrunk_counterexample_is_small():
    (direction,) = select(load_rules(UNSOUND), ["sub-comm"])
    cx = check_direction(direction, scaled(100), seed=5).counterexample
    assert cx is not None
    assert all(v.size <= 2 for v in cx.inputs.values())


def test_cli_reports_every_unsound_rule_and_exits_1(capsys):
    code = main(["verify-rules", str(UNSOUND), "--examples", "60", "--seed", "2", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 1
    for d in DIRECTIONS:
        assert f"FAIL  {d.name}" in out
    assert "seed 2" in out and "0 passed, 8 failed" in out


def test_cli_runs_only_the_selected_rule(capsys):
    code = main(["verify-rules", str(UNSOUND), "--rule", "relu-drop", "--examples", "20"])
    out = capsys.readouterr().out
    assert code == 1 and "relu-drop" in out and "sub-comm" not in out


def test_cli_unknown_rule_is_a_user_error(capsys):
    assert main(["verify-rules", str(UNSOUND), "--rule", "nope"]) == 1
    assert "no rule named nope" in capsys.readouterr().err
