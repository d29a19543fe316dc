"""The spatial ops of the registry (gather, pad, max_pool2d, avg_pool2d, rmsnorm, conv2d
with groups): reference semantics against onnx.reference and independent loop
oracles, typed errors, and the e-graph's shape analysis against registry inference."""

from __future__ import annotations

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.ops.spatial import window2d
from tests.strategies import op_cases, scaled, single_op_graph
from tests.test_egraph_analysis import assert_analysis_matches

F32 = DType.F32


def run(op: str, *xs: np.ndarray, **attrs) -> np.ndarray:
    """The registry op's reference on arrays, as the interpreter calls it."""
    opdef = REGISTRY[op]
    return opdef.ref(list(xs), opdef.bind_attrs(attrs))


def infer(op: str, *types: TensorType, **attrs) -> TensorType:
    opdef = REGISTRY[op]
    return opdef.type_of(list(types), opdef.bind_attrs(attrs))


# ------------------------------------------------------------------ pooling oracles


def onnx_pool(op: str, x: np.ndarray, **attrs) -> np.ndarray:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, {"x": x})[0]


def loop_pool(x: np.ndarray, kind: str, attrs: dict) -> np.ndarray:
    """PyTorch's algorithm, one window at a time: taps at start + i * d with start =
    o * s - pad_begin; max over taps on the input; the average divides by the taps on
    the input, or with count_include_pad by those inside [-pad_begin, size + pad_end).
    The output size is the one ONNX/PyTorch compute (ceil mode drops a last window
    that starts at or beyond size + pad_begin)."""
    (kh, kw), (sh, sw), (dh, dw) = attrs["kernel"], attrs["stride"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    n, c, h, w = x.shape

    def out_size(size, b, e, k, s, d):
        span = size + b + e - ((k - 1) * d + 1)
        o = (-(-span // s) if attrs["ceil_mode"] else span // s) + 1
        if attrs["ceil_mode"] and (o - 1) * s >= size + b:
            o -= 1
        return o

    ho, wo = out_size(h, pt, pb, kh, sh, dh), out_size(w, pl, pr, kw, sw, dw)
    out = np.zeros((n, c, ho, wo), dtype=np.float64)
    for i, j in itertools.product(range(ho), range(wo)):
        rows = [i * sh - pt + a * dh for a in range(kh)]
        cols = [j * sw - pl + b * dw for b in range(kw)]
        on = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
        if kind == "max":
            vals = [x[:, :, r, q] for r, q in on]
            out[:, :, i, j] = np.max(vals, axis=0) if vals else -np.inf
            continue
        total = sum((x[:, :, r, q].astype(np.float64) for r, q in on), np.zeros((n, c)))
        if attrs["count_include_pad"]:
            inside = [(r, q) for r in rows for q in cols if -pt <= r < h + pb and -pl <= q < w + pr]
            count = len(inside)
        else:
            count = len(on)
        with np.errstate(all="ignore"):
            out[:, :, i, j] = total / count
    return out


@st.composite
def pool_configs(draw, avg: bool):
    h, w = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    attrs = {
        "kernel": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
        "stride": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
        "padding": [draw(st.integers(0, 2)) for _ in range(4)],
        "dilation": [draw(st.integers(1, 2)), draw(st.integers(1, 2))],
        "ceil_mode": draw(st.booleans()),
    }
    if avg:
        attrs["count_include_pad"] = draw(st.booleans())
    return (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, w), attrs


def _valid(shape, attrs) -> bool:
    try:
        window2d("max_pool2d", TensorType(F32, shape), attrs)
    except OpTypeError:
        return False
    return True


@settings(max_examples=scaled(300), deadline=None)
@given(pool_configs(avg=False), st.integers(0, 2**16))
def test_max_pool_matches_the_loop_oracle(config, seed):
    shape, attrs = config
    if not _valid(shape, attrs):
        return
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(run("max_pool2d", x, **attrs), loop_pool(x, "max", attrs))


@settings(max_examples=scaled(300), deadline=None)
@given(pool_configs(avg=True), st.integers(0, 2**16))
def test_avg_pool_matches_the_loop_oracle(config, seed):
    shape, attrs = config
    if not _valid(shape, attrs):
        return
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    got = run("avg_pool2d", x, **attrs)
    np.testing.assert_allclose(got, loop_pool(x, "avg", attrs), rtol=1e-5, atol=1e-6)


def _onnx_attrs(attrs: dict, avg: bool) -> dict:
    out = {
        "kernel_shape": attrs["kernel"],
        "strides": attrs["stride"],
        "pads": attrs["padding"],
        "ceil_mode": int(attrs["ceil_mode"]),
    }
    if avg:
        out["count_include_pad"] = int(attrs["count_include_pad"])
    else:
        out["dilations"] = attrs["dilation"]
    return out


def _random_configs(rng, avg: bool, n: int):
    for _ in range(n):
        shape = (1, 2, int(rng.integers(1, 8)), int(rng.integers(1, 8)))
        attrs = {
            "kernel": [int(v) for v in rng.integers(1, 4, 2)],
            "stride": [int(v) for v in rng.integers(1, 4, 2)],
            "padding": [int(v) for v in rng.integers(0, 3, 4)],
            "dilation": [1, 1] if avg else [int(v) for v in rng.integers(1, 3, 2)],
            "ceil_mode": bool(rng.integers(0, 2)),
        }
        if avg:
            attrs["count_include_pad"] = bool(rng.integers(0, 2))
        elif attrs["stride"] == attrs["dilation"] == [1, 1]:
            # onnx.reference's MaxPool on this path (stride and dilation 1) reads pads as
            # [top, bottom, left, right] and counts them twice in ceil mode: only equal
            # padding on all sides in floor mode agrees (ceil mode changes nothing here)
            attrs["padding"] = [attrs["padding"][0]] * 4
            attrs["ceil_mode"] = False
        if not _valid(shape, attrs):
            continue
        g = window2d("max_pool2d", TensorType(F32, shape), attrs)
        if (g.counts(False) == 0).any():
            continue  # a window entirely in padding: onnx.reference cannot reduce it
        yield shape, attrs


def test_max_pool_matches_onnx_reference():
    """ONNX MaxPool-19 on many random configurations (strides, dilations, one-sided
    padding, ceil mode); where onnx.reference crashes (a ceil-mode window it reduces
    empty) the loop oracle above is the check."""
    rng = np.random.default_rng(7)
    compared = crashed = 0
    for shape, attrs in _random_configs(rng, avg=False, n=500):
        x = rng.standard_normal(shape).astype(np.float32)
        try:
            want = onnx_pool("MaxPool", x, **_onnx_attrs(attrs, avg=False))
        except ValueError:
            assert attrs["ceil_mode"], attrs
            crashed += 1
            continue
        np.testing.assert_array_equal(run("max_pool2d", x, **attrs), want, err_msg=str(attrs))
        compared += 1
    assert compared >= 150 and crashed <= compared // 20


def test_avg_pool_matches_onnx_reference_in_floor_mode():
    """ONNX AveragePool-19, floor mode. (In ceil mode onnx.reference splits the extra
    end padding it adds between both sides, shifting the windows, or indexes past
    its padded input; the loop oracle checks ceil mode.)"""
    rng = np.random.default_rng(11)
    compared = 0
    for shape, attrs in _random_configs(rng, avg=True, n=800):
        if attrs["ceil_mode"]:
            continue
        x = rng.standard_normal(shape).astype(np.float32)
        want = onnx_pool("AveragePool", x, **_onnx_attrs(attrs, avg=True))
        got = run("avg_pool2d", x, **attrs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(attrs))
        compared += 1
    assert compared >= 80


def test_pool_output_sizes_and_the_ceil_mode_drop():
    x = TensorType(F32, (1, 1, 4, 4))
    # floor((4 + 0 + 1 - 1) / 2) + 1 = 3 in floor mode
    assert infer("max_pool2d", x, kernel=[1, 1], stride=[2, 2], padding=[0, 0, 1, 1]).shape == (
        1,
        1,
        3,
        3,
    )
    # ceil mode: ceil(6 / 3) + 1 = 3, but the third window starts at 6 >= 4 + 1: dropped
    t = infer("max_pool2d", x, kernel=[2, 2], stride=[3, 3], padding=[1, 1, 3, 3], ceil_mode=True)
    assert t.shape == (1, 1, 2, 2)
    # ceil mode keeps a last window that starts inside the input: 7 wide, k 2, s 2
    t = infer(
        "avg_pool2d", TensorType(F32, (1, 1, 7, 7)), kernel=[2, 2], stride=[2, 2], ceil_mode=True
    )
    assert t.shape == (1, 1, 4, 4)


def test_max_pool_padding_never_wins_and_integers_keep_their_type():
    x = np.full((1, 1, 2, 2), -5.0, np.float32)
    out = run("max_pool2d", x, kernel=[3, 3], padding=[1, 1, 1, 1])
    np.testing.assert_array_equal(out, np.full((1, 1, 2, 2), -5.0))
    xi = np.array([[[[-128, -100], [-90, -127]]]], np.int8)
    out = run("max_pool2d", xi, kernel=[2, 2], stride=[1, 1], padding=[1, 1, 0, 0])
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [[[[-128, -100], [-90, -90]]]])


def test_avg_pool_divisors():
    x = np.ones((1, 1, 3, 3), np.float32)
    # count_include_pad=false: every average of ones is one
    np.testing.assert_array_equal(
        run("avg_pool2d", x, kernel=[3, 3], padding=[1, 1, 1, 1]), np.ones((1, 1, 3, 3))
    )
    # count_include_pad=true: a corner window has 4 of its 9 taps on the input
    out = run("avg_pool2d", x, kernel=[3, 3], padding=[1, 1, 1, 1], count_include_pad=True)
    assert out[0, 0, 0, 0] == pytest.approx(4 / 9) and out[0, 0, 1, 1] == 1.0
    # ... and a ceil-mode window overhanging the padded extent counts only what is inside
    out = run("avg_pool2d", x, kernel=[2, 2], stride=[2, 2], ceil_mode=True, count_include_pad=True)
    assert out.shape == (1, 1, 2, 2) and out[0, 0, 1, 1] == 1.0


# ------------------------------------------------------------------------- gather


def test_gather_clamps_negative_and_out_of_range_indices():
    table = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    idx = np.array([0, -1, -5, -6, 4, 5, 1000, -1000], np.int32)
    got = run("gather", table, idx, axis=0)
    np.testing.assert_array_equal(got, table[[0, 4, 0, 0, 4, 4, 4, 0]])


@settings(max_examples=scaled(100), deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.data(),
)
def test_gather_matches_take_with_wrapped_clamped_indices(shape, idx_shape, data):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = rng.integers(-2 * n, 2 * n, size=idx_shape).astype(np.int32)
    got = run("gather", x, idx, axis=axis)
    wrapped = np.where(idx < 0, idx + n, idx)
    want = np.take(x, np.clip(wrapped, 0, n - 1), axis=axis)
    assert got.shape == tuple(shape[: axis % len(shape)]) + tuple(idx_shape) + tuple(
        shape[axis % len(shape) + 1 :]
    )
    np.testing.assert_array_equal(got, want)


def test_gather_reads_only_the_selected_rows():
    table, idx = TensorType(F32, (30522, 768)), TensorType(DType.I32, (2, 128))
    op = REGISTRY["gather"]
    assert op.bytes_read([table, idx], {"axis": 0}) == 2 * 128 * 4 + 256 * 768 * 4
    # along a middle axis: every prefix row, the selected entries of the axis
    x, i = TensorType(F32, (8, 100, 16)), TensorType(DType.I32, (50,))
    assert op.bytes_read([x, i], {"axis": 1}) == 50 * 4 + 8 * 50 * 16 * 4


# ---------------------------------------------------------------------------- pad


def test_pad_matches_numpy_and_converts_the_value():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run("pad", x, pads=[1, 0, 2, 3], value=-1.5)
    np.testing.assert_array_equal(got, np.pad(x, ((1, 2), (0, 3)), constant_values=-1.5))
    xi = np.zeros((2, 2), np.int8)
    assert run("pad", xi, pads=[1, 1, 1, 1], value=300.0)[0, 0] == 127  # saturated
    assert run("pad", xi, pads=[1, 1, 1, 1], value=2.5)[0, 0] == 2  # ties to even
    assert run("pad", xi, pads=[1, 1, 1, 1], value=-3.5)[0, 0] == -4
    scalar = np.array(3.0, np.float32)
    assert run("pad", scalar, pads=[]) == 3.0


# ------------------------------------------------------------------------ rmsnorm


def test_rmsnorm_matches_its_formula():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    g = rng.standard_normal(8).astype(np.float32)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(run("rmsnorm", x, g), want, rtol=1e-5)


# ------------------------------------------------------------------ grouped conv2d


@settings(max_examples=scaled(60), deadline=None)
@given(st.data())
def test_grouped_conv_is_one_convolution_per_group(data):
    case = data.draw(op_cases("conv2d"))
    x_t, w_t = case.in_types
    attrs = case.bound_attrs()
    g = attrs["groups"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_t.shape).astype(np.float32)
    w = rng.standard_normal(w_t.shape).astype(np.float32)
    got = run("conv2d", x, w, **case.attrs)
    cg, og = x_t.shape[1] // g, w_t.shape[0] // g
    parts = [
        run(
            "conv2d",
            x[:, j * cg : (j + 1) * cg],
            w[j * og : (j + 1) * og],
            stride=attrs["stride"],
            padding=attrs["padding"],
        )
        for j in range(g)
    ]
    np.testing.assert_allclose(got, np.concatenate(parts, axis=1), rtol=1e-5, atol=1e-5)


def test_depthwise_conv_is_a_per_channel_correlation():
    x = np.arange(2 * 3 * 3, dtype=np.float32).reshape(1, 2, 3, 3)
    w = np.zeros((2, 1, 2, 2), np.float32)
    w[0, 0, 0, 0], w[1, 0, 1, 1] = 1, 10  # channel 0 takes the top-left, 1 the bottom-right
    out = run("conv2d", x, w, groups=2)
    np.testing.assert_array_equal(out[0, 0], x[0, 0, :2, :2])
    np.testing.assert_array_equal(out[0, 1], 10 * x[0, 1, 1:, 1:])


# --------------------------------------------------------------------- type errors

I32 = DType.I32

BAD = [
    ("gather", (TensorType(F32, (4, 2)), TensorType(F32, (3,))), {}, "indices must be i32"),
    ("gather", (TensorType(F32, ()), TensorType(I32, (3,))), {}, "rank >= 1"),
    ("gather", (TensorType(F32, (4, 2)), TensorType(I32, (3,))), {"axis": 2}, "out of range"),
    ("pad", (TensorType(F32, (4, 2)),), {"pads": [1, 1]}, "must be 4 non-negative"),
    ("pad", (TensorType(F32, (4,)),), {"pads": [1, -1]}, "non-negative"),
    ("max_pool2d", (TensorType(F32, (4, 2, 3)),), {"kernel": [2, 2]}, "x: [N, C, H, W]"),
    ("max_pool2d", (TensorType(F32, (1, 1, 3, 3)),), {"kernel": [2]}, "kernel must be 2"),
    (
        "max_pool2d",
        (TensorType(F32, (1, 1, 3, 3)),),
        {"kernel": [2, 2], "padding": [0, 0]},
        "padding must be 4",
    ),
    (
        "max_pool2d",
        (TensorType(F32, (1, 1, 3, 3)),),
        {"kernel": [3, 3], "dilation": [2, 2]},
        "larger than the padded input",
    ),
    ("max_pool2d", (TensorType(F32, (1, 1, 3, 3)),), {"kernel": [2, 2], "stride": [0, 1]}, ">= 1"),
    ("avg_pool2d", (TensorType(I32, (1, 1, 3, 3)),), {"kernel": [2, 2]}, "floating-point"),
    (
        "conv2d",
        (TensorType(F32, (1, 4, 5, 5)), TensorType(F32, (6, 2, 3, 3))),
        {"groups": 3},
        "groups=3 must divide",
    ),
    (
        "conv2d",
        (TensorType(F32, (1, 4, 5, 5)), TensorType(F32, (4, 4, 3, 3))),
        {"groups": 2},
        "C/groups=4 with groups=2",
    ),
    (
        "conv2d",
        (TensorType(F32, (1, 4, 5, 5)), TensorType(F32, (4, 4, 3, 3))),
        {"groups": 0},
        "positive",
    ),
    ("rmsnorm", (TensorType(F32, (2, 8)), TensorType(F32, (4,))), {}, "gamma must have shape [8]"),
    ("rmsnorm", (TensorType(F32, (2, 8)), TensorType(F32, (8,))), {"eps": 0.0}, "eps"),
    ("rmsnorm", (TensorType(I32, (2, 8)), TensorType(I32, (8,))), {}, "floating-point"),
]


@pytest.mark.parametrize(("op", "types", "attrs", "words"), BAD, ids=[b[3] for b in BAD])
def test_type_errors_say_what_is_wrong(op, types, attrs, words):
    with pytest.raises(OpTypeError, match=None) as err:
        infer(op, *types, **attrs)
    assert words in str(err.value), str(err.value)


# ---------------------------------------------------- shape analysis == inference


@pytest.mark.parametrize(
    "op", ["gather", "pad", "max_pool2d", "avg_pool2d", "rmsnorm", "conv2d", "conv2d_bias_relu"]
)
def test_egraph_shapes_agree_with_the_registry(op):
    @settings(max_examples=scaled(40), deadline=None)
    @given(case=op_cases(op))
    def check(case) -> None:
        assert_analysis_matches(single_op_graph(case))

    check()


def test_egraph_shapes_of_edge_cases():
    """Ceil mode with and without the dropped window, rank-0 indices, a gather along
    the last axis, a scalar pad, a grouped conv."""
    cases = [
        ("max_pool2d", [TensorType(F32, (1, 1, 4, 4))], dict(kernel=[2, 2], stride=[3, 3], padding=[1, 1, 3, 3], ceil_mode=True)),
        ("avg_pool2d", [TensorType(F32, (1, 2, 7, 5))], dict(kernel=[2, 3], stride=[2, 2], ceil_mode=True)),
        ("gather", [TensorType(F32, (5, 3)), TensorType(I32, ())], dict(axis=0)),
        ("gather", [TensorType(DType.I8, (2, 5, 3)), TensorType(I32, (2, 2))], dict(axis=-1)),
        ("pad", [TensorType(F32, ())], dict(pads=[])),
        ("conv2d", [TensorType(F32, (1, 6, 5, 5)), TensorType(F32, (9, 2, 3, 3))], dict(groups=3, stride=[2, 1])),
    ]  # fmt: skip
    for op, types, attrs in cases:
        b = GraphBuilder("edge")
        args = [b.leaf("input", f"a{k}", t) for k, t in enumerate(types)]
        b.output("out", b.add(op, args, attrs, "out"))
        assert_analysis_matches(b.graph)


def test_avg_pool_of_bf16_values_is_the_block_mean():
    x = (np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) / 3).astype(ml_dtypes.bfloat16)
    got = run("avg_pool2d", x.astype(np.float32), kernel=[2, 2], stride=[2, 2])
    want = x.astype(np.float32).reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
    np.testing.assert_allclose(got, want.reshape(1, 1, 2, 2, 4).mean(-1), rtol=1e-6)
