"""The `--quantize auto` report: REPORT.json (schema, values that agree with each
other, a JSON round trip) and the table on stdout; compile's --report."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re

import pytest

from eqsat.cli import main
from eqsat.quant.report import SCHEMA
from tests.conftest import ROOT
from tests.quant.helpers import TWO_BRANCH


def _strict(text: str) -> dict:
    def no_constant(name: str):
        raise AssertionError(f"{name} in REPORT.json")

    return json.loads(text, parse_constant=no_constant)


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("auto")
    model = folder / "tiny.model"
    model.write_text(TWO_BRANCH)
    report = folder / "r.json"
    # edge with bf16 the only narrow weight format: three candidates to optimize, not five
    edge = (ROOT / "hwsim" / "presets" / "edge.toml").read_text()
    hw = folder / "edge_bf16.toml"
    hw.write_text(re.sub(r"(?m)^weight_dtypes = .*$", 'weight_dtypes = ["bf16", "f32"]', edge))
    out = io.StringIO()
    argv = ["optimize", str(model), "--quantize", "auto", "--sqnr-min", "40", "-q", "--hw", str(hw)]
    argv += ["--time-limit", "600"]  # saturation runs to the end however loaded the machine
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--report", str(report)]) == 0
    return _strict(report.read_text()), out.getvalue(), model


def test_report_schema_and_consistency(auto_run) -> None:
    d, _, _ = auto_run
    q = d["quantization"]
    assert q["schema"] == SCHEMA and q["scheme"] == "auto" and q["sqnr_min_db"] == 40.0
    assert q["precisions"] == ["int8", "bf16", "f32"]  # what the hardware file declares
    assert q["sqnr_db"]["measured"] == d["sqnr_db"]
    assert set(q["sqnr_db"]["predicted"]) == {"y"}
    # the kept candidate is the fastest that meets the budget (f32 when none does)
    feasible = [c for c in q["candidates"] if c["meets_budget"]]
    assert [c["name"] for c in q["candidates"]] == ["mixed", "int8", "bf16"]
    for c in q["candidates"]:
        assert c["meets_budget"] == (c["sqnr_db"]["y"] is None or c["sqnr_db"]["y"] >= 40.0)
    best = min(c["est_cycles"] for c in feasible)
    kept = next(c for c in q["candidates"] if c["name"] == q["chosen"])
    assert kept["est_cycles"] == best and d["cost_after"] == best
    assert d["sqnr_db"]["y"] == pytest.approx(kept["sqnr_db"]["y"], abs=1e-6)
    assert d["sqnr_db"]["y"] >= 40.0
    layers = q["layers"]
    assert q["layer_groups"] == len(layers) == 2
    assert [w["name"] for w in layers[1]["weights"]] == ["w2", "w3"]
    shares = [row["noise_share"] for row in layers]
    assert sum(shares) == pytest.approx(1.0, abs=1e-3) or not any(shares)
    for row in layers:
        assert row["saved_cycles"] == row["float_est_cycles"] - row["est_cycles"]
        option = next(o for o in row["options"] if o["precision"] == row["precision"])
        assert option["est_cycles"] == row["est_cycles"]
        assert option["sensitivity_db"] == row["sensitivity_db"]
        assert {o["precision"] for o in row["options"]} == set(q["precisions"])
        assert sum(o["measured"] for o in row["options"]) == 1  # int8 end to end
        for w in row["weights"]:
            lo, hi = w["range"]
            assert lo < 0 < hi
            if row["precision"] == "int8":
                assert w["scales"]["count"] == w["shape"][1]
                assert w["scales"]["max"] == pytest.approx(max(-lo, hi) / 127, rel=1e-5)
            else:
                assert w["scales"] is None
        act = row["activation"]
        if row["precision"] == "int8":
            assert act["scale"] > 0 and act["lo"] <= act["hi"]
            assert -128 <= act["zero_point"] <= 127
        else:
            assert act is None
    assert json.loads(json.dumps(d, allow_nan=False)) == d


def test_summary_table_on_stdout(auto_run) -> None:
    d, out, _ = auto_run
    q = d["quantization"]
    assert f"kept {q['chosen']}" in out
    assert "precision" in out and "sensitivity dB" in out and "est. cycles saved" in out
    lines = [ln for ln in out.splitlines() if ln.startswith(("w1 ", "w2,w3 "))]
    assert len(lines) == 2
    for line, row in zip(lines, q["layers"], strict=True):
        assert row["precision"] in line and f"{row['saved_cycles']:,}" in line
    assert "measured y" in out and "predicted y" in out


def test_no_report_when_the_run_fails(tmp_path, auto_run) -> None:
    _, _, model = auto_run
    report = tmp_path / "r.json"
    argv = ["optimize", str(model), "--quantize", "auto", "--smooth-alpha", "0.5", "-q"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--report", str(report)]) != 0
    assert not report.exists()


def test_compile_report(tmp_path, auto_run) -> None:
    _, _, model = auto_run
    report = tmp_path / "c.json"
    argv = ["compile", str(model), "--quantize", "bf16", "-q", "-o", str(tmp_path / "t.asm")]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--report", str(report)]) == 0
    d = _strict(report.read_text())
    assert d["quantization"]["scheme"] == "bf16" and d["kernels"] > 0
    assert 40.0 < d["sqnr_db"]["y"] < math.inf


def test_weight_scales_per_precision() -> None:
    import numpy as np

    from eqsat.quant.report import weight_scales

    w = np.random.default_rng(0).standard_normal((256, 64)).astype(np.float32)
    int8 = weight_scales(w, "int8", conv=False)
    assert int8["count"] == 64 and int8["max"] == pytest.approx(np.abs(w).max() / 127)
    w4 = weight_scales(w, "w4a16", conv=False)
    assert w4["count"] == 2 * 64 and w4["max"] == pytest.approx(np.abs(w).max() / 7)
    assert weight_scales(w, "fp8", conv=False)["max"] == pytest.approx(np.abs(w).max() / 448)
    assert weight_scales(w, "bf16", conv=False) is None
    assert weight_scales(w, "f32", conv=False) is None
