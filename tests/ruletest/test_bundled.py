"""The tests inside rules/*.rules pass, and one fails when the rule it is about goes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eqsat.cli import main
from eqsat.rules import load_rules
from eqsat.ruletest import parse_files
from tests.ruletest.helpers import BUNDLED, RULES, copy_rules, without_rule


def test_every_rule_file_carries_tests() -> None:
    parsed = {Path(p.path).stem: p for p in parse_files([RULES])}
    assert set(BUNDLED) <= set(parsed)
    for stem, p in parsed.items():
        assert p.tests, f"{stem}.rules has no test block"
    for stem in BUNDLED:
        assert len(parsed[stem].tests) >= 3, stem
        assert all(t.expects for t in parsed[stem].tests)


@pytest.mark.parametrize("path", sorted(RULES.glob("*.rules")), ids=lambda p: p.stem)
def test_bundled_rule_tests_pass(path: Path, capsys) -> None:
    """Each file's tests (with every rule of rules/ loaded, as `rules test rules/`
    runs them), one file per test so that the suite's workers share them."""
    (parsed,) = parse_files([path])
    total = len(parsed.tests)
    assert main(["rules", "test", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS ") == total
    assert "FAIL" not in out
    tests = "1 test" if total == 1 else f"{total} tests"
    assert f"{tests} in 1 file: {total} passed, 0 failed" in out


def test_a_removed_rule_fails_its_test_with_the_extracted_program(tmp_path, capsys) -> None:
    intact = copy_rules(tmp_path / "intact")
    broken = copy_rules(tmp_path / "broken", drop=("fusion", "matmul-bias-gelu"))
    names = {r.name for r in load_rules(broken / "fusion.rules")}
    assert "matmul-bias-gelu" not in names and "matmul-bias" in names

    # the file's rules alone (--rules), to keep it short: with every bundled file the
    # failing run re-saturates with provenance over all 200+ rules to explain its
    # kernels (about 5 s and 0.2 GB)
    argv = ["rules", "test", "--test", "matmul-bias-gelu"]
    intact_rules = str(intact / "fusion.rules")
    assert main([*argv, "--rules", intact_rules, intact_rules]) == 0
    assert "PASS matmul-bias-gelu" in capsys.readouterr().out

    broken_rules = str(broken / "fusion.rules")
    assert main([*argv, "--rules", broken_rules, broken_rules]) == 1
    out = capsys.readouterr().out
    assert "FAIL matmul-bias-gelu" in out
    assert "FAIL expect kernels == [matmul_bias_gelu]: got kernels [matmul_bias, gelu]" in out
    assert "FAIL expect no gelu: got 1 gelu node" in out
    # the extracted program, printed in the model language
    program = out[out.index("extracted program:") :]
    assert "model matmul_bias_gelu {" in program
    assert "y = gelu(matmul_bias(x, w, b" in program
    # each kernel with the rule that built it (`eqsat explain`)
    chosen = out[out.index("how each kernel was chosen") :]
    assert re.search(r"matmul_bias\.\w+: [\d,]+ cycles, built by (tile-)?matmul-bias\b", chosen)
    assert "gelu.y: " in chosen and "built by the model as written" in chosen
    (fired,) = [line for line in out.splitlines() if "rules of fusion.rules that fired:" in line]
    assert "matmul-bias (" in fired and "matmul-bias-gelu" not in fired
    assert "1 test in 1 file: 0 passed, 1 failed (matmul-bias-gelu)" in out


def test_without_rule_removes_exactly_one_rule() -> None:
    text = (RULES / "fusion.rules").read_text()
    out = without_rule(text, "conv-bias")
    assert "conv-bias:" not in out and "conv-bias-relu:" in out
    assert len(out.splitlines()) == len(text.splitlines()) - 3
