"""`eqsat bench`: the programs it times compute the model's outputs (errors against the
interpreter are reported and small), the optimized program is paired with the model as
written on the same backend, and its flag errors are usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqsat.cli import main

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.model"
TINY_ONNX = ROOT / "tests" / "data" / "onnx" / "resnet18_ts.onnx"


def _bench(tmp_path, *flags: str) -> dict:
    out = tmp_path / "bench.json"
    args = ["bench", *flags, "--repeat", "2", "--warmup", "0", "--json", str(out), "--quiet"]
    assert main(args) == 0
    return json.loads(out.read_text())


def test_reference_backend_times_written_and_optimized(tmp_path, capsys):
    report = _bench(tmp_path, str(MLP), "--backend", "reference")
    labels = [p["label"] for p in report["programs"]]
    assert labels == ["interpreter, as written", "interpreter, eqsat-optimized (edge)"]
    assert all(p["relative_error"] < 1e-5 for p in report["programs"])
    assert all(p["median_seconds"] > 0 for p in report["programs"])
    assert set(report["speedup_over_as_written"]) == {"reference"}
    printed = capsys.readouterr().out
    assert "median ms" in printed and "the speed of the model as written" in printed


def test_no_optimize_times_the_model_as_written_only(tmp_path):
    report = _bench(tmp_path, str(MLP), "--backend", "reference", "--no-optimize")
    assert [p["label"] for p in report["programs"]] == ["interpreter, as written"]
    assert report["speedup_over_as_written"] == {}


def test_iree_backend_runs_both_programs(tmp_path):
    pytest.importorskip("iree.compiler", reason="IREE is not installed (the [iree] extra)")
    pytest.importorskip("iree.runtime", reason="IREE's runtime is not installed")
    report = _bench(tmp_path, str(MLP), "--backend", "iree", "--hw", "datacenter")
    labels = [p["label"] for p in report["programs"]]
    assert labels == ["IREE, as written", "IREE, eqsat-optimized (datacenter)"]
    assert all(p["relative_error"] < 1e-5 for p in report["programs"])


def test_onnxruntime_backend_on_an_onnx_model(tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    report = _bench(tmp_path, str(TINY_ONNX), "--backend", "onnxruntime")
    (program,) = report["programs"]
    assert program["label"] == "ONNX Runtime (ORT_ENABLE_ALL)"
    assert program["relative_error"] < 1e-4


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "onnxruntime"], "is not an .onnx model"),
        (["--no-optimize", "--quantize", "int8"], "drop --no-optimize"),
    ],
)
def test_flags_that_do_not_fit_the_model_are_errors(flags, message, capsys):
    assert main(["bench", str(MLP), *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "tpu"], "unknown backend 'tpu'"),
        (["--backend", ","], "unknown backend ','"),
        (["--repeat", "0"], "expected a whole number from 1"),
    ],
)
def test_malformed_flags_are_usage_errors(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(MLP), *flags])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
