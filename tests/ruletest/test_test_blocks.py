"""Test blocks in the rule language: parsing, errors at FILE:LINE:COL of the rules
file (one test per error class), what the optimizer and `rules compile` see, and the
meaning of each expectation."""

from __future__ import annotations

import re
import shutil

import pytest

from eqsat.cli import main
from eqsat.rules import ast as rast
from eqsat.rules import load_rules
from eqsat.rules.errors import (
    ArityError,
    DuplicateTestError,
    ExpectationError,
    RuleSyntaxError,
    TestHardwareError,
    TestModelError,
    UnknownOpError,
)
from eqsat.rules.parser import parse_rules
from eqsat.ruletest import parse_files, run_files, validate_files
from tests.ruletest.helpers import RELU_RULES, ROOT, RULES

FRAGMENT = """  input x: f32[8, 16]
  y = relu(relu(x))
  output y
"""


def _rules_file(tmp_path, body: str, name: str = "demo.rules"):
    path = tmp_path / name
    path.write_text(RELU_RULES + "\ntest t {\n" + body + "}\n")
    return path


def test_a_test_block_parses_into_fragment_and_expectations() -> None:
    text = RELU_RULES + (
        "\n# doc\ntest relu-once {\n" + FRAGMENT + "  expect kernels == [relu]   # a comment }\n"
        "  expect kernels <= 1\n  expect no add\n  expect cost < 0.8 * input\n"
        "  expect equal(y, relu(x))\n  on hw=datacenter\n  with approx\n}\n"
    )
    parsed = parse_rules(text, "demo.rules")
    assert [r.name for r in parsed.rules] == ["relu-twice"]
    (test,) = parsed.tests
    assert test.name == "relu-once" and test.pos == rast.Pos(7, 6)
    assert [type(e).__name__ for e in test.expects] == [
        "ExpectKernels",
        "ExpectKernelCount",
        "ExpectNo",
        "ExpectCost",
        "ExpectEqual",
    ]
    kernels, count, no, cost, equal = test.expects
    assert kernels.kernels == (("relu", rast.Pos(11, 22)),)
    assert (count.op, count.count) == ("<=", 1)
    assert no.op == "add"
    assert cost.op == "<"
    assert (equal.left_text, equal.right_text) == ("y", "relu(x)")
    assert (test.hw, test.approx) == ("datacenter", True)
    from frontend import print_model

    assert print_model(test.model) == (
        "model relu_once {\n  input x: f32[8, 16]\n  y = relu(relu(x))\n  output y\n}\n"
    )


def test_compile_and_optimizer_ignore_test_blocks(tmp_path) -> None:
    """`rules compile` of a file is the same with and without its test blocks."""
    text = (RULES / "fusion.rules").read_text()
    assert "\ntest " in text
    bare = re.sub(r"\ntest [\w-]+ \{(?:[^}#]|#[^\n]*\n)*\}", "\n", text)
    assert "\ntest " not in bare and len(bare) < len(text)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "fusion.rules").write_text(text)
    (tmp_path / "b" / "fusion.rules").write_text(bare)
    with_tests = load_rules(tmp_path / "a" / "fusion.rules").compile(include_approx=True)
    without = load_rules(tmp_path / "b" / "fusion.rules").compile(include_approx=True)
    assert with_tests.replace(str(tmp_path / "a"), "") == without.replace(str(tmp_path / "b"), "")


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("body", "cls", "line", "col", "message"),
    [
        (  # an unknown op in the fragment
            "  input x: f32[8, 16]\n  y = relux(x)\n  output y\n  expect no add\n",
            UnknownOpError,
            8,
            7,
            "'relux' is not an op; did you mean 'relu'?",
        ),
        (  # an op given the wrong number of operands
            "  input x: f32[8, 16]\n  y = relu(x, x)\n  output y\n  expect no add\n",
            ArityError,
            8,
            7,
            "takes 1 operand",
        ),
        (  # a fragment that does not type-check
            "  input x: f32[8, 16]\n  y = add(x, z)\n  output y\n  expect no add\n",
            TestModelError,
            8,
            14,
            "'z' is not defined",
        ),
        (  # an expectation of no known form
            FRAGMENT + "  expect flops < 3\n",
            ExpectationError,
            10,
            10,
            "an expectation is",
        ),
        (  # a kernel that is no op
            FRAGMENT + "  expect kernels == [relu, gelux]\n",
            ExpectationError,
            10,
            28,
            "unknown op 'gelux'; did you mean 'gelu'?",
        ),
        (  # a term of equal(...) over a name the fragment lacks
            FRAGMENT + "  expect equal(y, relu(q))\n",
            ExpectationError,
            10,
            10,
            "'q' is not defined",
        ),
        (  # a test without an expectation passes whatever the rules do
            FRAGMENT,
            ExpectationError,
            6,
            6,
            "has no `expect` line",
        ),
        (  # a hardware file that is not there
            FRAGMENT + "  on hw=missing.toml\n  expect no add\n",
            TestHardwareError,
            10,
            9,
            "unknown hardware",
        ),
        (  # a directive line the grammar rejects
            FRAGMENT + "  expect no\n",
            RuleSyntaxError,
            10,
            12,
            "unexpected end of line",
        ),
    ],
)
def test_errors_are_located_in_the_rules_file(tmp_path, body, cls, line, col, message) -> None:
    path = _rules_file(tmp_path, body)
    with pytest.raises(cls) as info:
        validate_files([path])
    err = info.value
    assert (err.file, err.line, err.col) == (str(path), line, col)
    assert message in err.message
    shown = str(err).splitlines()
    assert shown[1].strip() == path.read_text().splitlines()[line - 1].strip()


def test_duplicate_test_names_and_unclosed_blocks(tmp_path) -> None:
    block = "test t {\n" + FRAGMENT + "  expect no add\n}\n"
    text = RELU_RULES + "\n" + block + block
    with pytest.raises(DuplicateTestError) as info:
        parse_rules(text, "d.rules")
    assert (info.value.line, info.value.col) == (12, 6)
    assert "already defined at d.rules:6:6" in info.value.message
    with pytest.raises(RuleSyntaxError) as info:
        parse_rules(RELU_RULES + "\ntest t {\n" + FRAGMENT, "d.rules")
    assert (info.value.line, info.value.col) == (6, 8)
    assert "no closing '}'" in info.value.message


def test_rules_check_validates_test_blocks(tmp_path, capsys) -> None:
    good = _rules_file(tmp_path, FRAGMENT + "  expect kernels == [relu]\n", "good.rules")
    assert main(["rules", "check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: 1 rule, 1 ruleset (demo), 1 test\n"
    path = _rules_file(
        tmp_path, "  input x: f32[8, 16]\n  y = relux(x)\n  output y\n  expect no add\n"
    )
    assert main(["rules", "check", str(path)]) == 1
    assert f"{path}:8:7: error: 'relux' is not an op" in capsys.readouterr().err


# ------------------------------------------------------------- expectations

CASES = """
test right {
  input x: f32[8, 16]
  input z: f32[8, 16]
  y = relu(relu(x))
  w = neg(z)
  output y, w
  expect kernels == [neg, relu]
  expect kernels != [relu]
  expect kernels == 2
  expect no add
  expect cost < 0.9 * input
  expect cost <= 100000
  expect equal(y, relu(x))
}

test wrong-kernels {
  input x: f32[8, 16]
  y = relu(relu(x))
  output y
  expect kernels == [relu, relu]
  expect kernels > 1
}

test wrong-no {
  input x: f32[8, 16]
  y = relu(relu(x))
  output y
  expect no relu
}

test wrong-cost {
  input x: f32[8, 16]
  y = relu(relu(x))
  output y
  expect cost < 0.4 * input
}

test wrong-equal {
  input x: f32[8, 16]
  y = relu(relu(x))
  output y
  expect equal(y, neg(x))
}
"""


def test_expectations_hold_or_fail_as_written(tmp_path) -> None:
    path = tmp_path / "demo.rules"
    path.write_text(RELU_RULES + CASES)
    results = {r.test.name: r for r in run_files(parse_files([path]))}
    assert results["right"].passed, [o.got for o in results["right"].outcomes]
    kernels = results["right"].outcomes[0].got
    assert kernels in ("kernels [relu, neg]", "kernels [neg, relu]")
    for name in ("wrong-kernels", "wrong-no", "wrong-cost", "wrong-equal"):
        r = results[name]
        assert not r.passed and not any(o.passed for o in r.outcomes), name
    assert results["wrong-kernels"].outcomes[1].got == "1 kernels [relu]"
    assert results["wrong-no"].outcomes[0].got == "1 relu node"
    cost = results["wrong-cost"].outcomes[0].got
    assert cost.startswith("cost 484 cycles (0.500 of the input); bound 387.2 (input 968")
    assert results["wrong-equal"].outcomes[0].got == "different e-classes after saturation"
    assert results["wrong-equal"].program is None  # only `equal`: no extraction needed
    assert results["right"].fired["relu-twice"] >= 1


def test_hardware_file_relative_to_the_rules_file(tmp_path) -> None:
    shutil.copy(ROOT / "tests/data/tiny_sram.toml", tmp_path / "tiny.toml")
    path = _rules_file(tmp_path, FRAGMENT + "  on hw=tiny.toml\n  expect kernels == [relu]\n")
    (result,) = run_files(parse_files([path]))
    assert result.passed
    from eqsat.ruletest.fragment import test_hardware

    parsed = parse_files([path])[0]
    hw = test_hardware(parsed.tests[0], parsed.path, parsed.source, "edge")
    assert hw.sram_bytes != 262144  # not the edge preset


SILU_MUL_HW = """base = "edge"
name = "edge-silu-mul"

[[instruction]]
name = "silu_mul"
operands = ["a", "b"]
semantics = "mul(silu(a), b)"
dtypes = ["f32"]
cost = "issue + ceil(n / 32)"
replaces = ["mul(silu(a), b)", "mul(mul(a, sigmoid(a)), b)"]
"""

GATE_TEST = """
test gate-instruction {
  input a: f32[64, 256]
  input b: f32[64, 256]
  y = mul(mul(a, sigmoid(a)), b)
  output y
  on hw=%s
  expect kernels == [silu_mul]
}
"""


def test_a_hardware_instruction_is_an_op_of_its_tests(tmp_path) -> None:
    """`on hw=` a file that declares instructions: they are ops (and their rules run)
    in that test only."""
    (tmp_path / "silu_mul.toml").write_text(SILU_MUL_HW)
    path = tmp_path / "demo.rules"
    path.write_text(RELU_RULES + GATE_TEST % "silu_mul.toml")
    validate_files([path])
    (result,) = run_files(parse_files([path]), [RULES])
    assert result.passed, result.outcomes
    path.write_text(RELU_RULES + GATE_TEST % "edge")
    with pytest.raises(ExpectationError) as info:
        validate_files([path])
    assert "unknown op 'silu_mul'" in info.value.message
