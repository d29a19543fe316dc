"""The sample rules file parses into the AST we expect and compiles to egglog that
egglog accepts; the CLI reports it."""

from __future__ import annotations

from rules_helpers import DATA, SAMPLE, sample

from eqsat.cli import main
from eqsat.rules import APPROX_SUFFIX, check_in_egglog, compile_rules, load_rules, rule_index
from eqsat.rules import ast as rast
from eqsat.rules.parser import parse_rules


def test_sample_rules_metadata() -> None:
    rules = sample()
    assert [f.ruleset for f in rules.files] == ["sample"]
    names = [r.name for r in rules]
    assert names[:3] == ["add-zero", "add-comm", "sub-add-neg"]
    add_zero = rules.rule("add-zero")
    assert (add_zero.file, add_zero.line, add_zero.col) == (str(SAMPLE), 7, 1)
    assert add_zero.doc.startswith("x + 0 = x")
    assert not add_zero.bidirectional and add_zero.approx is None
    assert rules.rule("add-comm").egglog_names == ("add-comm", "add-comm-rev")
    approx = rules.rule("sigmoid-bf16")
    assert approx.approx == 0.01 and approx.egglog_ruleset == "sample" + APPROX_SUFFIX
    assert rules.rulesets() == ["sample"]
    assert rules.rulesets(include_approx=True) == ["sample", "sample-approx"]


def test_sample_ast_of_multi_pattern_rule() -> None:
    parsed = parse_rules(SAMPLE.read_text(), "sample.rules")
    rule = next(r for r in parsed.rules if r.name == "merge-matmul")
    assert [i.name for i in rule.lhs] == ["a", "b"]
    assert [i.name for i in rule.rhs] == ["m", "a", "b"]
    assert rule.arrow == "=>"
    last = rule.guards[-1]
    assert last.op == "!=" and last.left == rast.Name("a", last.left.pos)
    concat = rule.rhs[0].term.args[1]
    assert isinstance(concat, rast.Call) and concat.op == "concat"
    assert concat.attrs[0].key == "axis" and concat.attrs[0].value.value == 1


def test_compiled_text() -> None:
    rules = sample()
    text = compile_rules(rules)
    assert text.startswith("(ruleset sample)\n")
    assert "sample-approx" not in text
    assert '((union t_root (Add v_b v_a)))\n      :ruleset sample :name "add-comm")' in text
    assert ':name "add-comm-rev"' in text
    # literals in patterns, computed values in actions, defaults filled in
    assert "(Const 0.0 t_1 t_2)" in text
    assert "(Const (* v_C1 v_C2) (INil) v_D)" in text
    assert "(let v_m (Matmul v_x (Concat v_w1 v_w2 1) (INil)))" in text
    assert "(!= v_a v_b)" in text
    # dim(x, -1) counts from the end
    assert "(nth (ShapeOf v_x) (+ t_1 -1))" in text
    with_approx = compile_rules(rules, include_approx=True)
    assert "(ruleset sample-approx)" in with_approx
    assert ':ruleset sample-approx :name "sigmoid-bf16"' in with_approx


def test_rule_index_maps_both_directions() -> None:
    rules = sample()
    index = rule_index(rules)
    assert index["sub-add-neg-rev"] is rules.rule("sub-add-neg")
    assert set(index) == {n for r in rules for n in r.egglog_names}


def test_egglog_accepts_the_sample() -> None:
    check_in_egglog(sample(), include_approx=True)


def test_directory_loads_sorted(tmp_path) -> None:
    (tmp_path / "b.rules").write_text("# relu twice\nb-rule: relu(relu(x)) => relu(x)\n")
    (tmp_path / "a.rules").write_text("ruleset first\n# neg twice\na-rule: neg(neg(x)) => x\n")
    (tmp_path / "notes.txt").write_text("not rules")
    rules = load_rules([tmp_path])
    assert [f.ruleset for f in rules.files] == ["first", "b"]
    assert [r.name for r in rules] == ["a-rule", "b-rule"]


def test_cli_rules_check(capsys) -> None:
    assert main(["rules", "check", str(DATA)]) == 0
    out = capsys.readouterr().out
    assert out == f"{SAMPLE}: 9 rules, 1 approximate, 2 rulesets (sample, sample-approx)\n"


def test_cli_rules_check_reports_typed_error(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text("# oops\nr: ad(x, y) => x\n")
    assert main(["rules", "check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:4: error: unknown op 'ad'; did you mean 'add'?")


def test_cli_rules_compile(capsys) -> None:
    assert main(["rules", "compile", "--approx", str(SAMPLE)]) == 0
    assert ':name "sigmoid-bf16"' in capsys.readouterr().out
