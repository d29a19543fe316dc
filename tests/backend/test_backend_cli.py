"""`eqsat compile` and `eqsat simulate` from the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.fileio import load_arrays, save_arrays
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")
REPORT_KEYS = {
    "cycles",
    "roofline_cycles",
    "dram_bytes",
    "peak_sram_bytes",
    "instructions",
    "utilization",
    "max_abs_error",
    "max_rel_error",
}


def test_compile_writes_assembly_that_simulates(tmp_path, capsys):
    asm = tmp_path / "mlp.asm"
    assert main(["compile", MLP, "--no-optimize", "--dim", "B=2", "-o", str(asm)]) == 0
    out = capsys.readouterr().out
    assert "kernels" in out and "DRAM footprint" in out and "one buffer per value" in out
    text = asm.read_text()
    assert text.startswith(".input") and "kernel      matmul." in text
    report = tmp_path / "sim.json"
    assert main(["simulate", str(asm), "--hw", "edge", "--report", str(report)]) == 0
    d = json.loads(report.read_text())
    assert set(d) >= REPORT_KEYS
    assert d["max_abs_error"] is None and d["max_rel_error"] is None
    assert "of the bound reached" in capsys.readouterr().out


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_simulate_model_reports_errors_and_stats(tmp_path, capsys, hw_name):
    report, out_npz = tmp_path / "r.json", tmp_path / "o.npz"
    args = ["simulate", MLP, "--hw", hw_name, "--dim", "B=2", "-q", "--report", str(report)]
    assert main([*args, "-o", str(out_npz)]) == 0
    text = capsys.readouterr().out
    for word in ("cycles", "utilization", "DRAM traffic", "max abs error", "roofline"):
        assert word in text
    d = json.loads(report.read_text())
    assert set(d) >= REPORT_KEYS
    assert d["max_rel_error"] < 1e-4 and d["cycles"] >= d["roofline_cycles"]
    assert set(d["utilization"]) >= {"load", "store", "matrix", "vector"}
    assert load_arrays(out_npz)["probs"].shape == (2, 10)


def test_simulate_uses_given_inputs(tmp_path, capsys):
    x = np.ones((2, 784), dtype=np.float32)
    inputs, o1, o2 = tmp_path / "in.npz", tmp_path / "a.npz", tmp_path / "b.npz"
    save_arrays(inputs, {"x": x})
    base = ["simulate", MLP, "--no-optimize", "--dim", "B=2", "--inputs", str(inputs)]
    assert main([*base, "--seed", "1", "-o", str(o1)]) == 0
    assert main([*base, "--seed", "1", "-o", str(o2)]) == 0
    np.testing.assert_array_equal(load_arrays(o1)["probs"], load_arrays(o2)["probs"])
    capsys.readouterr()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("load sram@0:1x1:f32 <- x[0:1x1/1]\n", "unknown DRAM buffer"),
        (
            ".input x f32 [2]\n.output y f32 [2]\n\nkernel k\nload sram@0:1x4:f32 <- x[0:1x4/4]\n",
            "out-of-bounds",
        ),
        (
            ".input x f32 [4]\n.output y f32 [4]\n\nkernel k\nload sram@0:1x4:f32 <- x[0:1x4/4]\n",
            "never stored",
        ),
    ],
)
def test_bad_programs_are_user_errors(tmp_path, capsys, text, message):
    path = tmp_path / "bad.asm"
    path.write_text(text)
    assert main(["simulate", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_inputs_file_is_a_user_error(tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    save_arrays(inputs, {"x": np.ones((3, 3), dtype=np.float32)})
    assert main(["simulate", MLP, "--no-optimize", "--inputs", str(inputs)]) == 1
    assert "'x' must have shape" in capsys.readouterr().err


def test_compile_output_is_atomic(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "dir" / "out.asm"
    assert main(["compile", MLP, "--no-optimize", "-o", str(missing)]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not missing.parent.exists()
