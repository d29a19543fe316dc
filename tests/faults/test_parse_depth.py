"""Deeply nested models and rules (issue 16): a model nested 500 calls deep is legal
and goes through every command; past the documented limits (MAX_NESTING for models,
RULE_MAX_NESTING for rules) the error is located, never a RecursionError."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqsat.cli import main
from eqsat.rules.errors import RuleSyntaxError
from eqsat.rules.grammar import RULE_MAX_NESTING
from eqsat.rules.loader import load_rules
from eqsat.sourcetext import MAX_NESTING
from frontend import check_model, parse_model
from frontend.errors import ModelSyntaxError


def nested_model(depth: int) -> str:
    """y = add(tanh(add(...x...)), x): `depth` calls, nothing for the rules to fold."""
    body = "x"
    for i in range(depth):
        body = f"tanh({body})" if i % 2 else f"add({body}, x)"
    return f"model deep {{\n  input x: f32[4]\n  y = {body}\n  output y\n}}\n"


def nested_rule(depth: int) -> str:
    term = "x"
    for i in range(depth):
        term = f"tanh({term})" if i % 2 else f"relu({term})"
    return f"ruleset deep\n# d\ndeep-rule: {term} => {term}\n"


def test_a_model_nested_to_the_limit_checks_optimizes_and_simulates(tmp_path: Path, capsys) -> None:
    """996 calls deep (the most the limit allows; the issue's case is 500): every pass
    after the parser is iterative or fits Python's default recursion limit."""
    path = tmp_path / "deep.model"
    path.write_text(nested_model(MAX_NESTING - 4))
    out = tmp_path / "out.model"
    assert main(["check", str(path)]) == 0
    assert main(["optimize", str(path), "-q", "-o", str(out)]) == 0
    assert main(["check", str(out)]) == 0  # the printed program reads back
    assert main(["simulate", str(path), "--no-optimize"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error" not in err


def test_the_model_limit_is_exact() -> None:
    # start, model and assign take three levels of the parse tree, each call one
    # more, and the innermost operands (references) one
    graph = check_model(parse_model(nested_model(MAX_NESTING - 4)))
    assert sum(1 for _, n in graph if n.op in ("add", "tanh")) == MAX_NESTING - 4
    with pytest.raises(ModelSyntaxError, match="nested more than 1000 levels"):
        parse_model(nested_model(MAX_NESTING - 3))


def test_a_model_5000_calls_deep_is_a_located_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "deep.model"
    path.write_text(nested_model(5000))
    assert main(["check", str(path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{path}:3:")
    assert (
        ": error: nested more than 1000 levels deep (the limit); name the inner parts" in (lines[0])
    )
    assert len(lines) == 3 and len(lines[1]) <= 110  # the source excerpt is cut short
    assert lines[2].rstrip().endswith("^")


def test_deep_brackets_and_long_operator_chains_in_rules(tmp_path: Path) -> None:
    path = tmp_path / "r.rules"
    path.write_text(nested_rule(5000))
    with pytest.raises(RuleSyntaxError, match="nested more than 200 levels") as info:
        load_rules([path])
    assert (info.value.file, info.value.line) == (str(path), 3)
    chain = " + ".join(["1"] * 5000)  # left-nested: as deep as it is long
    path.write_text(f"ruleset deep\n# d\nr: relu(x) => x if rank(x) == {chain}\n")
    with pytest.raises(RuleSyntaxError, match="nested more than 200 levels"):
        load_rules([path])


def test_rules_at_the_limit_compile_and_verify(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.rules"
    path.write_text(nested_rule(RULE_MAX_NESTING - 8))
    assert main(["rules", "compile", str(path)]) == 0
    assert main(["verify-rules", str(path), "--examples", "3", "--seed", "1"]) == 0
    guard = "(" * 190 + "1" + " + 1)" * 190
    path.write_text(f"ruleset deep\n# d\nr: relu(x) => relu(x) if rank(x) == {guard}\n")
    assert main(["rules", "compile", str(path)]) == 0
    # rank 191 is beyond what an example can draw: no instance, not a numpy error
    assert main(["verify-rules", str(path), "--examples", "3", "--seed", "1"]) == 0
    out = capsys.readouterr()
    assert "could not generate an instance" in out.out and "Traceback" not in out.err
