"""The calibration methods (minmax, percentile, mse, entropy) on distributions whose
answer is known, their vectorized pricing against direct loops, and each method end
to end through the quantizer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.quant.calibration_methods import (
    METHODS,
    choose_range,
    entropy_threshold,
    kl_divergences,
    quantization_mse,
)
from eqsat.quant.qparams import activation_qparams, choose_qparams
from tests.quant.helpers import model, quantized

RNG = np.random.default_rng(7)
UNIFORM = RNG.uniform(-2.0, 3.0, 400_000).astype(np.float32)
LAPLACE = RNG.laplace(0.0, 1.0, 1_000_000).astype(np.float32)
GAUSS_OUTLIERS = np.concatenate(
    [RNG.standard_normal(1_000_000), [14.0, -13.0, 15.0, 12.0, -14.5]]
).astype(np.float32)


def int8_error(data: np.ndarray, lo: float, hi: float) -> float:
    """Mean squared error of quantizing `data` to int8 on the range (lo, hi)."""
    scale, zp = activation_qparams(lo, hi)
    q = np.clip(np.round(data / scale) + zp, -128, 127)
    return float(np.mean(((q - zp) * scale - data) ** 2))


def test_minmax_is_the_extremes() -> None:
    assert choose_range(UNIFORM, "minmax") == (float(UNIFORM.min()), float(UNIFORM.max()))


def test_on_a_uniform_distribution_no_method_clips() -> None:
    """Nothing is rarer than anything else: the best range is the whole range."""
    lo, hi = float(UNIFORM.min()), float(UNIFORM.max())
    for method in ("mse", "entropy"):
        clo, chi = choose_range(UNIFORM, method)
        assert clo == pytest.approx(lo, rel=0.02) and chi == pytest.approx(hi, rel=0.02), method
    # and clipping it costs: minmax has less error than a clipped range
    assert int8_error(UNIFORM, lo, hi) < int8_error(UNIFORM, 0.9 * lo, 0.9 * hi)


def test_percentile_saturates_rare_outliers() -> None:
    lo, hi = choose_range(GAUSS_OUTLIERS, "minmax")
    assert hi == 15.0 and lo == -14.5
    plo, phi = choose_range(GAUSS_OUTLIERS, "percentile", 99.99)
    assert -4.5 < plo < -3.0 and 3.0 < phi < 4.5


@pytest.mark.parametrize("method", ["percentile", "mse", "entropy"])
def test_clipping_methods_ignore_five_outliers_in_a_million(method) -> None:
    lo, hi = choose_range(GAUSS_OUTLIERS, method)
    # (mse weighs the outliers' clipping error too: it stops short of the body)
    assert -6.0 < lo < -2.5 and 2.5 < hi < (9.0 if method == "mse" else 6.0)
    body = GAUSS_OUTLIERS[:-5]  # the million ordinary values get 3x finer steps
    assert int8_error(body, lo, hi) < int8_error(body, -14.5, 15.0) / 5
    assert int8_error(GAUSS_OUTLIERS, lo, hi) < int8_error(GAUSS_OUTLIERS, -14.5, 15.0)


def test_mse_finds_the_known_laplace_optimum() -> None:
    """The MSE-optimal 8-bit clip of a Laplace(b) distribution is about 9.9 b (Banner et
    al., ACIQ), well inside its extremes (about 14 b in a million samples)."""
    lo, hi = choose_range(LAPLACE, "mse")
    assert -11.0 < lo < -8.8 and 8.8 < hi < 11.0
    best = int8_error(LAPLACE, lo, hi)
    assert best < int8_error(LAPLACE, *choose_range(LAPLACE, "minmax"))
    for f in (0.8, 1.25):  # a local minimum of the real error, not just of the estimate
        assert best <= int8_error(LAPLACE, f * lo, f * hi)


def test_one_sided_data_keeps_zero_as_an_end() -> None:
    relu = np.maximum(RNG.standard_normal(200_000), 0.0).astype(np.float32)
    for method in METHODS:
        lo, hi = choose_range(relu, method)
        assert lo == 0.0 and 2.0 < hi <= float(relu.max()), method


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=8, max_size=40),
    st.floats(-3.0, 0.0),
    st.floats(0.0, 3.0),
)
def test_vectorized_mse_is_the_direct_sum(counts, lo, hi) -> None:
    counts = np.array(counts, dtype=np.float64)
    centers = np.linspace(-3.0, 3.0, counts.size)
    got = quantization_mse(centers, counts, np.array([lo]), np.array([hi]))[0]
    step = (hi - lo) / 255
    err = [step**2 / 12 if lo <= c <= hi else (c - np.clip(c, lo, hi)) ** 2 for c in centers]
    want = float(np.dot(err, counts) / max(counts.sum(), 1.0))
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def kl_direct(hist: np.ndarray, cut: int, levels: int) -> float:
    """TensorRT's calibration step for one cut, written as a loop."""
    p = hist[:cut].astype(np.float64).copy()
    p[-1] += hist[cut:].sum()
    q = np.zeros(cut)
    for k in range(levels):
        members = [j for j in range(cut) if j * levels // cut == k]
        total = hist[members].sum()
        nonzero = [j for j in members if hist[j] > 0]
        for j in nonzero:
            q[j] = total / len(nonzero)
    p, q = p / p.sum(), q / q.sum()
    return float(
        sum(pj * np.log(pj / (q[j] if q[j] > 0 else 1e-4)) for j, pj in enumerate(p) if pj > 0)
    )


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=16, max_size=48), st.sampled_from([4, 8]))
def test_vectorized_kl_is_the_loop(hist, levels) -> None:
    hist = np.array(hist, dtype=np.float64)
    if hist.sum() == 0:
        hist[0] = 1
    got = kl_divergences(hist, levels)
    want = [kl_direct(hist, cut, levels) for cut in range(levels, hist.size + 1)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_entropy_threshold_of_a_gaussian() -> None:
    """TensorRT's KL calibration keeps a Gaussian's body (a few sigma) and drops the tail."""
    t = entropy_threshold(GAUSS_OUTLIERS)
    assert 3.0 < t < 5.5


@pytest.mark.parametrize("method", METHODS)
def test_each_method_through_the_quantizer(method) -> None:
    """Every method calibrates the MLP to an int8 program within 30 dB of the float one,
    and the calibrated ranges are the method's ranges."""
    q, _ = quantized(model("mlp"), calibration=method)
    assert min(q.quant.sqnr.values()) >= 30.0
    assert method in q.quant.calibration or method == "minmax"
    t = q.quant.plan.tensors[1]  # the second layer's input: post-ReLU
    assert t.lo == 0.0 and t.hi > 0.0


def test_symmetric_and_auto_activation_schemes() -> None:
    scale, zp = choose_qparams(-1.0, 0.95, "symmetric")
    assert zp == 0 and scale == pytest.approx(1.0 / 127, rel=1e-6)
    assert choose_qparams(-1.0, 0.95, "auto") == (scale, 0)  # balanced: symmetric
    assert choose_qparams(0.0, 4.0, "auto") == activation_qparams(0.0, 4.0)  # post-ReLU
    assert choose_qparams(0.0, 4.0, "auto")[1] == -128  # all 256 steps on [0, 4]
    assert choose_qparams(-0.2, 4.0, "auto")[1] != 0  # GELU/SiLU-like: skewed


def test_auto_scheme_through_the_quantizer() -> None:
    q, _ = quantized(model("mlp"), activation_scheme="auto")
    first, second = q.quant.plan.tensors[:2]
    assert first.zero_point == 0  # Gaussian input: symmetric
    assert second.zero_point == -128  # post-ReLU: asymmetric
    assert min(q.quant.sqnr.values()) >= 30.0
