"""`eqsat rules why`: proofs of equality with a minimal rule set and the chain that
does it; the nearest terms when the rules fall short."""

from __future__ import annotations

import pytest

from eqsat.cli import main
from eqsat.errors import SourceError
from eqsat.rules import load_rules
from eqsat.ruletest.sides import term_graph
from eqsat.ruletest.why import why
from hwsim.hardware import load_hardware
from tests.ruletest.helpers import RULES

X = {"x": "f32[8, 16]"}
TWICE = "relu(transpose(transpose(x, perm=[1, 0]), perm=[1, 0]))"


def test_a_proof_names_a_minimal_rule_set_and_its_chain() -> None:
    rules = load_rules([RULES / "dce.rules", RULES / "algebra.rules"])
    result = why(
        term_graph(TWICE, X, "<A>"), term_graph("relu(x)", X, "<B>"), rules, load_hardware("edge")
    )
    assert result.proved and result.equal == [True]
    assert [r.name for r in result.minimal] == ["transpose-transpose", "transpose-identity"]
    assert [s.rule.name for s in result.steps] == ["transpose-transpose", "transpose-identity"]
    assert result.steps[0].left == "relu(transpose(x, perm=[0, 1]))"
    assert result.steps[-1].left == "relu(x)"
    assert result.replay_met


def test_models_compared_output_by_output(tmp_path, capsys) -> None:
    head = "  input x: f32[8, 16]\n  param w: f32[16, 32]\n  param b: f32[32]\n"
    (tmp_path / "a.model").write_text(
        "model a {\n" + head + "  y = relu(add(b, matmul(x, w)))\n  output y\n}\n"
    )
    (tmp_path / "b.model").write_text(
        "model b {\n" + head + "  y = matmul_bias_relu(x, w, b)\n  output y\n}\n"
    )
    argv = ["rules", "why", str(tmp_path / "a.model"), str(tmp_path / "b.model")]
    assert main([*argv, "--rules", str(RULES / "fusion.rules")]) == 0
    out = capsys.readouterr().out
    assert "output y: equal" in out
    assert "2 of the" in out
    chain = out[out.index("\nchain (") :]  # the section, not a path that holds the word
    assert chain.index("matmul-bias-left") < chain.index("matmul-bias-relu")
    assert "left:  relu(matmul_bias(x, w, b))" in chain
    assert "left:  matmul_bias_relu(x, w, b)" in chain


def test_not_proved_shows_the_nearest_terms(capsys) -> None:
    argv = ["rules", "why", TWICE, "neg(x)", "--input", "x:f32[8, 16]"]
    assert main([*argv, "--rules", str(RULES / "dce.rules")]) == 1
    out = capsys.readouterr().out
    assert "output result: NOT proved equal" in out
    assert "left reaches:     relu(x)  (0 of the right's 2 nodes)" in out
    assert "right reaches:    neg(x)  (0 of the left's 4 nodes)" in out
    assert "rules that fired: transpose-" in out


def test_nearest_counts_the_shared_part() -> None:
    rules = load_rules([RULES / "dce.rules"])
    left = term_graph(f"neg({TWICE})", X, "<A>")
    right = term_graph("neg(relu(neg(x)))", X, "<B>")
    result = why(left, right, rules, load_hardware("edge"))
    assert not result.proved
    (near,) = result.nearest
    assert near.left.text() == "neg(relu(x))"
    assert near.left_score == 2  # neg(relu(.)) of the right side's 4 nodes


def test_a_term_over_an_undeclared_leaf_is_a_located_error() -> None:
    with pytest.raises(SourceError) as info:
        term_graph("relu(add(x, q))", X, "<A>")
    err = info.value
    assert (err.file, err.line, err.col) == ("<A>", 1, 13)
    assert "--input NAME:TYPE" in err.message
