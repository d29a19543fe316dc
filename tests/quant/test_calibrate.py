"""Calibration samples and ranges, scale choice, and the quantization pass."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.interpreter import evaluate_nodes, random_bindings
from eqsat.quant import CalibrationError, calibration_samples, observe_ranges
from eqsat.quant.passes import plan_quantization
from eqsat.quant.qparams import activation_qparams
from tests.quant.helpers import model


def test_samples_one_or_stacked_on_a_leading_axis() -> None:
    g = model("mlp")
    x = np.zeros((8, 784), np.float32)
    assert len(calibration_samples(g, {"x": x})) == 1
    stacked = calibration_samples(g, {"x": np.stack([x, x + 1, x + 2])})
    assert len(stacked) == 3 and float(stacked[2]["x"][0, 0]) == 2.0


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({}, "no values for input"),
        ({"x": np.zeros((8, 783))}, r"\[8, 784\] or \[N, 8, 784\]"),
        ({"x": np.zeros((2, 3, 8, 784))}, "must have shape"),
    ],
)
def test_bad_calibration_files_are_errors(arrays, message) -> None:
    with pytest.raises(CalibrationError, match=message):
        calibration_samples(model("mlp"), arrays, "cal.npz")


def test_random_samples_are_not_the_evaluation_input() -> None:
    g = model("mlp")
    samples = calibration_samples(g, None)
    seed0 = random_bindings(g, 0)["x"]
    assert len(samples) >= 2 and all(not np.array_equal(s["x"], seed0) for s in samples)


def test_minmax_and_percentile_ranges() -> None:
    g = model("mlp")
    bind = random_bindings(g, 0)
    params = {k: v for k, v in bind.items() if k != "x"}
    samples = calibration_samples(g, None)
    x = next(i for i, _ in g.inputs)
    lo, hi = observe_ranges(g, [x], samples, params)[x]
    data = np.concatenate([s["x"].ravel() for s in samples])
    assert (lo, hi) == (float(data.min()), float(data.max()))
    plo, phi = observe_ranges(g, [x], samples, params, "percentile", 99.0)[x]
    assert lo < plo < phi < hi
    assert phi == pytest.approx(float(np.percentile(data, 99.0)))


@given(st.floats(-100, 0), st.floats(0, 100))
def test_activation_scale_covers_the_range_and_zero_is_exact(lo, hi) -> None:
    scale, zp = activation_qparams(lo, hi)
    assert -128 <= zp <= 127 and scale > 0
    if hi - lo > 1e-6:
        assert (-128 - zp) * scale <= lo + scale and (127 - zp) * scale >= hi - scale
    assert np.float32(scale) == scale  # an f32 value: the same in the e-graph and kernels


def test_plan_annotates_inputs_and_computes_int8_params() -> None:
    g = model("mlp")
    bind = random_bindings(g, 0)
    params = {k: v for k, v in bind.items() if k != "x"}
    plan = plan_quantization(g, params, calibration_samples(g, None), "even")
    assert plan.layers == ["w1", "w2", "w3"]
    assert sum(n.op == "observe" for _, n in plan.graph) == 3
    # observe is x itself: the annotated model computes exactly what the model does
    before, after = evaluate_nodes(g, bind), evaluate_nodes(plan.graph, bind)
    assert np.array_equal(before[g.outputs[0][1]], after[plan.graph.outputs[0][1]])
    wq, ws = plan.params["w1.q"], plan.params["w1.s"]
    assert wq.dtype == np.int8 and np.abs(wq).max() == 127 and ws.shape == (1, 256)
    # symmetric per output channel: every column reaches +-127
    assert (np.abs(wq).max(axis=0) == 127).all()
    assert plan.params["b1.q"].dtype == np.int32
    assert "(union $qseed" in plan.seeds
