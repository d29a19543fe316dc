"""The elementwise math and mask ops (erf, pow, clip, abs, log, sin, cos, floor, ceil,
trunc, hard_sigmoid, hard_swish, comparisons, logic, isnan, where, gelu's
`approximate`, integer div, silu): reference semantics against independent numpy /
scipy / Python arithmetic, typed errors, the e-graph's shape analysis, and the rules
that involve them."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.interpreter import evaluate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.rules import default_rules_dir, load_rules, load_rules_text
from eqsat.verify.check import FAILED, PASSED, check_direction
from eqsat.verify.guards import hardware_facts
from eqsat.verify.rules import select
from frontend import check_model, parse_model
from frontend import errors as fe
from tests.strategies import scaled
from tests.test_egraph_analysis import assert_analysis_matches

F32, BF16, I8, I32 = DType.F32, DType.BF16, DType.I8, DType.I32
NAN, INF = float("nan"), float("inf")


def run(op: str, *arrays: np.ndarray, **attrs) -> np.ndarray:
    """Evaluate op(arrays..., **attrs) as a one-node graph with the interpreter."""
    b = GraphBuilder("t")
    args = []
    for i, a in enumerate(arrays):
        dtype = {np.float32: F32, np.int8: I8, np.int32: I32}[a.dtype.type]
        args.append(b.leaf("input", f"a{i}", TensorType(dtype, a.shape)))
    b.output("out", b.add(op, args, attrs))
    return evaluate(b.graph, {f"a{i}": a for i, a in enumerate(arrays)})["out"]


def f32(*values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def grid(lo: float, hi: float, n: int = 201) -> np.ndarray:
    return np.linspace(lo, hi, n, dtype=np.float32)


def close_to_f64(got: np.ndarray, want: np.ndarray, ulps: float = 4) -> None:
    """f32 results within a few f32 ulps of the f64 value."""
    want = np.asarray(want, dtype=np.float64)
    tol = ulps * np.finfo(np.float32).eps * np.maximum(np.abs(want), 1e-30)
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol + 1e-37)


# ------------------------------------------------------------- float functions


def test_erf_and_exact_gelu_against_scipy():
    x = grid(-6, 6)
    close_to_f64(run("erf", x), scipy.special.erf(x.astype(np.float64)))
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + scipy.special.erf(x64 / math.sqrt(2)))
    got = run("gelu", x, approximate="none")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    tanh_form = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    np.testing.assert_allclose(run("gelu", x), tanh_form, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(run("gelu", x, approximate="tanh"), run("gelu", x))
    # the two forms are different functions (up to ~1e-3 around |x| ~ 2)
    assert 1e-4 < np.max(np.abs(run("gelu", x) - got)) < 1e-2


@pytest.mark.parametrize(
    ("op", "fn"),
    [("log", np.log), ("sin", np.sin), ("cos", np.cos)],
)
def test_transcendental_functions_against_numpy_f64(op, fn):
    x = grid(0.01, 20) if op == "log" else grid(-10, 10)
    np.testing.assert_allclose(run(op, x), fn(x.astype(np.float64)), rtol=1e-6, atol=1e-6)
    assert run(op, x).dtype == np.float32


def test_log_edges():
    got = run("log", f32(0.0, -1.0, INF, NAN))
    assert got[0] == -INF and np.isnan(got[1]) and got[2] == INF and np.isnan(got[3])


def test_rounding_functions():
    x = f32(-2.7, -2.5, -2.0, -0.5, -0.0, 0.3, 0.5, 1.5, 2.5, 2.7, INF, -INF)
    assert run("floor", x).tolist() == [-3, -3, -2, -1, 0, 0, 0, 1, 2, 2, INF, -INF]
    assert run("ceil", x).tolist() == [-2, -2, -2, -0.0, 0, 1, 1, 2, 3, 3, INF, -INF]
    # toward zero, unlike cast's round-to-nearest-even
    assert run("trunc", x).tolist() == [-2, -2, -2, 0, 0, 0, 0, 1, 2, 2, INF, -INF]
    assert run("cast", x[:10], dtype="i32").tolist() == [-3, -2, -2, 0, 0, 0, 0, 2, 2, 3]


def test_abs_floats_and_integers():
    np.testing.assert_array_equal(run("abs", f32(-1.5, 0.0, 2.0, -INF)), f32(1.5, 0, 2, INF))
    assert run("abs", np.array([-5, 0, 7, -127], np.int8)).tolist() == [5, 0, 7, 127]
    # the type's minimum saturates, like every integer result of the reference
    assert run("abs", np.array([-128], np.int8)).tolist() == [127]


def test_hard_sigmoid_and_hard_swish_against_f64():
    x = grid(-8, 8, 321)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(run("hard_sigmoid", x), np.clip(0.2 * x64 + 0.5, 0, 1), atol=1e-7)
    got = run("hard_sigmoid", x, alpha=-0.5, beta=0.25)
    np.testing.assert_allclose(got, np.clip(-0.5 * x64 + 0.25, 0, 1), atol=1e-7)
    relu6 = np.clip(x64 + 3, 0, 6)
    np.testing.assert_allclose(run("hard_swish", x), x64 * relu6 / 6, rtol=1e-6, atol=1e-6)
    assert np.isnan(run("hard_swish", f32(NAN))[0])


def test_silu_is_x_times_sigmoid():
    x = grid(-30, 30)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(run("silu", x), x64 / (1 + np.exp(-x64)), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ pow, div


def test_float_pow_is_numpy_power_in_f32():
    a, b = grid(0.1, 4, 40), grid(-3, 3, 40)
    np.testing.assert_allclose(run("pow", a, b), a.astype(np.float64) ** b, rtol=2e-6)
    assert np.isnan(run("pow", f32(-2.0), f32(0.5))[0])
    assert run("pow", f32(NAN, INF, 0.0), f32(0.0, 0.0, 0.0)).tolist() == [1, 1, 1]


def _int_pow(a: int, b: int) -> int:
    """Python's exact power; a negative exponent truncates 1 / a**-b toward zero."""
    if b >= 0:
        return a**b
    return 0 if a == 0 else int(Fraction(1, a ** (-b)))


def test_integer_pow_exact_and_negative_exponents():
    a, b = np.meshgrid(np.arange(-4, 5), np.arange(-4, 6))
    a, b = a.astype(np.int32), b.astype(np.int32)
    want = np.vectorize(_int_pow)(a, b)
    np.testing.assert_array_equal(run("pow", a, b), want)
    # (-1) ** -3 = -1, 1 ** -5 = 1, 2 ** -1 = 0, 0 ** -2 = 0 (the defined value)
    got = run("pow", np.array([-1, 1, 2, 0], np.int8), np.array([-3, -5, -1, -2], np.int8))
    assert got.tolist() == [-1, 1, 0, 0]
    # saturates in the type, like every integer result
    assert run("pow", np.array([3], np.int8), np.array([5], np.int8)).tolist() == [127]


def test_integer_div_truncates_toward_zero_and_zero_divisor_gives_zero():
    a, b = np.meshgrid(np.arange(-9, 10), np.arange(-4, 5))
    a, b = a.astype(np.int32), b.astype(np.int32)
    want = np.vectorize(lambda p, q: 0 if q == 0 else int(Fraction(int(p), int(q))))(a, b)
    np.testing.assert_array_equal(run("div", a, b), want)
    got = run("div", np.array([7, -7, 7, -7, 5], np.int8), np.array([2, 2, -2, -2, 0], np.int8))
    assert got.tolist() == [3, -3, -3, 3, 0]
    big = np.array([2**31 - 1, -(2**31)], np.int32)
    assert run("div", big, np.array([3, 7], np.int32)).tolist() == [715827882, -306783378]
    np.testing.assert_array_equal(run("div", f32(1.0, -3.0), f32(4.0, 0.0)), f32(0.25, -INF))


# ------------------------------------------------------------------------ clip


def test_clip_floats():
    x = f32(-3.0, -0.5, 0.0, 0.7, 9.0, NAN, -INF, INF)
    got = run("clip", x, min=-1.0, max=0.5)
    np.testing.assert_array_equal(got[:5], np.clip(x[:5], -1, 0.5))
    assert np.isnan(got[5]) and got[6] == -1 and got[7] == 0.5
    np.testing.assert_array_equal(run("clip", x), x)  # defaults: no bound
    assert run("clip", x, min=0.0)[:5].tolist() == [0, 0, 0, np.float32(0.7), 9]
    # min > max gives max everywhere (as ONNX)
    assert run("clip", x[:5], min=2.0, max=1.0).tolist() == [1.0] * 5
    # bounds rounded to f32, like every float constant
    assert run("clip", f32(1.0), max=0.1)[0] == np.float32(0.1)


def test_clip_integers_bounds_act_on_integer_values():
    x = np.arange(-10, 11, dtype=np.int32)
    assert run("clip", x, min=-2.5, max=3.5).tolist() == list(np.clip(np.arange(-10, 11), -2, 3))
    i8 = np.array([-128, -5, 0, 5, 127], np.int8)
    assert run("clip", i8, min=-1000.0, max=1000.0).tolist() == i8.tolist()
    assert run("clip", i8, min=200.0).tolist() == [127] * 5  # saturated bound
    assert run("clip", i8, max=-1e30).tolist() == [-128] * 5
    assert run("clip", i8, min=2.5, max=2.7).tolist() == [2] * 5  # ceil 3 > floor 2


# ------------------------------------------------------------------ masks


def test_comparisons_broadcast_and_are_false_for_nan():
    a = f32(1.0, 2.0, NAN).reshape(3, 1)
    b = f32(2.0, NAN)
    for op, fn in [
        ("equal", np.equal),
        ("less", np.less),
        ("less_equal", np.less_equal),
        ("greater", np.greater),
        ("greater_equal", np.greater_equal),
    ]:
        got = run(op, a, b)
        assert got.dtype == np.int8 and got.shape == (3, 2)
        np.testing.assert_array_equal(got, fn(a, b).astype(np.int8))
        assert not got[2].any() and not got[:, 1].any()  # nan on either side: 0
    ints = run("less", np.array([-128, 0, 127], np.int8), np.array([0], np.int8))
    assert ints.tolist() == [1, 0, 0]


def test_logic_counts_nonzero_as_true_and_may_mix_integer_types():
    a = np.array([0, 0, 3, -7], np.int8)
    b = np.array([0, 100000, 0, -1], np.int32)
    assert run("logical_and", a, b).tolist() == [0, 0, 0, 1]
    assert run("logical_or", a, b).tolist() == [0, 1, 1, 1]
    assert run("logical_xor", a, b).tolist() == [0, 1, 1, 0]
    assert run("logical_not", b).tolist() == [1, 0, 1, 0]
    assert run("logical_not", b).dtype == np.int8


def test_isnan():
    assert run("isnan", f32(NAN, 0.0, INF, -NAN)).tolist() == [1, 0, 0, 1]


def test_where_picks_values_exactly_and_broadcasts_all_three():
    cond = np.array([[1], [0], [-3]], np.int8)  # nonzero selects a
    a = f32(-INF, NAN, 3.4e38, -0.0)
    b = f32(7.0).reshape(1, 1)
    got = run("where", cond, a, b)
    assert got.shape == (3, 4)
    np.testing.assert_array_equal(got[0], a)
    assert np.signbit(got[0, 3]) and np.isnan(got[2, 1])
    assert (got[1] == 7).all()
    assert run("where", cond, np.int32([5]), np.int32([-5])).tolist() == [[5], [-5], [5]]


# -------------------------------------------------------------- type errors


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        ("gelu", [F32], {"approximate": "exact"}, "approximate must be tanh or none"),
        ("matmul_bias_gelu", None, {"approximate": "erf"}, "approximate must be tanh or none"),
        ("erf", [I32], {}, "'erf' needs a floating-point operand"),
        ("trunc", [I8], {}, "'trunc' needs a floating-point operand"),
        ("isnan", [I8], {}, "'isnan' needs a floating-point operand"),
        ("pow", [F32, I32], {}, "'pow' needs operands of one dtype"),
        ("less", [F32, BF16], {}, "'less' needs operands of one dtype"),
        ("logical_and", [F32, I8], {}, "'logical_and' needs integer operands"),
        ("logical_not", [BF16], {}, "'logical_not' needs integer operands"),
        ("where", [F32, F32, F32], {}, "the condition must be an i8 mask"),
        ("where", [I8, F32, I32], {}, "'where' needs operands of one dtype"),
        ("clip", [F32], {"min": NAN}, "min must be a number or +-inf, not nan"),
        ("hard_sigmoid", [F32], {"alpha": INF}, "alpha must be a finite f32 number"),
        ("hard_sigmoid", [F32], {"beta": 1e39}, "beta must be a finite f32 number"),
    ],
)
def test_type_errors(op, types, attrs, message):
    opdef = REGISTRY[op]
    if types is None:  # x [2, 3] @ w [3, 4] + b [4]
        ts = [TensorType(F32, (2, 3)), TensorType(F32, (3, 4)), TensorType(F32, (4,))]
    else:
        ts = [TensorType(t, (2, 3)) for t in types]
    with pytest.raises(OpTypeError, match=re.escape(message)):
        opdef.type_of(ts, opdef.bind_attrs(attrs))


def test_where_shapes_that_do_not_broadcast():
    ts = [TensorType(I8, (2, 3)), TensorType(F32, (3,)), TensorType(F32, (2,))]
    with pytest.raises(OpTypeError, match="do not broadcast"):
        REGISTRY["where"].type_of(ts, {})


def test_model_errors_carry_the_position():
    source = "model m {\n  input x: f32[4]\n  y = gelu(x, approximate=fast)\n  output y\n}\n"
    with pytest.raises(fe.ModelError, match="approximate must be tanh or none") as info:
        check_model(parse_model(source, "m.model"))
    assert (info.value.file, info.value.line) == ("m.model", 3)
    source = "model m {\n  input x: f32[4]\n  y = where(x, x, x)\n  output y\n}\n"
    with pytest.raises(fe.ModelError, match="i8 mask"):
        check_model(parse_model(source, "m.model"))


def test_models_with_the_new_ops_parse_and_check():
    source = """model m {
      input x: f32[2, 3]
      input m: i8[1, 3]
      y = where(logical_and(m, greater(x, clip(x, min=-inf, max=0.5))), gelu(x, approximate=none),
                hard_sigmoid(x, alpha=0.25))
      z = div(pow(cast(x, dtype=i32), cast(x, dtype=i32)), cast(x, dtype=i32))
      output y, z
    }"""
    graph = check_model(parse_model(source))
    assert [graph.nodes[i].type for _, i in graph.outputs] == [
        TensorType(F32, (2, 3)),
        TensorType(I32, (2, 3)),
    ]


# -------------------------------------------------------------- e-graph analysis


@pytest.mark.parametrize(
    ("op", "types", "attrs"),
    [
        ("where", [(I8, (3, 1, 1)), (F32, (1, 4, 1)), (F32, (5,))], {}),
        ("where", [(I8, ()), (I32, (2, 2)), (I32, (1,))], {}),
        ("less", [(BF16, (2, 1)), (BF16, (3,))], {}),
        ("logical_or", [(I8, (4,)), (I32, (2, 1))], {}),
        ("clip", [(I8, (2,))], {"min": -INF, "max": 3.5}),
        ("gelu", [(BF16, (2, 3))], {"approximate": "none"}),
        ("isnan", [(F32, (2, 2))], {}),
    ],
)
def test_egraph_shape_and_dtype_analysis(op, types, attrs):
    b = GraphBuilder("t")
    args = [b.leaf("input", f"a{i}", TensorType(d, s)) for i, (d, s) in enumerate(types)]
    b.output("out", b.add(op, args, attrs))
    assert_analysis_matches(b.graph)


# -------------------------------------------------------------------- rules

FACTS = hardware_facts("edge")

# Each of these drops a guard or an attribute that rules/ keeps: verify-rules must
# catch all of them (integer div truncates, the gelu forms differ).
UNSOUND = """
ruleset scratch
# a / b = a * (1 / b) without the float guard
div-to-mul-any:  div(a, b) => mul(a, reciprocal(b))
# x / c = x * (1 / c) without the float guard
div-by-scalar-any: div(x, const(value=A, shape=[])) => mul(x, const(value=1.0 / A, shape=[], dtype=dtype(x)))
                 if A != 0.0
# gelu(x@w + b) that forgets the gelu's form
gelu-fuse-default: gelu(matmul_bias(x, w, b)) => matmul_bias_gelu(x, w, b)
# a > b = a < b (wrong)
greater-flip:    greater(a, b) => less(a, b)
"""


@pytest.mark.parametrize("direction", select(load_rules_text(UNSOUND)), ids=lambda d: d.name)
def test_unsound_variants_are_caught(direction):
    result = check_direction(direction, scaled(200), 7, FACTS)
    assert result.status == FAILED, direction.name


NEW_RULES = [
    "div-to-mul",
    "div-to-mul-rev",
    "div-by-scalar",
    "div-one",
    "pow-two",
    "pow-one",
    "pow-zero",
    "greater-to-less",
    "greater-equal-to-less-equal",
    "equal-comm",
    "where-same",
    "silu",
    "silu-left",
    "matmul-bias-gelu",
    "transpose-gelu",
    "transpose-gelu-rev",
    "tile-matmul-bias-gelu",
    "qmatmul-bias-gelu-quant",
]


@pytest.mark.parametrize("name", NEW_RULES)
def test_new_and_changed_rules_are_sound(name):
    (direction,) = [d for d in select(load_rules(default_rules_dir()), [name]) if d.name == name]
    result = check_direction(direction, scaled(100), 3, FACTS)
    assert result.status == PASSED, name
    assert result.examples > 0


# ------------------------------------------------------- interpreter properties


@settings(max_examples=scaled(60), deadline=None)
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=8),
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=8),
)
def test_integer_div_matches_python(a, b):
    n = min(len(a), len(b))
    x, y = np.array(a[:n], np.int32), np.array(b[:n], np.int32)
    want = [0 if q == 0 else int(Fraction(p, q)) for p, q in zip(a[:n], b[:n], strict=True)]
    saturated = [min(w, 2**31 - 1) for w in want]  # only min / -1 overflows
    assert run("div", x, y).tolist() == saturated
