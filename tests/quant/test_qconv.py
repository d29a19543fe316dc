"""qconv2d: the interpreter against an independent numpy convolution, the simulator
bit-exact against the interpreter, and quantize-conv2d on the ResNet block."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.pipeline import optimize
from eqsat.quant.passes import quantizable_convs
from eqsat.quant.run import int8_kernels
from eqsat.quant.sqnr import sqnr_db
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.quant.helpers import model, quantized, rules


def _naive_qconv(x, w, a_zero, stride, padding):
    """Loops over output pixels: (x - a_zero), padded with 0, correlated with w."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (ph, pw) = stride, padding
    xs = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), np.int64)
    xs[:, :, ph : ph + h, pw : pw + wd] = x.astype(np.int64) - a_zero
    ho, wo = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    out = np.zeros((n, o, ho, wo), np.int64)
    for i in range(ho):
        for j in range(wo):
            patch = xs[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w.astype(np.int64))
    return out.astype(np.int32)


def _qconv_graph(x_shape, w_shape, **attrs):
    b = GraphBuilder("qconv")
    x = b.leaf("input", "x", TensorType(DType.I8, x_shape))
    w = b.leaf("param", "w", TensorType(DType.I8, w_shape))
    b.output("y", b.add("qconv2d", (x, w), attrs))
    return b.graph


CASES = [
    ((2, 3, 7, 6), (5, 3, 3, 3), {"a_zero": -7, "stride": [1, 1], "padding": [1, 1]}),
    ((1, 4, 9, 9), (6, 4, 3, 2), {"a_zero": 100, "stride": [2, 1], "padding": [2, 0]}),
    ((1, 8, 5, 5), (16, 8, 1, 1), {"a_zero": 0}),
]


def _bindings(x_shape, w_shape, seed):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.integers(-128, 128, x_shape).astype(np.int8),
        "w": rng.integers(-128, 128, w_shape).astype(np.int8),
    }


@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_qconv2d_interpreter_matches_naive_reference(x_shape, w_shape, attrs):
    graph = _qconv_graph(x_shape, w_shape, **attrs)
    feeds = _bindings(x_shape, w_shape, 1)
    got = evaluate(graph, feeds)["y"]
    full = {"stride": (1, 1), "padding": (0, 0), **attrs}
    want = _naive_qconv(feeds["x"], feeds["w"], full["a_zero"], full["stride"], full["padding"])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_qconv2d_simulates_bit_exact(hw_name, x_shape, w_shape, attrs):
    graph = _qconv_graph(x_shape, w_shape, **attrs)
    feeds = _bindings(x_shape, w_shape, 2)
    hw = load_hardware(hw_name)
    compiled = compile_graph(graph, hw, consts=feeds)
    result = simulate(compiled.program, hw, compiled.feeds(feeds))
    got = compiled.results(result.outputs)["y"]
    np.testing.assert_array_equal(got, evaluate(graph, feeds)["y"])


def test_quantizable_convs_skip_dead_channels():
    graph = check_model(
        parse_model(
            "model t {\n input x: f32[1, 2, 5, 5]\n param w: f32[3, 2, 3, 3]\n"
            " y = conv2d(x, w)\n output y\n}"
        )
    )
    w = np.ones((3, 2, 3, 3), np.float32)
    assert quantizable_convs(graph, {"w": w}) != []
    w[1] = 0.0
    assert quantizable_convs(graph, {"w": w}) == []


EDGE = load_hardware("edge")


def _simulate(graph, bindings, consts=None):
    compiled = compile_graph(graph, EDGE, consts)
    result = simulate(compiled.program, EDGE, compiled.feeds(bindings))
    return compiled.results(result.outputs), result.report.cycles


def test_resnet_block_convs_run_in_int8():
    graph = model("resnet_block")
    q, bindings = quantized(graph)
    assert int8_kernels(q.graph) == len(q.quant.plan.layers) == 2
    feeds = {**bindings, **q.quant.plan.params}
    got, int8_cycles = _simulate(q.graph, feeds, q.quant.all_params)
    ref = evaluate(graph, bindings)
    assert sqnr_db(ref["y"], got["y"]) >= 30.0
    assert q.quant.sqnr["y"] >= 30.0
    want = evaluate(q.graph, feeds)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-4)
    float_opt = optimize(graph, rules(False), EDGE)
    _, float_cycles = _simulate(float_opt.graph, bindings)
    assert int8_cycles < float_cycles


def test_random_bindings_seed_the_conv_weights():
    graph = model("resnet_block")
    assert set(quantizable_convs(graph, random_bindings(graph, 0)))


@pytest.mark.parametrize("weights", ["known", "fed", "runtime"])
@pytest.mark.parametrize("op", ["qmatmul", "qconv2d"])
def test_zero_point_weight_sums_are_folded_when_the_weights_are_known(op, weights):
    """(x - za) @ w = x @ w - za * colsum(w): with the weights' values given to the
    compiler (a quantized program's params) the sums are computed at compile time; with
    params fed at run time the host computes them when it loads the weights (a prepared
    input, as eqsat/weights.py prepares weights); only a run-time operand (an input)
    needs a reduction kernel per inference. All exact."""
    leaf = "input" if weights == "runtime" else "param"
    b = GraphBuilder("zp")
    if op == "qmatmul":
        x = b.leaf("input", "x", TensorType(DType.I8, (8, 40)))
        w = b.leaf(leaf, "w", TensorType(DType.I8, (40, 24)))
        b.output("y", b.add("qmatmul", (x, w), {"a_zero": -9}))
    else:
        x = b.leaf("input", "x", TensorType(DType.I8, (1, 4, 6, 6)))
        w = b.leaf(leaf, "w", TensorType(DType.I8, (8, 4, 3, 3)))
        b.output("y", b.add("qconv2d", (x, w), {"a_zero": 5, "padding": [1, 1]}))
    graph = b.graph
    values = random_bindings(graph, 3)
    hw = load_hardware("edge")
    compiled = compile_graph(graph, hw, {"w": values["w"]} if weights == "known" else None)
    sums = [k for k in compiled.kernels if k.name.endswith((".colsum", ".wsum"))]
    assert bool(sums) == (weights == "runtime")
    assert bool(compiled.prepared_sums) == (weights == "fed")
    if weights == "fed":  # listed with the prepared weights, [N] or [O] i32 sums
        (name,) = compiled.prepared_sums
        sizes = dict(compiled.prepared_weights())
        assert sizes[next(b for b, (n, _) in compiled.inputs.items() if n == name)] == 4 * (
            24 if op == "qmatmul" else 8
        )
    result = simulate(compiled.program, hw, compiled.feeds(values))
    want = evaluate(graph, values)
    np.testing.assert_array_equal(compiled.results(result.outputs)["y"], want["y"])
