"""`eqsat optimize | compile | simulate | run | import` on models with regions."""

from __future__ import annotations

import json

import numpy as np

from eqsat.cli import main
from eqsat.fileio import load_arrays, save_arrays
from tests.control.helpers import DECODE_LOOP, EARLY_EXIT, ONNX_DIR, loaded


def test_run_prints_outputs_and_the_control_taken(capsys, tmp_path) -> None:
    out = tmp_path / "o.npz"
    assert main(["run", str(EARLY_EXIT), "--seed", "1", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("model early_exit: 2 outputs")
    assert "step 1: if took the else branch" in text
    assert sorted(load_arrays(out)) == ["confident", "probs"]


def test_simulate_reports_host_control_separately(capsys, tmp_path) -> None:
    values = loaded(DECODE_LOOP).bindings(3)
    values["end_token"] = np.array(-1, dtype=np.int32)
    inputs, report = tmp_path / "in.npz", tmp_path / "sim.json"
    save_arrays(inputs, values)
    args = ["simulate", str(DECODE_LOOP), "--hw", "edge", "--no-optimize"]
    assert main([*args, "--inputs", str(inputs), "--report", str(report)]) == 0
    text = capsys.readouterr().out
    d = json.loads(report.read_text())
    assert d["trips"] == [8] and d["dispatches"] == 8 and d["readbacks"] == 8
    assert d["host_control_cycles"] == 8 * 1000 + 8 * 300
    assert d["cycles"] == d["device_cycles"] + d["host_control_cycles"]
    assert d["errors"]["tokens"]["max_abs"] == 0.0
    assert f"host control  {d['host_control_cycles']:>12,} cycles" in text
    assert "loop trips    8" in text


def test_optimize_and_compile_apply_the_passes(capsys, tmp_path) -> None:
    assert main(["optimize", str(DECODE_LOOP), "--hw", "edge", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "loop 0: hoisted 1 loop-invariant value(s) out of the body" in text
    assert "loop1_body" in text and "host control" in text
    asm = tmp_path / "d.asm"
    assert main(["compile", str(DECODE_LOOP), "--hw", "edge", "--quiet", "-o", str(asm)]) == 0
    out = capsys.readouterr().out
    assert "2 programs (1 regions)" in out
    listing = asm.read_text()
    assert listing.startswith(".host decode_loop\n  const none i32 [1,8] = -1, -1,")
    assert "\n  run stage0 (" in listing
    assert "\n.program loop1_body\n" in listing


def test_import_checks_against_onnxruntime_and_writes_the_regions(capsys, tmp_path) -> None:
    out = tmp_path / "loop.model"
    assert main(["import", str(ONNX_DIR / "loop_script.onnx"), "--check", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "with 2 region(s)" in text
    assert "vs ONNX Runtime  h: normwise relative error" in text
    model = out.read_text()
    assert " = if (" in model and " = loop (" in model
    assert main(["run", str(out), "--seed", "0"]) == 0
    assert "loop ran" in capsys.readouterr().out


def test_optimize_writes_a_model_with_regions_that_means_the_same(capsys, tmp_path) -> None:
    out = tmp_path / "opt.model"
    args = ["optimize", str(EARLY_EXIT), "--hw", "edge", "--quiet", "-o", str(out)]
    assert main(args) == 0
    assert f"wrote optimized model to {out}" in capsys.readouterr().out
    from eqsat.control.interpret import run_control
    from eqsat.control.load import load_control

    written = load_control(out)
    assert written.program.regions() == 1
    for scale in (0.0, 100.0):
        values = loaded(EARLY_EXIT).bindings(1)
        values["x"] = (values["x"] * scale).astype(np.float32)
        want, trace = run_control(loaded(EARLY_EXIT).program, values)
        got, trace2 = run_control(written.program, values)
        assert trace2.branches == trace.branches
        np.testing.assert_allclose(got["probs"], want["probs"], rtol=1e-5, atol=1e-6)


def test_a_compiled_listing_simulates_like_the_model(capsys, tmp_path) -> None:
    asm, saved, ran, simulated = (tmp_path / n for n in ("d.asm", "in.npz", "o.npz", "s.npz"))
    argv = ["compile", str(DECODE_LOOP), "--hw", "edge", "--no-optimize", "-o", str(asm)]
    assert main(argv) == 0
    assert main(["run", str(DECODE_LOOP), "--save-inputs", str(saved), "-o", str(ran)]) == 0
    argv = ["simulate", str(asm), "--hw", "edge", "--inputs", str(saved), "-o", str(simulated)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "decode_loop on edge:" in text and "host control" in text
    want, got = load_arrays(ran), load_arrays(simulated)
    for name in want:
        np.testing.assert_array_equal(got[name].reshape(want[name].shape), want[name])


def test_an_onnx_if_folded_at_import_takes_the_static_path(capsys, tmp_path) -> None:
    from tests.control.test_onnx import folded_if_model

    path = tmp_path / "folded.onnx"
    path.write_bytes(folded_if_model().SerializeToString())
    assert main(["simulate", str(path), "--hw", "edge", "-q"]) == 0
    out = capsys.readouterr()
    assert "folded to its else branch" in out.err
    assert out.out.startswith("cycles ")  # the static report, not the host's


def test_verify_checks_the_simulated_program_and_catches_a_wrong_one(capsys) -> None:
    import pytest

    from eqsat.control.interpret import run_control
    from eqsat.control.verify import validate_control
    from eqsat.verify.translation import VerificationError

    argv = ["simulate", str(EARLY_EXIT), "--hw", "edge", "--no-optimize", "--verify"]
    assert main(argv) == 0
    assert "verified: the simulated program matches the original model on seeds 0, 1, 2" in (
        capsys.readouterr().out
    )
    program = loaded(EARLY_EXIT).program

    def wrong(values):
        out, _ = run_control(program, values)
        return {**out, "probs": out["probs"][:, ::-1]}  # classes in reverse order

    with pytest.raises(VerificationError, match="output 'probs' of the broken program"):
        validate_control(program, wrong, "the broken program", (0, 1))
