"""How ungrouped convolutions run, and that the cost model prices what runs:
- the prep kernel (padded NHWC image) is a row-block loop whose stores and cycles the
  plan (eqsat/spatial_plan.py PrepPlan) predicts, for any padding, dtype and fill;
- a pointwise convolution the model prices cheaper as a matmul runs as one (no prep,
  no transposes) and simulates like the reference, int8 with a zero point too;
- a convolution with few output channels runs as weights @ patches where the model
  prices that cheaper (weights stored [O, KH, KW, C]), int8 too;
- a batch-norm scale folded into the weights is computed in the weights' packed
  layout, with the param declared in it (no transposed walk)."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from backend.layouts import CONV_WEIGHT_PERM, OKC_WEIGHT_PERM, layout_prefs
from eqsat import spatial_plan as plan
from eqsat.costs import conv_as_matmul, conv_form, op_cost
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from hwsim import Store, Transpose, load_hardware, simulate
from tests.backend.helpers import assert_matches, kernel_instrs, reference, run_backend

F32, I8 = DType.F32, DType.I8


def _conv_graph(x, w, attrs, op="conv2d", bias=False):
    b = GraphBuilder("c")
    args = [b.leaf("input", "x", x), b.leaf("param", "w", w)]
    if bias:
        args.append(b.leaf("param", "b", TensorType(x.dtype, (w.shape[0], 1, 1))))
    node = b.add(op, args, attrs, "out")
    b.output("y", b.add("relu", [node], {}, "r") if x.dtype is F32 else node)
    return b.graph


def _spans(report) -> dict[str, int]:
    return {k.name: k.cycles for k in report.kernels}


PREP_CASES = [  # x, w, stride, padding
    ((2, 8, 9, 7), (4, 8, 3, 3), (1, 1), (1, 1)),
    ((1, 3, 20, 20), (8, 3, 7, 7), (2, 2), (3, 3)),
    ((3, 16, 6, 5), (16, 16, 3, 1), (1, 2), (2, 0)),
    ((1, 64, 28, 28), (64, 64, 3, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("x", "w", "stride", "pad"), PREP_CASES)
def test_the_prep_loop_stores_and_costs_what_its_plan_says(hw_name, x, w, stride, pad):
    hw = load_hardware(hw_name)
    xt, wt = TensorType(F32, x), TensorType(F32, w)
    graph = _conv_graph(xt, wt, {"stride": list(stride), "padding": list(pad)})
    bindings = random_bindings(graph, 0)
    got, report, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    side = (x[2] + 2 * pad[0], x[3] + 2 * pad[1])
    loop = plan.prep_plan(hw, x, 4, pad, side)
    assert loop is not None
    stores = [i for i in kernel_instrs(compiled, "conv2d.out.prep") if isinstance(i, Store)]
    assert len(stores) == loop.stores
    sim = _spans(report)["conv2d.out.prep"]
    model = plan.image_prep_cost(hw, x, 4, pad, side).cycles
    assert abs(model - sim) <= 0.02 * sim, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_an_int8_prep_pads_with_the_zero_point(hw_name):
    """qconv2d's image is padded with a_zero (the fill added in the prologue): bit exact,
    and the prep costs what the plan with a fill says."""
    hw = load_hardware(hw_name)
    xt, wt = TensorType(I8, (2, 6, 7, 7)), TensorType(I8, (5, 6, 3, 3))
    graph = _conv_graph(xt, wt, {"a_zero": -9, "padding": [1, 2]}, op="qconv2d")
    rng = np.random.default_rng(3)
    feeds = {
        "x": rng.integers(-128, 128, xt.shape).astype(np.int8),
        "w": rng.integers(-128, 128, wt.shape).astype(np.int8),
    }
    compiled = compile_graph(graph, hw, consts=feeds)
    result = simulate(compiled.program, hw, compiled.feeds(feeds))
    got = compiled.results(result.outputs)["y"]
    np.testing.assert_array_equal(got, evaluate(graph, feeds)["y"])
    sim = _spans(result.report)["qconv2d.out.prep"]
    model = plan.image_prep_cost(hw, xt.shape, 1, (1, 2), (9, 11), 1, fill=True).cycles
    assert abs(model - sim) <= 0.02 * sim, f"model {model}, simulated {sim}"


POINTWISE = [  # (hw, x, O): shapes whose matmul form the model prices cheaper
    ("edge", (2, 32, 14, 14), 64),
    ("datacenter", (1, 256, 56, 56), 64),
]


@pytest.mark.parametrize(("hw_name", "x", "o"), POINTWISE)
def test_pointwise_convolutions_run_as_a_matmul_on_nchw(hw_name, x, o):
    hw = load_hardware(hw_name)
    xt, wt = TensorType(F32, x), TensorType(F32, (o, x[1], 1, 1))
    graph = _conv_graph(xt, wt, {}, op="conv2d_bias_relu", bias=True)
    node = next(n for _, n in graph if n.name == "out")
    in_types = [graph.nodes[j].type for j in node.inputs]
    assert conv_as_matmul(hw, node.op, in_types, node.type, node.attr_dict)
    bindings = random_bindings(graph, 1)
    got, report, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    names = [k.name for k in compiled.kernels if k.name.startswith("conv2d_bias_relu.out")]
    assert names == ["conv2d_bias_relu.out"]  # no prep, no weight copy
    assert not any(isinstance(i, Transpose) for i in kernel_instrs(compiled, names[0]))
    sim = _spans(report)[names[0]]
    model = op_cost(hw, node.op, in_types, node.type, node.attr_dict).cycles
    assert abs(model - sim) <= 0.1 * sim, f"model {model}, simulated {sim}"


def test_an_int8_pointwise_convolution_as_a_matmul_is_bit_exact():
    hw = load_hardware("edge")
    xt, wt = TensorType(I8, (2, 32, 14, 14)), TensorType(I8, (64, 32, 1, 1))
    graph = _conv_graph(xt, wt, {"a_zero": 17}, op="qconv2d")
    node = next(n for _, n in graph if n.name == "out")
    in_types = [graph.nodes[j].type for j in node.inputs]
    assert conv_as_matmul(hw, node.op, in_types, node.type, node.attr_dict)
    rng = np.random.default_rng(4)
    feeds = {
        "x": rng.integers(-128, 128, xt.shape).astype(np.int8),
        "w": rng.integers(-128, 128, wt.shape).astype(np.int8),
    }
    for consts in (feeds, None):  # weight sums folded at compile time, or a kernel
        compiled = compile_graph(graph, hw, consts=consts)
        assert not any(k.name.endswith(".prep") and "wsum" not in k.name for k in compiled.kernels)
        result = simulate(compiled.program, hw, compiled.feeds(feeds))
        got = compiled.results(result.outputs)["y"]
        np.testing.assert_array_equal(got, evaluate(graph, feeds)["y"])


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_a_scale_folded_into_conv_weights_streams_in_the_packed_layout(hw_name):
    """conv2d(x, mul(w, s)) (rules/fusion.rules conv-fold-scale): w and the product are
    stored [KH, KW, C, O], so the multiply is a plain stream with no transposes."""
    b = GraphBuilder("fold")
    x = b.leaf("input", "x", TensorType(F32, (1, 16, 10, 10)))
    w = b.leaf("param", "w", TensorType(F32, (32, 16, 3, 3)))
    s = b.leaf("param", "s", TensorType(F32, (32, 1, 1, 1)))
    scaled = b.add("mul", [w, s], {}, "ws")
    b.output("y", b.add("conv2d", [x, scaled], {"padding": [1, 1]}, "out"))
    graph = b.graph
    hw = load_hardware(hw_name)
    prefs = layout_prefs(graph, hw)
    ids = {n.name: i for i, n in graph if n.name}
    conv = graph.nodes[ids["out"]]
    types = [graph.nodes[j].type for j in conv.inputs]
    form = conv_form(hw, conv.op, types, conv.type, conv.attr_dict)
    perm = OKC_WEIGHT_PERM if form == "transposed" else CONV_WEIGHT_PERM
    assert prefs[ids["ws"]] == perm
    assert prefs[ids["w"]] == perm
    bindings = random_bindings(graph, 2)
    got, _, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert not any(isinstance(i, Transpose) for i in kernel_instrs(compiled, "mul.ws"))


TRANSPOSED = [  # (hw, x, w, attrs): convolutions the model prices cheaper as w @ patches
    ("datacenter", (1, 64, 28, 28), (64, 64, 3, 3), {"padding": [1, 1]}),
    ("datacenter", (2, 3, 32, 32), (16, 3, 7, 7), {"padding": [3, 3], "stride": [2, 2]}),
    ("edge", (4, 1, 28, 28), (8, 1, 3, 3), {"padding": [1, 1]}),
]


@pytest.mark.parametrize(("hw_name", "x", "w", "attrs"), TRANSPOSED)
def test_convolutions_with_few_channels_run_as_weights_at_patches(hw_name, x, w, attrs):
    hw = load_hardware(hw_name)
    graph = _conv_graph(TensorType(F32, x), TensorType(F32, w), attrs, "conv2d_bias_relu", True)
    node = next(n for _, n in graph if n.name == "out")
    in_types = [graph.nodes[j].type for j in node.inputs]
    assert conv_form(hw, node.op, in_types, node.type, node.attr_dict) == "transposed"
    assert layout_prefs(graph, hw)[1] == OKC_WEIGHT_PERM
    bindings = random_bindings(graph, 5)
    got, report, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    main = "conv2d_bias_relu.out"
    assert [k.name for k in compiled.kernels if k.node == 3] == [f"{main}.prep", main]
    spans = _spans(report)
    sim = spans[main] + spans[f"{main}.prep"]
    model = op_cost(hw, node.op, in_types, node.type, node.attr_dict).cycles
    tolerance = 0.1 if hw_name == "datacenter" else 0.3  # edge: GEMM overlap, see README
    assert abs(model - sim) <= tolerance * sim, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_an_int8_convolution_as_weights_at_patches_is_bit_exact(hw_name, monkeypatch):
    """The model never prices this form cheaper for i8 (one pass per row: streaming
    channels instead of pixels gains nothing), so the lowering is forced here."""
    import backend.layouts
    import backend.lower_contract

    for module in (backend.layouts, backend.lower_contract):
        monkeypatch.setattr(module, "conv_form", lambda *_: "transposed")
    hw = load_hardware(hw_name)
    xt, wt = TensorType(I8, (2, 12, 9, 8)), TensorType(I8, (10, 12, 3, 3))
    graph = _conv_graph(xt, wt, {"a_zero": -5, "padding": [1, 1], "stride": [2, 1]}, "qconv2d")
    rng = np.random.default_rng(6)
    feeds = {
        "x": rng.integers(-128, 128, xt.shape).astype(np.int8),
        "w": rng.integers(-128, 128, wt.shape).astype(np.int8),
    }
    for consts in (feeds, None):  # weight sums folded at compile time, or a kernel
        compiled = compile_graph(graph, hw, consts=consts)
        assert layout_prefs(graph, hw)[1] == OKC_WEIGHT_PERM
        result = simulate(compiled.program, hw, compiled.feeds(feeds))
        got = compiled.results(result.outputs)["y"]
        np.testing.assert_array_equal(got, evaluate(graph, feeds)["y"])
