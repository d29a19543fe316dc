"""Tiled matmul programs: numerics against numpy, overlap, and the cost model's accuracy."""

from fractions import Fraction

import numpy as np
import pytest
from hwsim_programs import tiled_matmul
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim import KernelWork, kernel_cycles, load_hardware, simulate
from hwsim.dtypes import round_bf16

EDGE = load_hardware("edge")
DC = load_hardware("datacenter")
RNG = np.random.default_rng(7)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize(
    ("m", "n", "k", "tile"),
    [(64, 48, 80, (32, 16, 32)), (37, 21, 50, (16, 16, 16)), (20, 30, 40, (32, 32, 64))],
)
def test_f32_matches_numpy(m, n, k, tile):
    x, w = floats(m, k), floats(k, n)
    r = simulate(tiled_matmul(m, n, k, *tile, "f32", act="relu"), EDGE, {"x": x, "w": w})
    np.testing.assert_allclose(r.outputs["y"], np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
    assert r.report.macs == {"f32": m * n * k}


def test_bf16_matches_rounded_reference():
    m, n, k = 48, 32, 64
    x, w = floats(m, k), floats(k, n)
    r = simulate(tiled_matmul(m, n, k, 16, 16, 32, "bf16"), EDGE, {"x": x, "w": w})
    y = r.outputs["y"]
    assert (round_bf16(y) == y).all()  # outputs are bf16 values
    ref = round_bf16(round_bf16(x).astype(np.float64) @ round_bf16(w).astype(np.float64))
    np.testing.assert_allclose(y, ref, rtol=2**-7, atol=1e-6)


def test_double_buffering_overlaps_transfer_and_compute():
    m, n, k = 64, 64, 128
    feeds = {"x": floats(m, k), "w": floats(k, n)}
    dbl = simulate(tiled_matmul(m, n, k, 16, 16, 32, "f32"), EDGE, feeds).report
    one = simulate(tiled_matmul(m, n, k, 16, 16, 32, "f32", double=False), EDGE, feeds).report
    parts = dbl.busy["load"] + dbl.busy["store"] + dbl.busy["matrix"] + dbl.busy["vector"]
    assert dbl.cycles < one.cycles
    assert dbl.cycles < parts + dbl.busy["launch"]
    assert dbl.cycles >= dbl.roofline_cycles


def test_int8_accumulates_exactly_in_i32():
    m, n, k = 40, 24, 96
    x, w = ints(m, k), ints(k, n)
    r = simulate(tiled_matmul(m, n, k, 16, 16, 32, "i8"), EDGE, {"x": x, "w": w})
    assert r.outputs["y"].dtype == np.int32
    assert (r.outputs["y"] == x.astype(np.int64) @ w.astype(np.int64)).all()


def reference_requant(acc, mult, shift, zp, rounding):
    """Exact rational reference: round(acc * mult / 2**shift) + zp, saturated to i8."""

    def one(v: int) -> int:
        q = Fraction(v * mult, 2**shift)
        if rounding == "even":
            r = round(q)  # Python rounds Fractions half to even
        else:
            r = int((abs(q) + Fraction(1, 2)) // 1) * (1 if q >= 0 else -1)
        return min(127, max(-128, r + zp))

    return np.vectorize(one, otypes=[np.int64])(acc)


@pytest.mark.parametrize("rounding", ["even", "away"])
@pytest.mark.parametrize(
    ("mult", "shift", "zp"), [(1 << 30, 38, 3), (1518500250, 40, -5), (3, 1, 0)]
)
def test_int8_requantize_bit_exact(rounding, mult, shift, zp):
    m, n, k = 32, 32, 64
    x, w = ints(m, k), ints(k, n)
    p = tiled_matmul(m, n, k, 16, 16, 64, "i8", requant=(mult, shift, zp, rounding))
    y = simulate(p, EDGE, {"x": x, "w": w}).outputs["y"]
    acc = x.astype(np.int64) @ w.astype(np.int64)
    assert y.dtype == np.int8
    assert (y == reference_requant(acc, mult, shift, zp, rounding)).all()


def test_requantize_ties():
    from hwsim.semantics import requantize

    x = np.array([1, 3, 5, -1, -3, -5, 2, -2])  # x/2: halves and one exact
    assert requantize(x, 1, 1, 0, "even").tolist() == [0, 2, 2, 0, -2, -2, 1, -1]
    assert requantize(x, 1, 1, 0, "away").tolist() == [1, 2, 3, -1, -2, -3, 1, -1]
    assert requantize(np.array([10**6, -(10**6)]), 1, 0, 0, "even").tolist() == [127, -128]


CASES = [
    (EDGE, 64, 64, 64, "i8"),
    (EDGE, 128, 256, 256, "f32"),
    (EDGE, 100, 70, 50, "bf16"),
    (EDGE, 128, 768, 768, "i8"),
    (DC, 256, 512, 512, "bf16"),
    (DC, 128, 768, 768, "f32"),
]


@pytest.mark.parametrize(("hw", "m", "n", "k", "dtype"), CASES)
def test_cost_model_predicts_simulator(hw, m, n, k, dtype):
    s = {"i8": 1, "bf16": 2, "f32": 4}[dtype]
    out = 4 if dtype == "i8" else s
    work = KernelWork(
        "matmul",
        dtype,
        macs=m * n * k,
        m=m,
        n=n,
        k=k,
        bytes_in=(m * k + k * n) * s,
        bytes_out=m * n * out,
    )
    cost = kernel_cycles(hw, work)
    x, w = (ints(m, k), ints(k, n)) if dtype == "i8" else (floats(m, k), floats(k, n))
    r = simulate(
        tiled_matmul(m, n, k, *cost.tile, dtype), hw, {"x": x, "w": w}, check_races=False
    ).report
    assert abs(cost.cycles - r.cycles) <= 0.15 * r.cycles, (cost, r.cycles)
    assert cost.dram_bytes == r.dram_bytes


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(1, 40),
    st.sampled_from([4, 8, 16]),
    st.sampled_from([4, 8, 16]),
    st.sampled_from([4, 8, 16, 64]),
    st.sampled_from(["i8", "f32"]),
    st.booleans(),
)
def test_any_tiling_computes_the_product(m, n, k, tm, tn, tk, dtype, double):
    x, w = (ints(m, k), ints(k, n)) if dtype == "i8" else (floats(m, k), floats(k, n))
    p = tiled_matmul(m, n, k, tm, tn, tk, dtype, double=double)
    y = simulate(p, EDGE, {"x": x, "w": w}).outputs["y"]
    if dtype == "i8":
        assert (y == x.astype(np.int64) @ w.astype(np.int64)).all()
    else:
        np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
