"""`--quantize int8` on optimize, compile and simulate; the hardware `rounding` field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.fileio import load_arrays, save_arrays
from hwsim.hardware import HardwareError, load_hardware
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")


def test_optimize_reports_sqnr_and_writes_params(tmp_path, capsys) -> None:
    out, report = tmp_path / "q.model", tmp_path / "r.json"
    assert (
        main(["optimize", MLP, "-q", "--quantize", "int8", "-o", str(out), "--report", str(report)])
        == 0
    )
    printed = capsys.readouterr()
    assert "warning: no --calibrate file" in printed.err
    assert "SQNR vs float: probs" in printed.out
    d = json.loads(report.read_text())
    assert d["sqnr_db"]["probs"] >= 30.0
    assert d["quantization"]["int8_kernels"] == 3
    assert d["cost_after"] < d["cost_before"]
    params = load_arrays(tmp_path / "q.params.npz")
    assert params["w1.q"].dtype == np.int8 and "qmatmul_bias_requant" in out.read_text()

    # The written program reads back: its per-channel multipliers come from its params
    # file at compile time, and --verify runs the reference on those same params.
    sim = tmp_path / "sim.json"
    assert main(["simulate", str(out), "--no-optimize", "--verify", "--report", str(sim)]) == 0
    assert "verified: the simulated program matches" in capsys.readouterr().out
    assert main(["compile", str(out), "-o", str(tmp_path / "q.asm")]) == 0
    assert "requantize" in (tmp_path / "q.asm").read_text()


def test_calibration_file_with_stacked_samples_and_percentile(tmp_path, capsys) -> None:
    cal = tmp_path / "cal.npz"
    rng = np.random.default_rng(5)
    save_arrays(cal, {"x": rng.standard_normal((3, 8, 784)).astype(np.float32)})
    report = tmp_path / "r.json"
    flags = ["--calibrate", str(cal), "--calibration", "percentile", "--percentile", "99.9"]
    assert main(["optimize", MLP, "-q", "--quantize", "int8", *flags, "--report", str(report)]) == 0
    assert "warning" not in capsys.readouterr().err
    d = json.loads(report.read_text())
    assert "3 sample(s)" in d["quantization"]["calibration"]
    assert "percentile 99.9" in d["quantization"]["calibration"]
    assert d["sqnr_db"]["probs"] >= 30.0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--calibrate", "c.npz"], "--calibrate needs --quantize"),
        (["--quantize", "int8", "--percentile", "20"], "--percentile must be in"),
        (["--quantize", "int8", "--calibrate", "missing.npz"], "no such file"),
    ],
)
def test_flag_errors(flags, message, capsys) -> None:
    assert main(["optimize", MLP, "-q", *flags]) == 1
    assert message in capsys.readouterr().err


def test_compile_and_simulate_take_the_flag(tmp_path, capsys) -> None:
    asm = tmp_path / "q.asm"
    assert main(["compile", MLP, "-q", "--quantize", "int8", "-o", str(asm)]) == 0
    assert "requantize" in asm.read_text() and (tmp_path / "q.params.npz").exists()
    capsys.readouterr()
    report = tmp_path / "sim.json"
    assert main(["simulate", MLP, "-q", "--quantize", "int8", "--report", str(report)]) == 0
    assert "SQNR vs float model probs" in capsys.readouterr().out
    assert json.loads(report.read_text())["sqnr_db"]["probs"] >= 30.0


def test_hardware_rounding_field(tmp_path) -> None:
    assert load_hardware("edge").rounding == "even"
    assert load_hardware("datacenter").rounding == "away"
    ok = tmp_path / "ok.toml"
    ok.write_text('base = "edge"\nrounding = "away"\n')
    assert load_hardware(ok).rounding == "away"
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "edge"\nrounding = "up"\n')
    with pytest.raises(HardwareError, match=r"bad.toml:2:1: error: 'rounding' must be one of"):
        load_hardware(bad)
