"""SmoothQuant (`--smooth-alpha`): the factor, the exactness of the rewrite, the folds
that make it free, and the accuracy it buys on outlier channels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.interpreter import evaluate, random_bindings
from eqsat.pipeline import optimize
from eqsat.quant import cli as quant_cli
from eqsat.quant.calibrate import calibration_samples
from eqsat.quant.passes import plan_quantization
from eqsat.quant.smooth import smoothing_factor
from frontend import check_model, parse_model
from hwsim import load_hardware
from tests.quant.helpers import args, model, rules

EDGE = load_hardware("edge")

OUTLIERS = """model outliers {
  input x: f32[64, 256]
  param g: f32[256]
  param w1: f32[256, 256]
  param w_gate: f32[256, 512]
  param w_up: f32[256, 512]
  param w_down: f32[512, 256]
  h = rmsnorm(x, g, eps=0.000001)
  y = matmul(h, w1)
  f = matmul(mul(silu(matmul(h, w_gate)), matmul(h, w_up)), w_down)
  output y, f
}
"""


@given(
    st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=8),
    st.lists(st.floats(1e-3, 1e3), min_size=8, max_size=8),
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
)
def test_factor_balances_activation_and_weight_ranges(xmax, wmax, alpha) -> None:
    x = np.array(xmax)
    w = np.array(wmax[: len(xmax)])
    s = smoothing_factor(x, w, alpha).astype(np.float64)
    np.testing.assert_allclose(s, x**alpha / w ** (1 - alpha), rtol=1e-6)
    if alpha == 0.5:  # both sides end with the same range: max|x / s| = max|s * w|
        np.testing.assert_allclose(x / s, w * s, rtol=1e-5)


def test_dead_channels_keep_factor_one() -> None:
    s = smoothing_factor(np.array([0.0, 4.0]), np.array([2.0, 0.0]), 0.5)
    assert s.tolist() == [1.0, 1.0]


def outlier_case():
    """The model, with outlier channels: 8 of gamma's 256 entries 40x the rest, and 8
    of the up projection's 512 columns 30x (so 8 channels of the gated product)."""
    graph = check_model(parse_model(OUTLIERS), {})
    bindings = random_bindings(graph, 0)
    bindings["g"] = np.ones(256, np.float32)
    bindings["g"][::32] = 40.0
    bindings["w_up"] = bindings["w_up"].copy()
    bindings["w_up"][:, ::64] *= 30.0
    return graph, bindings


def quantize(graph, bindings, alpha):
    run = quant_cli.prepare(
        args(smooth_alpha=alpha), graph, EDGE.rounding, bindings, warn=lambda m: None
    )
    result = optimize(run.plan.graph, rules(True), EDGE, facts=run.plan.seeds, baseline=graph)
    quant_cli.measure(run, graph, result.graph)
    return run, result


def test_the_rewrite_is_exact_before_quantization() -> None:
    """The annotated model (observe = x) with x * (1/s) and s * w computes the model."""
    graph, bindings = outlier_case()
    params = {k: v for k, v in bindings.items() if k != "x"}
    plan = plan_quantization(
        graph, params, calibration_samples(graph, None), "even", smooth_alpha=0.5
    )
    assert plan.smoothed == 2  # the rmsnorm output and the gated product
    want = evaluate(graph, bindings)
    got = evaluate(plan.graph, {**bindings, **plan.params})
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=2e-4)


@pytest.fixture(scope="module")
def both():
    graph, bindings = outlier_case()
    return quantize(graph, bindings, None), quantize(graph, bindings, 0.5)


def test_smoothing_recovers_outlier_channels(both) -> None:
    (plain, _), (smooth, _) = both
    assert plain.sqnr["y"] < 30.0 and smooth.sqnr["y"] >= 35.0
    # the gated product also loses int8 steps to its heavy tails (no channel structure)
    for name in ("y", "f"):
        assert smooth.sqnr[name] >= plain.sqnr[name] + 8.0, name


def test_the_factors_fold_away(both) -> None:
    """No kernel divides by s: 1/s lives in gamma and in the up projection's int8
    columns, s in the weights; the program runs no kind of kernel the plain one does
    not. The plain program may merge the two products that read the normalized x into
    one (fusion.rules' merge of products sharing an input, on the f32 weights before
    their quantization); the smoothed weights are quantized apart, so within 2%."""
    (_, plain), (_, smooth) = both

    def kernels(g):
        return {n.op for _, n in g if n.op not in ("param", "input", "const")}

    assert kernels(smooth.graph) <= kernels(plain.graph)
    assert "div" not in kernels(smooth.graph)
    read = {str(n.attr("name")) for _, n in smooth.graph.params}
    assert not any(name.endswith("smooth_inv") for name in read)
    assert "g.smooth" in read and "w_up.smooth_cols.q" in read
    assert smooth.after.cycles <= 1.02 * plain.after.cycles


def test_llama_block_smooths_both_norms_and_the_gated_product() -> None:
    graph = model("llama_block", {"S": 32})
    bindings = random_bindings(graph, 0)
    params = {k: v for k, v in bindings.items() if k != "x"}
    plan = plan_quantization(
        graph, params, calibration_samples(graph, None), "even", smooth_alpha=0.5
    )
    assert plan.smoothed == 3
    assert {"w_gate.smooth", "w_up.smooth", "w_down.smooth", "wq.smooth"} <= set(plan.params)
