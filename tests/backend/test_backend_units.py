"""Targeted checks of the backend's parts: views, DRAM planning, requantize, and small
models for each lowering family (views instead of copies, transposed loads, epilogues,
zero points, strided/padded convolution, constant folding)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend import compile_graph
from backend.expr import requant_params
from backend.planner import plan
from backend.views import LogicalBuffer, View, row_major
from eqsat.interpreter import random_bindings
from frontend import check_model, parse_model
from hwsim import load_hardware
from hwsim.semantics import requantize
from tests.backend.helpers import assert_matches, reference, run_backend


def _model(body: str):
    return check_model(parse_model("model t {\n" + body + "\n}"))


def _check(body: str, hw_name: str = "edge", seed: int = 0):
    graph = _model(body)
    bindings = random_bindings(graph, seed)
    got, _, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    return compiled


# ------------------------------------------------------------------ views


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_view_reshape_without_copy_agrees_with_numpy(shape, data):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    base = np.arange(int(np.prod(shape))).reshape(shape)
    view = View(LogicalBuffer("f32", base.size), 0, tuple(shape), row_major(tuple(shape)))
    view = view.permute(perm)
    arr = base.transpose(perm)
    n = arr.size
    new = data.draw(
        st.sampled_from(
            [(n,), (1, n), (n, 1), *[(d, n // d) for d in range(1, n + 1) if n % d == 0]]
        )
    )
    r = view.reshape(new)
    if r is None:
        return
    flat = base.reshape(-1)
    idx = np.indices(new).reshape(len(new), -1).T
    got = np.array([flat[r.offset + int(np.dot(i, r.strides))] for i in idx]).reshape(new)
    np.testing.assert_array_equal(got, arr.reshape(new))


def test_layout_ops_are_views_not_kernels():
    compiled = _check(
        "input x: f32[2, 3, 4]\n y = reshape(transpose(slice(x, starts=[0, 1], ends=[2, 3]),"
        " perm=[1, 0, 2]), shape=[2, 2, 2, 2])\n z = relu(y)\n output z"
    )
    assert [k.role for k in compiled.kernels] == ["main"]  # only relu: no copies


@pytest.mark.parametrize("same_shape_reshape", [False, True])
def test_heads_merged_after_attention_are_written_in_place(same_shape_reshape):
    """BERT's reshape(transpose(pv)) with the heads merged: the matmul writes its rows
    in the transposed order, so the merge is a view, also through a reshape to the
    same shape (as ONNX exporters write it)."""
    pv = "reshape(matmul(p, v), shape=[2, 4, 8, 16])" if same_shape_reshape else "matmul(p, v)"
    compiled = _check(
        "input p: f32[2, 4, 8, 8]\n input v: f32[2, 4, 8, 16]\n param w: f32[64, 32]\n"
        f" o = {pv}\n m = reshape(transpose(o, perm=[0, 2, 1, 3]), shape=[2, 8, 64])\n"
        " y = matmul(m, w)\n output y"
    )
    assert [k.role for k in compiled.kernels] == ["main", "main"]  # the two matmuls


# ------------------------------------------------------------------ planning


def test_planner_reuses_dead_buffers():
    bufs = [LogicalBuffer("f32", 100, label=f"b{i}") for i in range(4)]
    uses = [
        (set(), {bufs[0]}),
        ({bufs[0]}, {bufs[1]}),
        ({bufs[1]}, {bufs[2]}),
        ({bufs[2]}, {bufs[3]}),
    ]
    sizes, fp = plan(bufs, uses, lambda d: f"arena.{d}")
    assert sizes["f32"] == 200 and fp.planned_bytes == 800 and fp.naive_bytes == 1600
    for (reads, writes), _ in zip(uses, range(4), strict=True):  # no live overlap shares memory
        for r in reads:
            for w in writes:
                assert r.base + r.size <= w.base or w.base + w.size <= r.base


# ------------------------------------------------------------------ requantize


@pytest.mark.parametrize("scale", [0.5, 0.25, 17.25, 3.0, 2.0**-20, 1.0])
def test_requantize_is_exact_for_dyadic_scales(scale):
    m, s = requant_params(scale)
    assert m / 2.0**s == scale
    x = np.arange(-5000, 5000, dtype=np.int64).reshape(1, -1)
    ref = np.clip(np.rint(x.astype(np.float64) * scale), -128, 127)
    np.testing.assert_array_equal(requantize(x, m, s, 0, "even"), ref)


@pytest.mark.parametrize("scale", [0.1, 0.02, 0.001])
def test_requantize_other_scales_are_within_one_step(scale):
    m, s = requant_params(scale)
    assert abs(m / 2.0**s - scale) <= scale * 2.0**-30
    x = np.arange(-20000, 20000, dtype=np.int64).reshape(1, -1)
    ref = np.clip(np.rint(x.astype(np.float64) * scale), -128, 127)
    assert np.max(np.abs(requantize(x, m, s, 0, "even") - ref)) <= 1


# ------------------------------------------------------------------ lowering families


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_matmul_nt_and_transposed_operands_load_without_copies(hw_name):
    compiled = _check(
        "input a: f32[2, 40, 24]\n input b: f32[2, 33, 24]\n"
        " y = matmul_nt(a, b)\n z = matmul(transpose(a, perm=[0, 2, 1]), y)\n output z",
        hw_name,
    )
    assert [k.role for k in compiled.kernels] == ["main", "main"]
    assert "transpose " in compiled.asm


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_conv_with_stride_padding_and_fused_epilogue(dtype):
    _check(
        f"input x: {dtype}[2, 3, 9, 11]\n param w: {dtype}[5, 3, 3, 2]\n param b: {dtype}[5, 1, 1]\n"
        f" input r: {dtype}[2, 5, 5, 6]\n"
        " y = conv2d_bias_add_relu(x, w, b, r, stride=[2, 2], padding=[1, 1])\n output y"
    )


def test_conv_with_computed_weights_is_packed_by_a_copy():
    compiled = _check(
        "input x: f32[1, 4, 6, 6]\n param w: f32[3, 4, 3, 3]\n param s: f32[3, 1, 1, 1]\n"
        " y = conv2d(x, mul(w, s), padding=[1, 1])\n output y"
    )
    assert "prep" in {k.role for k in compiled.kernels}


def test_qmatmul_with_zero_points_and_requantize():
    _check(
        "input a: i8[3, 7, 20]\n param b: i8[20, 9]\n"
        " y = qmatmul(a, b, a_zero=3, b_zero=-5)\n"
        " z = requantize(y, scale=0.0078125, zero_point=2)\n output z"
    )


def test_softmax_and_reductions_over_inner_axes():
    _check(
        "input x: f32[3, 5, 7]\n"
        " s = softmax(x, axis=1)\n m = reduce_max(x, axes=[0, 2], keepdims=true)\n"
        " t = reduce_mean(s, axes=[0])\n output s, m, t"
    )


def test_concat_quantize_and_broadcast_operands():
    _check(
        "input x: f32[4, 1, 6]\n input y: f32[4, 3, 6]\n input c: f32[4, 1]\n"
        " z = concat(x, y, axis=1)\n d = div(c, broadcast(z, shape=[2, 4, 4, 6]))\n"
        " q = quantize(sub(c, d), scale=0.1, zero_point=3)\n e = dequantize(q, scale=0.1, zero_point=3)\n"
        " output d, e"
    )


def test_constant_only_and_leaf_outputs():
    compiled = _check(
        "input x: f32[3]\n const k: f32[2, 3] = 1.5\n const two: f32[] = 2\n"
        " a = exp(mul(k, two))\n b = add(k, two)\n output a, x, b"
    )
    assert set(compiled.outputs) == {"a", "x", "b"}


def test_long_softmax_row_that_does_not_fit_is_a_user_error():
    from backend import BackendError

    graph = _model("input x: f32[2, 100000]\n y = softmax(x)\n output y")
    with pytest.raises(BackendError, match="does not fit"):
        compile_graph(graph, load_hardware("edge"))
