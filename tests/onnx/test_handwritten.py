"""ONNX graphs written by hand with onnx.helper, as exporters other than torch write
them: several opsets, shape subgraphs feeding Reshape, causal and padding masks
through Where, depthwise convolutions, pooling with padding, Gemm with transB. Each
runs (reference interpreter) and simulates (hwsim) to ONNX Runtime's results, at
sizes of its dynamic axes drawn by hypothesis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from backend import compile_graph
from eqsat.fold import fold_constants
from eqsat.verify.onnxruntime import normwise_error, onnx_feeds
from frontend import check_model
from frontend.onnx import OnnxImportError, import_onnx
from hwsim import load_hardware, simulate
from tests.onnx.helpers import TOLERANCE, eqsat_run, ort_run

pytestmark = pytest.mark.filterwarnings("ignore")
RNG = np.random.default_rng(0)


def _init(name: str, shape, scale: float = 0.3) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _const(name: str, values, dtype=np.int64) -> onnx.NodeProto:
    value = numpy_helper.from_array(np.asarray(values, dtype=dtype), name + "_v")
    return helper.make_node("Constant", [], [name], value=value)


def cnn(opset: int) -> onnx.ModelProto:
    """Conv -> BN -> ReLU6 (Clip) -> depthwise conv (group=C) -> pools -> Gemm(transB)."""
    c, k = 8, 10
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn"], epsilon=1e-3),
        _const("lo", 0.0, np.float32),
        _const("hi", 6.0, np.float32),
        helper.make_node("Clip", ["bn", "lo", "hi"], ["r6"]),
        helper.make_node(
            "Conv", ["r6", "wd"], ["dw"], group=c, pads=[1, 0, 1, 2], kernel_shape=[3, 3]
        ),
        helper.make_node(
            "MaxPool", ["dw"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        ),
        helper.make_node(
            "AveragePool",
            ["mp"],
            ["ap"],
            kernel_shape=[2, 2],
            pads=[0, 0, 1, 1],
            count_include_pad=0,
        ),
        helper.make_node("GlobalAveragePool", ["ap"], ["gp"]),
        helper.make_node("Flatten", ["gp"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, alpha=0.5),
    ]
    inits = [
        _init("w1", (c, 3, 3, 3)),
        _init("b1", (c,)),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32), "g"),
        _init("be", (c,)),
        _init("m", (c,)),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32), "v"),
        _init("wd", (c, 1, 3, 3)),
        _init("wf", (k, c)),
        _init("bf", (k,)),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", k])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def attention(opset: int) -> onnx.ModelProto:
    """One attention head over [B, S, D] with the shape arithmetic exporters write: the
    head reshape from Shape/Gather/Concat, a causal mask from Range/Less/Where, and a
    padding mask (int64 input) through Cast/Sub/Mul."""
    d, h = 16, 2
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        _const("i0", 0),
        _const("i1", 1),
        helper.make_node("Gather", ["shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "i1"], ["s"], axis=0),
        _const("ax0", [0]),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["s", "ax0"], ["s1"]),
        _const("heads", [h, d // h]),
        helper.make_node("Concat", ["b1", "s1", "heads"], ["tgt"], axis=0),
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("MatMul", ["x", "wk"], ["k0"]),
        helper.make_node("MatMul", ["x", "wv"], ["v0"]),
        helper.make_node("Reshape", ["q0", "tgt"], ["q1"]),
        helper.make_node("Reshape", ["k0", "tgt"], ["k1"]),
        helper.make_node("Reshape", ["v0", "tgt"], ["v1"]),
        helper.make_node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["sc0"]),
        _const("scale", 1.0 / np.sqrt(d // h), np.float32),
        helper.make_node("Mul", ["sc0", "scale"], ["sc1"]),
        # causal mask: key position j > query position i is masked
        _const("zero", 0),
        _const("one", 1),
        helper.make_node("Range", ["zero", "s", "one"], ["pos"]),
        _const("ax1", [1]),
        helper.make_node("Unsqueeze", ["pos", "ax1"], ["row"]),
        helper.make_node("Less", ["row", "pos"], ["future"]),
        _const("neg", -1e9, np.float32),
        helper.make_node("Where", ["future", "neg", "sc1"], ["sc2"]),
        # padding mask [B, S] of 0/1 -> additive [B, 1, 1, S]
        helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
        _const("onef", 1.0, np.float32),
        helper.make_node("Sub", ["onef", "mf"], ["inv"]),
        helper.make_node("Mul", ["inv", "neg"], ["add0"]),
        _const("ax12", [1, 2]),
        helper.make_node("Unsqueeze", ["add0", "ax12"], ["add1"]),
        helper.make_node("Add", ["sc2", "add1"], ["sc3"]),
        helper.make_node("Softmax", ["sc3"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o0"]),
        helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
        _const("flat", [0, 0, -1]),
        helper.make_node("Reshape", ["o1", "flat"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "attention",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", d]),
            helper.make_tensor_value_info("mask", TensorProto.INT64, ["B", "S"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", d])],
        [_init("wq", (d, d)), _init("wk", (d, d)), _init("wv", (d, d))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _simulated(imported, feeds, dims) -> dict:
    graph = fold_constants(check_model(imported.model, dims, imported.arrays))
    params = {k: v for k, v in imported.arrays.items() if k in graph.bound_names()}
    bindings = {**imported.feeds(feeds), **params}
    hw = load_hardware("edge")
    compiled = compile_graph(graph, hw)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    return imported.results(compiled.results(result.outputs))


def check(model: onnx.ModelProto, dims: dict, symbolic: bool) -> None:
    onnx.checker.check_model(model)
    feeds = onnx_feeds(model, dims, seed=sum(dims.values()))
    want = ort_run(model, feeds)
    imported = import_onnx(model, None if symbolic else dims, symbolic=symbolic)
    run_dims = dims if symbolic else None
    for got in (eqsat_run(imported, feeds, run_dims), _simulated(imported, feeds, run_dims)):
        for name in want:
            assert normwise_error(got[name], want[name]) < TOLERANCE, name


@pytest.mark.parametrize("opset", [13, 17, 21])
@settings(max_examples=3, deadline=None)
@given(n=st.integers(1, 3), symbolic=st.booleans())
def test_cnn(opset, n, symbolic):
    check(cnn(opset), {"N": n}, symbolic)


@pytest.mark.parametrize("opset", [13, 17, 21])
@settings(max_examples=3, deadline=None)
@given(b=st.integers(1, 3), s=st.integers(1, 12), symbolic=st.booleans())
def test_attention(opset, b, s, symbolic):
    check(attention(opset), {"B": b, "S": s}, symbolic)


def test_attention_stays_symbolic():
    imported = import_onnx(attention(17))
    assert set(imported.dims) == {"B", "S"} and not imported.fixed
    text = imported.text()
    assert "iota(shape=[S]" in text and "shape=[B, S, 2, 8]" in text


def strided_slice(n: int, start: int, end: int, step: int) -> onnx.ModelProto:
    """y = relu(x[:, :, start:end:step]) on x [B, S, n]: GPT-J's interleaved rotary halves
    are x[..., ::2] and x[..., 1::2]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", n])
    k = len(range(*slice(start, end, step).indices(n)))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", k])
    nodes = [
        _const("starts", [start]),
        _const("ends", [end]),
        _const("axes", [2]),
        _const("steps", [step]),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "strided_slice", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 24),
    start=st.integers(-30, 30),
    end=st.integers(-30, 30),
    step=st.sampled_from([2, 3, 4, -1, -2]),
    b=st.integers(1, 2),
    symbolic=st.booleans(),
)
def test_strided_slices(n, start, end, step, b, symbolic):
    """Any Slice with a step runs as ORT runs it; one whose axis splits into [n / step,
    step] is a strided view (reshape, slice, reshape), no gather kernel."""
    if len(range(*slice(start, end, step).indices(n))) == 0:
        return  # an empty slice: tested with the import errors
    model = strided_slice(n, start, end, step)
    check(model, {"B": b, "S": 3}, symbolic)
    imported = import_onnx(model, None if symbolic else {"B": b, "S": 3}, symbolic=symbolic)
    if step > 1 and n % step == 0 and len(range(*slice(start, end, step).indices(n))) > 1:
        assert "gather" not in imported.text()


TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def resize_model(h: int, w: int, mode: str, transform: str, nearest: str, scales, sizes):
    """y = Resize(x [B, 3, h, w]) by `scales` or `sizes` (opset 13), then a Relu."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3, h, w])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = []
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        ins = ["x", "", "", "sizes"]
    else:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        ins = ["x", "", "scales"]
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    nodes = [
        helper.make_node("Resize", ins, ["r"], **attrs),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "resize", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=30, deadline=None)
@given(
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    mode=st.sampled_from(["nearest", "linear", "cubic"]),
    transform=st.sampled_from(TRANSFORMS),
    nearest=st.sampled_from(NEAREST),
    factors=st.tuples(
        st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 0.75]), st.sampled_from([0.5, 1.0, 2.0, 2.5])
    ),
    by_sizes=st.booleans(),
)
def test_resize(h, w, mode, transform, nearest, factors, by_sizes):
    """Resize as UNets, FPNs and YOLO necks write it: nearest, linear and cubic, each
    coordinate transformation, by scales or by sizes, against the ONNX reference
    implementation (run and simulated). ONNX Runtime is the truth elsewhere; here it
    departs from the operator's definition in one corner (cubic, pytorch_half_pixel,
    an output axis of one pixel: the source coordinate is -0.5)."""
    out_h, out_w = int(h * factors[0]), int(w * factors[1])
    if out_h < 1 or out_w < 1:
        return
    sizes = [2, 3, out_h, out_w] if by_sizes else None
    scales = None if by_sizes else [1.0, 1.0, *factors]
    model = resize_model(h, w, mode, transform, nearest, scales, sizes)
    feeds = {"x": RNG.standard_normal((2, 3, h, w)).astype(np.float32)}
    want = {"y": ReferenceEvaluator(model).run(None, feeds)[0]}
    imported = import_onnx(model, {"B": 2})
    got = eqsat_run(imported, feeds)
    assert normwise_error(got["y"], want["y"]) < TOLERANCE
    simulated = _simulated(imported, feeds, None)
    assert normwise_error(simulated["y"], want["y"]) < TOLERANCE


def test_nearest_upsample_by_two_is_a_view():
    """An integer nearest upsample (torch's `interpolate(scale_factor=2)`) reshapes and
    broadcasts: no gather, no product."""
    model = resize_model(8, 8, "nearest", "asymmetric", "floor", [1.0, 1.0, 2.0, 2.0], None)
    text = import_onnx(model, {"B": 1}).text()
    assert "broadcast" in text and "gather" not in text and "matmul" not in text


def test_an_unknown_resize_mode_is_reported():
    model = resize_model(4, 4, "bicubic", "half_pixel", "floor", [1.0, 1.0, 2.0, 2.0], None)
    with pytest.raises(OnnxImportError, match="mode 'bicubic' is not supported"):
        import_onnx(model, {"B": 1})


def conv_transpose_model(c, m, group, kernel, stride, pads, out_pad, dilation, length, spatial):
    """y = ConvTranspose(x [B, c, ...]) with a random kernel and bias."""
    dims = [length] * spatial
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", c, *dims])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = _init("w", (c, m // group, *([kernel] * spatial)))
    b = _init("b", (m,))
    node = helper.make_node(
        "ConvTranspose",
        ["x", "w", "b"],
        ["y"],
        strides=[stride] * spatial,
        pads=[pads[0]] * spatial + [pads[1]] * spatial,
        output_padding=[out_pad] * spatial,
        dilations=[dilation] * spatial,
        group=group,
    )
    graph = helper.make_graph([node], "conv_transpose", [x], [y], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=30, deadline=None)
@given(
    channels=st.sampled_from([(2, 4, 1), (4, 6, 2), (3, 3, 3), (4, 2, 1)]),
    kernel=st.integers(1, 4),
    stride=st.integers(1, 3),
    pads=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    out_pad=st.integers(0, 2),
    dilation=st.integers(1, 2),
    length=st.integers(1, 5),
    spatial=st.sampled_from([1, 2]),
)
def test_conv_transpose(channels, kernel, stride, pads, out_pad, dilation, length, spatial):
    """Every stride, padding, output padding, dilation and grouping, 1-D and 2-D,
    against ONNX Runtime (run and simulated)."""
    c, m, group = channels
    assume(out_pad < stride)  # as ONNX Runtime requires
    full = stride * (length - 1) + out_pad + (kernel - 1) * dilation + 1
    assume(full - pads[0] - pads[1] >= 1)
    model = conv_transpose_model(
        c, m, group, kernel, stride, pads, out_pad, dilation, length, spatial
    )
    feeds = {"x": RNG.standard_normal((2, c, *([length] * spatial))).astype(np.float32)}
    want = ort_run(model, feeds)
    imported = import_onnx(model, {"B": 2})
    assert normwise_error(eqsat_run(imported, feeds)["y"], want["y"]) < TOLERANCE
    assert normwise_error(_simulated(imported, feeds, None)["y"], want["y"]) < TOLERANCE


def test_a_stride_sized_kernel_is_one_product_per_pixel():
    """UNet's ConvTranspose2d(k=2, s=2): a product and a transpose, no convolution."""
    model = conv_transpose_model(4, 6, 1, 2, 2, (0, 0), 0, 1, 5, 2)
    text = import_onnx(model, {"B": 1}).text()
    assert "matmul" in text and "conv2d" not in text


@settings(max_examples=30, deadline=None)
@given(
    channels=st.sampled_from([(2, 4, 1), (4, 4, 2), (3, 3, 3)]),
    kernel=st.integers(1, 3),
    dilation=st.sampled_from([1, 2, 3, 4, 6, 9]),
    pads=st.tuples(st.integers(0, 9), st.integers(0, 9)),
    length=st.integers(3, 20),
    spatial=st.sampled_from([1, 2]),
)
def test_dilated_conv(channels, kernel, dilation, pads, length, spatial):
    """Atrous convolutions (DeepLab) and dilated 1-D ones (WaveNet, TCNs), any padding
    and grouping, against ONNX Runtime (run and simulated): a kernel spread with zeros
    up to 16x its taps (3 x 3 at rates up to 4), space-to-batch phases beyond."""
    c, m, group = channels
    assume(length + sum(pads) - (kernel - 1) * dilation >= 1)
    dims = [length] * spatial
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", c, *dims])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(
        "Conv",
        ["x", "w", "b"],
        ["y"],
        dilations=[dilation] * spatial,
        pads=[pads[0]] * spatial + [pads[1]] * spatial,
        group=group,
    )
    inits = [_init("w", (m, c // group, *([kernel] * spatial))), _init("b", (m,))]
    graph = helper.make_graph([node], "dilated", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": RNG.standard_normal((2, c, *dims)).astype(np.float32)}
    want = ort_run(model, feeds)
    imported = import_onnx(model, {"B": 2})
    assert normwise_error(eqsat_run(imported, feeds)["y"], want["y"]) < TOLERANCE
    assert normwise_error(_simulated(imported, feeds, None)["y"], want["y"]) < TOLERANCE


@pytest.mark.parametrize(("dilation", "phases"), [(2, False), (9, True)])
def test_a_dilated_kernel_is_spread_or_split_into_phases(dilation, phases):
    """A 3 x 3 kernel at rate 2 becomes a 5 x 5 one with zeros (a plain convolution); at
    rate 9 (17 x 17: 32x the taps) the input is split into phases instead."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 24, 24])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], dilations=[dilation] * 2, pads=[dilation] * 4
    )
    graph = helper.make_graph([node], "atrous", [x], [y], [_init("w", (4, 4, 3, 3))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    text = import_onnx(model).text()
    assert ("transpose" in text) == phases
    if not phases:
        assert "f32[4, 4, 5, 5]" in text
