"""`eqsat rules synthesize` on the command line: output file, errors, time budget."""

from __future__ import annotations

from eqsat.cli import main
from eqsat.rules import load_rules


def test_writes_a_loadable_documented_file(tmp_path, capsys):
    out = tmp_path / "syn.rules"
    code = main(
        ["rules", "synthesize", "--ops", "add,neg", "--size", "1", "--scalars", "", "-o", str(out)]
    )
    assert code == 0
    said = capsys.readouterr().out
    text = out.read_text()
    assert text.startswith("# Rules synthesized by enumeration")
    assert "# command: eqsat rules synthesize --ops add,neg --size 1" in text
    rules = load_rules([out])
    assert [r.doc for r in rules] == ["a + b = b + a"]  # size 1: commutativity only
    assert f"{len(rules)} kept" in said and str(out) in said


def test_unknown_op_is_an_error_with_a_suggestion(capsys):
    assert main(["rules", "synthesize", "--ops", "add,mull"]) == 1
    assert "unknown op 'mull' (did you mean 'mul'?)" in capsys.readouterr().err


def test_an_op_outside_the_domain_is_an_error(capsys):
    assert main(["rules", "synthesize", "--ops", "add,reduce_sum"]) == 1
    assert "op 'reduce_sum' cannot be fingerprinted" in capsys.readouterr().err


def test_time_budget_writes_what_was_kept_with_a_note(tmp_path, capsys):
    out = tmp_path / "partial.rules"
    argv = ["rules", "synthesize", "--ops", "add,mul,neg,sub,transpose,matmul"]
    assert main([*argv, "--time", "0.05", "-o", str(out), "--no-progress"]) == 0
    text = out.read_text()
    assert "# NOTE: stopped by the time budget" in text
    load_rules([out])  # whatever was kept is a valid file
    assert "note: stopped by the time budget" in capsys.readouterr().out
