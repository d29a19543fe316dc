"""One integer semantics: the reference interpreter, hwsim and the fixed-point reference
(eqsat.quant.fixedpoint) agree bit for bit for every scale (not only m / 2**s), every
zero point and every accumulator, ties and overflow included; integer results
saturate everywhere, only the integer product's i32 accumulator wraps."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.interpreter import evaluate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.quant.fixedpoint import multiplier_shift
from hwsim import load_hardware, semantics, simulate

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
RANGE = {"i8": (-128, 127), "i32": (I32_MIN, I32_MAX)}
HW = {name: load_hardware(name) for name in ("edge", "datacenter")}
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Scales: arbitrary reals over many decades and the exact m / 2**s ones (where ties are
# reachable for small accumulators).
scales = st.one_of(
    st.floats(1e-7, 1e4, allow_nan=False, allow_infinity=False),
    st.builds(lambda m, s: m / 2.0**s, st.integers(1, 2**12), st.integers(0, 20)),
)


def exact_requantize(x: int, scale: float, zp: int, rounding: str, lo: int, hi: int) -> int:
    """round(x * m / 2**k) + zp saturated to [lo, hi] with Python integers only, (m, k)
    the fixed-point form of `scale`."""
    m, k = multiplier_shift(scale)
    num, den = x * m, 2**k
    q, r = divmod(num, den)
    tie_up = q % 2 == 1 if rounding == "even" else num > 0
    if 2 * r > den or (2 * r == den and tie_up):
        q += 1
    return max(lo, min(hi, q + zp))


def ties_of(scale: float, count: int) -> list[int]:
    """Accumulators x in the i32 range where x * m / 2**k is exactly halfway, if any:
    with m = m' * 2**t (m' odd), x = 2**(k-1-t) + n * 2**(k-t)."""
    m, k = multiplier_shift(scale)
    if m == 0 or k == 0:
        return []
    t = (m & -m).bit_length() - 1
    if k - 1 - t < 0 or k - 1 - t > 30:
        return []
    base, step = 2 ** (k - 1 - t), 2 ** (k - t)
    return [
        int(np.clip(sign * (base + n * step), I32_MIN, I32_MAX))
        for n in range(count)
        for sign in (1, -1)
    ]


def accumulators(scale: float, drawn: list[int]) -> np.ndarray:
    """Drawn values, the i32 extremes, and the ties of `scale`, as a 2-D i32 array."""
    values = [*drawn, 0, 1, -1, I32_MIN, I32_MAX, I32_MIN + 1, *ties_of(scale, 6)]
    values += [0] * (-len(values) % 8)
    return np.array(values, dtype=np.int32).reshape(-1, 8)


def simulated(graph, bind: dict, hw_name: str) -> dict[str, np.ndarray]:
    hw = HW[hw_name]
    compiled = compile_graph(graph, hw, consts=bind)
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    return compiled.results(result.outputs)


def assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@SLOW
@given(
    scale=scales,
    zp8=st.integers(-128, 127),
    zp32=st.integers(-(2**20), 2**20),
    rounding=st.sampled_from(["even", "away"]),
    drawn=st.lists(st.integers(I32_MIN, I32_MAX), min_size=1, max_size=20),
    hw_name=st.sampled_from(["edge", "datacenter"]),
)
def test_requantize_interpreter_hwsim_reference(scale, zp8, zp32, rounding, drawn, hw_name):
    """requantize to i8 and to i32: interpreter == hwsim == Python integer arithmetic."""
    x = accumulators(scale, drawn)
    b = GraphBuilder("rq")
    xin = b.leaf("input", "x", TensorType(DType.I32, x.shape))
    for name, dtype, zp in (("q8", "i8", zp8), ("q32", "i32", zp32)):
        attrs = {"scale": scale, "zero_point": zp, "dtype": dtype, "rounding": rounding}
        b.output(name, b.add("requantize", (xin,), attrs, name))
    bind = {"x": x}
    run = evaluate(b.graph, bind)
    assert_same(simulated(b.graph, bind, hw_name), run)
    for name, dtype, zp in (("q8", "i8", zp8), ("q32", "i32", zp32)):
        lo, hi = RANGE[dtype]
        want = [exact_requantize(int(v), scale, zp, rounding, lo, hi) for v in x.ravel()]
        assert run[name].ravel().tolist() == want
        m, k = multiplier_shift(scale)
        hw_values = semantics.requantize(x.astype(np.int64), m, k, zp, rounding, lo, hi)
        assert hw_values.ravel().tolist() == want


@SLOW
@given(
    channel_scales=st.lists(scales, min_size=8, max_size=8),
    signs=st.lists(st.sampled_from([1.0, -1.0]), min_size=8, max_size=8),
    out_scale=st.floats(1e-3, 1e3),
    zp=st.integers(-128, 127),
    relu=st.booleans(),
    rounding=st.sampled_from(["even", "away"]),
    drawn=st.lists(st.integers(I32_MIN, I32_MAX), min_size=8, max_size=40),
)
def test_requantize_pc_interpreter_hwsim_reference(
    channel_scales, signs, out_scale, zp, relu, rounding, drawn
):
    """Per-channel requantization, each channel its own arbitrary scale of either sign
    (the e-graph folds a batch norm's factor, of any sign, into a channel's scale)."""
    s = np.array(channel_scales, dtype=np.float32) * np.float32(out_scale)
    s = np.where(s > 0, s, np.float32(1e-7)).astype(np.float32)
    s = (s * np.array(signs, dtype=np.float32)).astype(np.float32)
    x = accumulators(abs(float(s[0] / out_scale)), drawn)
    b = GraphBuilder("rqpc")
    xin = b.leaf("input", "x", TensorType(DType.I32, x.shape))
    sin = b.leaf("param", "s", TensorType(DType.F32, (8,)))
    attrs = {"scale": out_scale, "zero_point": zp, "relu": relu, "rounding": rounding}
    b.output("q", b.add("requantize_pc", (xin, sin), attrs, "q"))
    bind = {"x": x, "s": s}
    run = evaluate(b.graph, bind)
    assert_same(simulated(b.graph, bind, "datacenter"), run)
    lo = max(-128, zp) if relu else -128
    for c in range(8):
        channel = float(np.float64(s[c]) / out_scale)
        want = [exact_requantize(int(v), channel, zp, rounding, lo, 127) for v in x[:, c]]
        assert run["q"][:, c].tolist() == want


INT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": max,
    "minimum": min,
}


@SLOW
@given(
    dtype=st.sampled_from(["i8", "i32"]),
    pairs=st.lists(
        st.tuples(st.integers(I32_MIN, I32_MAX), st.integers(I32_MIN, I32_MAX)),
        min_size=1,
        max_size=16,
    ),
    hw_name=st.sampled_from(["edge", "datacenter"]),
)
def test_integer_elementwise_saturates_everywhere(dtype, pairs, hw_name):
    """i8/i32 add, sub, mul, max, min, neg, abs: exact, then saturated to the dtype, in
    the interpreter and in hwsim alike (neither wraps)."""
    lo, hi = RANGE[dtype]
    pairs = [(max(lo, min(hi, a)), max(lo, min(hi, c))) for a, c in pairs]
    pairs += [(hi, 1), (lo, -1), (lo, lo), (hi, hi), (lo, 0)]
    pairs += [(0, 0)] * (-len(pairs) % 8)
    a = np.array([p[0] for p in pairs], DType(dtype).np_dtype).reshape(-1, 8)
    c = np.array([p[1] for p in pairs], DType(dtype).np_dtype).reshape(-1, 8)
    b = GraphBuilder("ints")
    ta = b.leaf("input", "a", TensorType(DType(dtype), a.shape))
    tc = b.leaf("input", "c", TensorType(DType(dtype), a.shape))
    for op in INT_BINARY:
        b.output(op, b.add(op, (ta, tc), {}, op))
    b.output("neg", b.add("neg", (ta,), {}, "neg"))
    b.output("abs", b.add("abs", (ta,), {}, "abs"))
    bind = {"a": a, "c": c}
    run = evaluate(b.graph, bind)
    assert_same(simulated(b.graph, bind, hw_name), run)

    def sat(v: int) -> int:
        return max(lo, min(hi, v))

    flat = list(zip(a.ravel().tolist(), c.ravel().tolist(), strict=True))
    for op, fn in INT_BINARY.items():
        assert run[op].ravel().tolist() == [sat(fn(x, y)) for x, y in flat], op
    assert run["neg"].ravel().tolist() == [sat(-x) for x, _ in flat]
    assert run["abs"].ravel().tolist() == [sat(abs(x)) for x, _ in flat]


@SLOW
@given(
    m=st.integers(1, 12),
    k=st.integers(1, 48),
    n=st.integers(1, 20),
    a_zero=st.integers(-128, 127),
    mid_scale=scales,
    out_scale=st.floats(1e-4, 10.0),
    zp=st.integers(-128, 127),
    relu=st.booleans(),
    bias_near_limit=st.booleans(),
    hw_name=st.sampled_from(["edge", "datacenter"]),
    seed=st.integers(0, 2**16),
)
def test_quantized_program_simulates_as_it_runs(
    m, k, n, a_zero, mid_scale, out_scale, zp, relu, bias_near_limit, hw_name, seed
):
    """A two-layer int8 program (qmatmul + i32 bias + per-channel requantize, then
    qmatmul + bias + dequantize, then a standalone requantize): `simulate` == `run` bit
    for bit, with arbitrary channel scales and biases at the i32 limit (the bias add
    saturates in both)."""
    rng = np.random.default_rng(seed)
    rounding = HW[hw_name].rounding
    b = GraphBuilder("q2")
    x = b.leaf("input", "x", TensorType(DType.I8, (m, k)))
    w1 = b.leaf("param", "w1", TensorType(DType.I8, (k, n)))
    b1 = b.leaf("param", "b1", TensorType(DType.I32, (1, n)))
    s1 = b.leaf("param", "s1", TensorType(DType.F32, (1, n)))
    w2 = b.leaf("param", "w2", TensorType(DType.I8, (n, n)))
    b2 = b.leaf("param", "b2", TensorType(DType.I32, (1, n)))
    s2 = b.leaf("param", "s2", TensorType(DType.F32, (1, n)))
    attrs = {"a_zero": a_zero, "scale": out_scale, "zero_point": zp, "relu": relu}
    h = b.add("qmatmul_bias_requant", (x, w1, b1, s1), {**attrs, "rounding": rounding}, "h")
    y = b.add("qmatmul_bias_dequant", (h, w2, b2, s2), {"a_zero": zp}, "y")
    acc = b.add("add", (b.add("qmatmul", (h, w2), {"a_zero": zp}, "acc"), b2), {}, "accb")
    rq = {"scale": mid_scale, "zero_point": zp, "dtype": "i8", "rounding": rounding}
    b.output("y", y)
    b.output("r", b.add("requantize", (acc,), rq, "r"))

    def bias() -> np.ndarray:
        if bias_near_limit:  # within 1000 of +-2**31: most bias adds overflow
            edge = I32_MAX - rng.integers(0, 1000, (1, n))
            return (edge * rng.choice([-1, 1], (1, n))).astype(np.int32)
        return rng.integers(-50_000, 50_000, (1, n)).astype(np.int32)

    bind = {
        "x": rng.integers(-128, 128, (m, k)).astype(np.int8),
        "w1": rng.integers(-127, 128, (k, n)).astype(np.int8),
        "b1": bias(),
        "s1": (rng.random((1, n)) * mid_scale * out_scale).astype(np.float32),
        "w2": rng.integers(-127, 128, (n, n)).astype(np.int8),
        "b2": bias(),
        "s2": (rng.random((1, n)) * 1e-3).astype(np.float32),
    }
    assert_same(simulated(b.graph, bind, hw_name), evaluate(b.graph, bind))
