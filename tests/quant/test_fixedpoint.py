"""Fixed-point requantization: the numpy integer reference (eqsat.quant.fixedpoint),
hwsim's `requantize` instruction, the interpreter's ops and the compiled int8 kernels
agree bit for bit, for both rounding modes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend import compile_graph
from backend.expr import requant_params
from eqsat.interpreter import evaluate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.quant.fixedpoint import multiplier_shift, requantize_fixed, rounding_shift
from hwsim import load_hardware, semantics, simulate


def test_ties_follow_the_rounding_mode() -> None:
    p = np.array([1, 3, 5, -1, -3, -5, 2, -2])  # / 2: halves except the last two
    assert rounding_shift(p, 1, "even").tolist() == [0, 2, 2, 0, -2, -2, 1, -1]
    assert rounding_shift(p, 1, "away").tolist() == [1, 2, 3, -1, -2, -3, 1, -1]


@given(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(0, 62),
    st.integers(-128, 127),
    st.sampled_from(["even", "away"]),
)
def test_reference_is_exact_rational_rounding(x, mult, shift, zp, rounding) -> None:
    """round(x * m / 2**k) computed with Python integers (no floating point at all)."""
    num, den = x * mult, 2**shift
    q, r = divmod(num, den)  # floor
    tie_up = q % 2 == 1 if rounding == "even" else num > 0
    if 2 * r > den or (2 * r == den and tie_up):
        q += 1
    want = max(-128, min(127, q + zp))
    assert int(requantize_fixed(np.array([x]), mult, shift, zp, rounding)[0]) == want


@pytest.mark.parametrize("rounding", ["even", "away"])
def test_hwsim_requantize_matches_the_reference(rounding) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        x = rng.integers(-(2**31), 2**31, size=(8, 16), dtype=np.int64)
        x[0, :4] = [0, 1, -1, 2**31 - 1]
        mult = int(rng.integers(0, 2**31))
        shift = int(rng.integers(0, 63))
        zp = int(rng.integers(-128, 128))
        np.testing.assert_array_equal(
            semantics.requantize(x, mult, shift, zp, rounding),
            requantize_fixed(x, mult, shift, zp, rounding),
        )


@given(st.floats(1e-9, 1e6, allow_nan=False))
def test_multiplier_shift_is_31_bit_and_close(scale) -> None:
    m, k = multiplier_shift(scale)
    assert 0 <= m < 2**31 and 0 <= k <= 62
    assert abs(m / 2.0**k - scale) <= 2.0**-k  # within half a step (plus rounding)
    assert requant_params(scale) == (m, k)  # the backend uses the same form


@given(st.floats(1e-9, 1e6, allow_nan=False))
def test_a_negative_scale_negates_the_multiplier(scale) -> None:
    m, k = multiplier_shift(scale)
    assert multiplier_shift(-scale) == (-m, k)


@pytest.mark.parametrize("rounding", ["even", "away"])
def test_requantize_op_uses_the_fixed_point_form(rounding) -> None:
    x = np.arange(-3000, 3000, 7, dtype=np.int32)
    attrs = REGISTRY["requantize"].bind_attrs({"scale": 0.1, "zero_point": 3, "rounding": rounding})
    got = REGISTRY["requantize"].ref([x], attrs)
    m, k = multiplier_shift(0.1)
    np.testing.assert_array_equal(got, requantize_fixed(x, m, k, 3, rounding))


def _int8_kernel(op: str, m: int, k: int, n: int, **attrs) -> tuple:
    b = GraphBuilder("k")
    x = b.leaf("input", "x", TensorType(DType.I8, (m, k)))
    w = b.leaf("param", "w", TensorType(DType.I8, (k, n)))
    bias = b.leaf("param", "b", TensorType(DType.I32, (1, n)))
    s = b.leaf("param", "s", TensorType(DType.F32, (1, n)))
    b.output("y", b.add(op, (x, w, bias, s), attrs, "y"))
    rng = np.random.default_rng(m * 1000 + n)
    bind = {
        "x": rng.integers(-128, 128, (m, k)).astype(np.int8),
        "w": rng.integers(-127, 128, (k, n)).astype(np.int8),
        "b": rng.integers(-5000, 5000, (1, n)).astype(np.int32),
        "s": (rng.random((1, n)) * 2e-3).astype(np.float32),
    }
    return b.graph, bind


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("relu", [False, True])
def test_int8_kernel_simulates_bit_exactly(hw_name, relu) -> None:
    """qmatmul + i32 bias + per-channel requantize in the epilogue: hwsim == reference."""
    hw = load_hardware(hw_name)
    graph, bind = _int8_kernel(
        "qmatmul_bias_requant",
        40,
        96,
        72,
        a_zero=-7,
        scale=0.05,
        zero_point=5,
        relu=relu,
        rounding=hw.rounding,
    )
    compiled = compile_graph(graph, hw, consts=bind)
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    got = compiled.results(result.outputs)["y"]
    want = evaluate(graph, bind)["y"]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_standalone_requantize_pc_simulates_bit_exactly() -> None:
    hw = load_hardware("datacenter")
    b = GraphBuilder("r")
    acc = b.leaf("input", "acc", TensorType(DType.I32, (3, 20, 24)))
    s = b.leaf("param", "s", TensorType(DType.F32, (24,)))
    attrs = {"scale": 0.25, "zero_point": -3, "relu": True, "rounding": "away"}
    b.output("q", b.add("requantize_pc", (acc, s), attrs, "q"))
    rng = np.random.default_rng(3)
    bind = {
        "acc": rng.integers(-40000, 40000, (3, 20, 24)).astype(np.int32),
        "s": (rng.random(24) * 1e-2).astype(np.float32),
    }
    compiled = compile_graph(b.graph, hw, consts=bind)
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    np.testing.assert_array_equal(
        compiled.results(result.outputs)["q"], evaluate(b.graph, bind)["q"]
    )


def test_requantize_pc_needs_its_scales_at_compile_time() -> None:
    from backend import BackendError

    graph, _ = _int8_kernel("qmatmul_bias_requant", 16, 16, 16, scale=0.1)
    with pytest.raises(BackendError, match="compile time"):
        compile_graph(graph, load_hardware("edge"))
