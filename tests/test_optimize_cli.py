"""`eqsat optimize` from the command line: summary, outputs, report, errors."""

from __future__ import annotations

import json

import pytest

from eqsat.cli import main
from frontend import check_model, parse_model_file
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")
REPORT_KEYS = {
    "cost_before",
    "cost_after",
    "dram_bytes_before",
    "dram_bytes_after",
    "egraph",
    "rules_fired",
    "time_s",
}


def test_optimize_writes_model_report_and_egraph(tmp_path, capsys) -> None:
    out, report, egraph = tmp_path / "o.model", tmp_path / "r.json", tmp_path / "e.json"
    code = main(
        [
            "optimize",
            MLP,
            "-q",
            "-o",
            str(out),
            "--report",
            str(report),
            "--egraph-out",
            str(egraph),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "est. cycles" in text and "stopped:" in text and "rules that fired most" in text
    graph = check_model(parse_model_file(out))
    assert any(n.op.startswith("matmul_bias_relu") for n in graph.nodes)  # alone or chained
    data = json.loads(report.read_text())
    assert set(data) >= REPORT_KEYS
    assert data["cost_after"] < data["cost_before"]
    assert set(data["egraph"]) >= {"nodes", "classes", "iterations", "stop_reason"}
    assert data["egraph"]["stop_reason"] in {
        "saturated",
        "iteration_limit",
        "node_limit",
        "time_limit",
        "memory_limit",
        "rules_skipped",
    }
    assert set(data["time_s"]) == {"saturate", "extract", "total"}
    assert all(isinstance(v, int) and v > 0 for v in data["rules_fired"].values())
    # the priced e-graph extracts to the same DAG cost with `eqsat extract`
    assert main(["extract", str(egraph), "--json"]) == 0
    extracted = json.loads(capsys.readouterr().out)
    assert extracted["cost"] == pytest.approx(data["cost_after"])


def test_progress_goes_to_stderr(capsys) -> None:
    assert main(["optimize", MLP]) == 0
    captured = capsys.readouterr()
    assert "round 1:" in captured.err
    assert "round 1:" not in captured.out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--node-limit", "0"], "--node-limit must be at least 1"),
        (["--iter-limit", "0"], "--iter-limit must be at least 1"),
        (["--time-limit", "0"], "--time-limit must be positive"),
        (["--hw", "tpu9"], "tpu9"),
        (["--dim", "Q=3"], "has no dimension 'Q'"),
    ],
)
def test_bad_flags_exit_1_without_writing(tmp_path, capsys, flags, message) -> None:
    out = tmp_path / "o.model"
    assert main(["optimize", MLP, "-q", "-o", str(out), *flags]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_bad_hardware_file_names_file_line_col(tmp_path, capsys) -> None:
    hw = tmp_path / "bad.toml"
    hw.write_text('base = "edge"\nsram_bytes = -4\n')
    assert main(["optimize", MLP, "-q", "--hw", str(hw)]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{hw}:2:")
    assert "error:" in first


def test_bad_rules_file_names_file_line_col(tmp_path, capsys) -> None:
    rules = tmp_path / "bad.rules"
    rules.write_text("ruleset bad\n# x\nr: relux(x) => x\n")
    assert main(["optimize", MLP, "-q", "--rules", str(rules)]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{rules}:3:4: error:")
    assert "relux" in first


def test_rules_check_accepts_the_bundled_rules(capsys) -> None:
    assert main(["rules", "check"]) == 0
    out = capsys.readouterr().out
    for name in ("algebra", "dce", "fusion", "layout"):
        assert f"{name}.rules" in out


def test_bundled_rules_number_at_least_sixty_each_with_a_doc() -> None:
    from eqsat.rules import load_rules
    from eqsat.rulesets import DEFAULT_RULES_DIR

    rules = load_rules([DEFAULT_RULES_DIR]).rules
    assert len(rules) >= 60
    assert all(rule.doc for rule in rules), [r.name for r in rules if not r.doc]
