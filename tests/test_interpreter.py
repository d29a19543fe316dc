"""The reference interpreter against independent numpy computations, and fused ops
against the compositions they stand for."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.interpreter import BindingError, evaluate, random_bindings
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import AttrRef
from tests.strategies import op_cases, scaled, single_op_graph

F32, BF16, I8, I32 = DType.F32, DType.BF16, DType.I8, DType.I32
bf16 = ml_dtypes.bfloat16


def run_op(op: str, args: list[np.ndarray], **attrs) -> np.ndarray:
    """Evaluate one op on concrete arrays through a graph and the interpreter."""
    from eqsat.ir.types import dtype_of_array

    b = GraphBuilder(op)
    ins = [
        b.leaf("input", f"a{i}", TensorType(dtype_of_array(a), a.shape)) for i, a in enumerate(args)
    ]
    b.output("out", b.add(op, ins, attrs))
    return evaluate(b.graph, {f"a{i}": a for i, a in enumerate(args)})["out"]


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------- conv2d


def conv2d_einsum(x, w, stride, padding, groups=1):
    """Direct definition: out[n,o,i,j] = sum_{c,p,q} xpad[n,c,i*sh+p,j*sw+q] * w[o,c,p,q];
    with groups, output channels [g*O/G, (g+1)*O/G) see input channels [g*C/G, ...)."""
    if groups > 1:
        xs = np.split(x, groups, axis=1)
        ws = np.split(w, groups, axis=0)
        return np.concatenate(
            [conv2d_einsum(a, b, stride, padding) for a, b in zip(xs, ws, strict=True)], axis=1
        )
    (sh, sw), (ph, pw) = stride, padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    kh, kw = w.shape[2:]
    ho = (xp.shape[2] - kh) // sh + 1
    wo = (xp.shape[3] - kw) // sw + 1
    rows = (np.arange(ho) * sh)[:, None] + np.arange(kh)[None, :]  # [Ho, KH]
    cols = (np.arange(wo) * sw)[:, None] + np.arange(kw)[None, :]  # [Wo, KW]
    patches = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # [N,C,Ho,Wo,KH,KW]
    return np.einsum("ncijpq,ocpq->noij", patches, w.astype(np.float64))


def test_conv2d_hand_example():
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.float32)
    np.testing.assert_array_equal(run_op("conv2d", [x, w])[0, 0], [[8, 12], [20, 24]])
    out = run_op("conv2d", [x, w], stride=[2, 2], padding=[1, 1])
    np.testing.assert_array_equal(out[0, 0], [[0, 3], [9, 24]])
    # Two output channels, two input channels: channel sums.
    x2 = np.stack([x[0, 0], 10 * x[0, 0]])[None]
    w2 = np.zeros((2, 2, 1, 1), np.float32)
    w2[0, 0], w2[1, 1] = 1, 1
    np.testing.assert_array_equal(run_op("conv2d", [x2, w2]), x2)


@settings(max_examples=scaled(40), deadline=None)
@given(data=st.data())
def test_conv2d_matches_einsum(data):
    case = data.draw(op_cases("conv2d"))
    x_t, w_t = case.in_types
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x, w = rand(rng, *x_t.shape), rand(rng, *w_t.shape)
    attrs = case.bound_attrs()
    got = run_op("conv2d", [x, w], **case.attrs)
    want = conv2d_einsum(x, w, attrs["stride"], attrs["padding"], attrs["groups"])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------ normalizations


def test_layernorm_matches_formula():
    rng = np.random.default_rng(0)
    x, g, b = rand(rng, 3, 5, 16) * 4 + 2, rand(rng, 16), rand(rng, 16)
    got = run_op("layernorm", [x, g, b], eps=1e-3)
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdims=True)
    want = (x64 - mu) / np.sqrt(var + 1e-3) * g + b
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Normalized rows: mean 0, variance 1 (up to eps) before the affine part.
    plain = run_op("layernorm", [x, np.ones(16, np.float32), np.zeros(16, np.float32)])
    np.testing.assert_allclose(plain.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(plain.var(-1), 1, atol=1e-3)


def test_softmax_matches_formula_and_is_stable():
    rng = np.random.default_rng(1)
    x = rand(rng, 4, 6) * 3
    for axis in (0, 1, -1, -2):
        got = run_op("softmax", [x], axis=axis)
        e = np.exp(x.astype(np.float64))
        want = e / e.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got.sum(axis=axis), 1, rtol=1e-6)
    big = np.array([[1000.0, 1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(run_op("softmax", [big]), [[0.5, 0.5, 0.0]])


# ------------------------------------------------------------------ layout


def test_slice_negative_indices():
    x = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7)
    got = run_op("slice", [x], starts=[-3, 1], ends=[-1, 100], axes=[2, 0])
    np.testing.assert_array_equal(got, x[1:, :, -3:-1])
    got = run_op("slice", [x], starts=[-100], ends=[-4])
    np.testing.assert_array_equal(got, x[:1])
    # Canonical form: non-negative bounds on every axis.
    b = GraphBuilder("s")
    i = b.leaf("input", "x", TensorType(F32, (5, 6, 7)))
    node = b.graph.nodes[b.add("slice", (i,), {"starts": [-3], "ends": [-1], "axes": [-1]})]
    assert node.attr_dict == {"starts": (0, 0, 4), "ends": (5, 6, 6), "axes": (0, 1, 2)}


def test_reshape_minus_one():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_op("reshape", [x], shape=[-1, 4]), x.reshape(6, 4))
    np.testing.assert_array_equal(run_op("reshape", [x], shape=[2, -1]), x.reshape(2, 12))
    b = GraphBuilder("r")
    i = b.leaf("input", "x", TensorType(I32, (2, 3, 4)))
    assert b.graph.nodes[b.add("reshape", (i,), {"shape": [3, -1]})].attr("shape") == (3, 8)


def test_transpose_and_concat_and_broadcast():
    rng = np.random.default_rng(2)
    x = rand(rng, 2, 3, 4)
    np.testing.assert_array_equal(run_op("transpose", [x]), x.transpose(2, 1, 0))
    np.testing.assert_array_equal(run_op("transpose", [x], perm=[0, -1, 1]), x.transpose(0, 2, 1))
    y = rand(rng, 2, 5, 4)
    np.testing.assert_array_equal(
        run_op("concat", [x, y, x], axis=-2), np.concatenate([x, y, x], 1)
    )
    np.testing.assert_array_equal(
        run_op("broadcast", [x[:, :1]], shape=[6, 2, 3, 4]), np.broadcast_to(x[:, :1], (6, 2, 3, 4))
    )


@pytest.mark.parametrize(
    ("op", "fn"), [("reduce_sum", np.sum), ("reduce_max", np.max), ("reduce_mean", np.mean)]
)
def test_reduce_keepdims(op, fn):
    rng = np.random.default_rng(3)
    x = rand(rng, 2, 3, 4)
    for axes in ([1], [0, 2], [-1], []):
        for keep in (True, False):
            got = run_op(op, [x], axes=axes, keepdims=keep)
            want = fn(x.astype(np.float64), axis=tuple(axes) or None, keepdims=keep)
            assert got.shape == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert run_op(op, [x], axes=[0, 2], keepdims=True).shape == (1, 3, 1)


# ------------------------------------------------------------ number formats


def test_bf16_rounds_to_nearest_even_after_f32_compute():
    one = np.array([1.0], dtype=bf16)
    # 1 + 2^-8 is halfway between 1 and the next bf16 (1 + 2^-7): ties to even -> 1.
    assert run_op("add", [one, np.array([2**-8], bf16)])[0] == 1.0
    # 1 + 1.5 * 2^-8 is nearer 1 + 2^-7.
    out = run_op("add", [one, np.array([1.5 * 2**-8], bf16)])
    assert out.dtype == bf16 and out[0] == 1 + 2**-7
    # Matmul accumulates in f32 and rounds once at the end.
    rng = np.random.default_rng(4)
    a, b = rand(rng, 4, 64).astype(bf16), rand(rng, 64, 3).astype(bf16)
    got = run_op("matmul", [a, b])
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(bf16)
    assert got.dtype == bf16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_cast_rounds_half_even_and_saturates():
    x = np.array([2.5, -2.5, 3.5, 0.49, 300, -300, np.nan], np.float32)
    np.testing.assert_array_equal(run_op("cast", [x], dtype="i8"), [2, -2, 4, 0, 127, -128, 0])
    i = np.array([1000, -1000, 5], np.int32)
    np.testing.assert_array_equal(run_op("cast", [i], dtype="i8"), [127, -128, 5])
    assert run_op("cast", [i], dtype="bf16").dtype == bf16


def test_quantize_dequantize_requantize():
    x = np.array([-1.0, -0.26, 0.0, 0.25, 0.75, 100.0], np.float32)
    q = run_op("quantize", [x], scale=0.5, zero_point=3)
    np.testing.assert_array_equal(q, [1, 2, 3, 3, 5, 127])
    assert q.dtype == np.int8
    d = run_op("dequantize", [q], scale=0.5, zero_point=3)
    np.testing.assert_array_equal(d, [-1.0, -0.5, 0.0, 0.0, 1.0, 62.0])
    acc = np.array([1000, -1000, 25, 35], np.int32)
    r = run_op("requantize", [acc], scale=0.1, zero_point=-1)
    # fixed point: 0.1 is 1717986918 / 2**34, a hair below 0.1, so 35 * 0.1 is below 3.5
    np.testing.assert_array_equal(r, [99, -101, 1, 2])


def test_qmatmul_subtracts_zero_points():
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (3, 7)).astype(np.int8)
    b = rng.integers(-128, 128, (7, 2)).astype(np.int8)
    got = run_op("qmatmul", [a, b], a_zero=3, b_zero=-5)
    want = (a.astype(np.int64) - 3) @ (b.astype(np.int64) + 5)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_integer_elementwise_saturates_like_the_hardware():
    """Integer results saturate (hwsim stores them so; eqsat/quant/fixedpoint.py)."""
    a = np.array([100, -100], np.int8)
    np.testing.assert_array_equal(run_op("add", [a, a]), np.array([127, -128], np.int8))


def test_const_fills_its_shape():
    b = GraphBuilder("c")
    b.output("c", b.const(2.5, TensorType(BF16, (2, 3))))
    out = evaluate(b.graph, {})["c"]
    assert out.dtype == bf16 and out.shape == (2, 3) and (out.astype(np.float32) == 2.5).all()


def test_binding_errors():
    b = GraphBuilder("g")
    b.output("y", b.add("relu", (b.leaf("input", "x", TensorType(F32, (2, 3))),)))
    with pytest.raises(BindingError, match="no value given for input 'x'"):
        evaluate(b.graph, {})
    with pytest.raises(BindingError, match=r"must have shape \[2, 3\], got \[3, 2\]"):
        evaluate(b.graph, {"x": np.zeros((3, 2), np.float32)})
    with pytest.raises(BindingError, match="must be f32, got numpy int32"):
        evaluate(b.graph, {"x": np.zeros((2, 3), np.int32)})
    # Other floats are converted.
    assert evaluate(b.graph, {"x": np.ones((2, 3))})["y"].dtype == np.float32


def test_dead_nodes_are_not_evaluated():
    b = GraphBuilder("g")
    x = b.leaf("input", "x", TensorType(F32, (2,)))
    b.leaf("input", "unused", TensorType(F32, (2,)))
    b.output("y", b.add("neg", (x,)))
    np.testing.assert_array_equal(evaluate(b.graph, {"x": np.ones(2, np.float32)})["y"], [-1, -1])


# ------------------------------------------------------------------ fused ops

FUSED = sorted(name for name, op in REGISTRY.items() if op.kind is OpKind.FUSED)


def composition_graph(case) -> Graph:
    """The fused op's body spelled out as separate graph nodes over the same inputs."""
    op = case.opdef
    attrs = case.bound_attrs()
    b = GraphBuilder(f"composed_{case.op}")
    env = {
        name: b.leaf("input", f"a{i}", t)
        for i, (name, t) in enumerate(zip(op.operands, case.in_types, strict=True))
    }

    def build(body):
        if isinstance(body, str):
            return env[body]
        args = [build(a) for a in body.args]
        given = {k: attrs[v.name] if isinstance(v, AttrRef) else v for k, v in body.attrs.items()}
        return b.add(body.op, args, given)

    b.output("out", build(op.composition))
    return b.graph


def test_there_are_fused_ops():
    assert FUSED
    for name in FUSED:
        assert REGISTRY[name].composition is not None


def _normalizes_a_computed_value(body) -> bool:
    if isinstance(body, str):
        return False
    if body.op in ("layernorm", "rmsnorm") and not isinstance(body.args[0], str):
        return True
    return any(_normalizes_a_computed_value(a) for a in body.args)


@pytest.mark.parametrize("op", FUSED)
@settings(max_examples=scaled(30), deadline=None)
@given(data=st.data())
def test_fused_op_equals_its_composition(op, data):
    case = data.draw(op_cases(op))
    fused_g, composed_g = single_op_graph(case), composition_graph(case)
    assert fused_g.nodes[-1].type == composed_g.nodes[-1].type
    values = random_bindings(fused_g, data.draw(st.integers(0, 1000)))
    got = evaluate(fused_g, values)["out"]
    if case.in_types[0].dtype is not DType.BF16:  # f32 or integer: bit for bit
        np.testing.assert_array_equal(got, evaluate(composed_g, values)["out"])
    else:
        # A fused kernel keeps intermediates in f32 and rounds once: it equals the
        # composition computed in f32, then stored in the narrow dtype.
        wide = {k: v.astype(np.float32) for k, v in values.items()}
        wide_case = type(case)(case.op, tuple(t.with_dtype(F32) for t in case.in_types), case.attrs)
        ref = evaluate(composition_graph(wide_case), wide)["out"]
        np.testing.assert_array_equal(
            got.astype(np.float32), ref.astype(case.out_type().dtype.np_dtype).astype(np.float32)
        )
        # ...and is close to the composition that rounds every intermediate, except
        # where a normalization reads a computed value: a row of nearly equal sums
        # (N = 2 features, say) makes layernorm amplify one bf16 rounding of the
        # intermediate without bound.
        if _normalizes_a_computed_value(REGISTRY[case.op].composition):
            return
        np.testing.assert_allclose(
            got.astype(np.float32),
            evaluate(composed_g, values)["out"].astype(np.float32),
            rtol=0.05,
            atol=0.05,
        )


def test_fused_flops_are_the_composition_flops():
    t = TensorType(F32, (4, 8))
    w, bias = TensorType(F32, (8, 3)), TensorType(F32, (3,))
    mm = REGISTRY["matmul"].flops([t, w], TensorType(F32, (4, 3)), {})
    out = TensorType(F32, (4, 3))
    assert REGISTRY["matmul_bias"].flops([t, w, bias], out, {}) == mm + 12
    assert REGISTRY["matmul_bias_relu"].flops([t, w, bias], out, {}) == mm + 24


def test_run_refuses_a_tensor_too_large_to_allocate(tmp_path, capsys) -> None:
    from eqsat.cli import main

    model = tmp_path / "big.model"
    model.write_text("model big {\n  input x: f32[100000, 100000]\n  y = relu(x)\n  output y\n}\n")
    assert main(["check", str(model)]) == 0  # checking needs no memory
    capsys.readouterr()
    assert main(["run", str(model)]) == 1
    err = capsys.readouterr().err
    assert "'x' is f32[100000, 100000] (37.3 GiB)" in err
    assert "Traceback" not in err
