"""ONNX models quantized by ONNX Runtime (quantize_static QDQ and QOperator,
quantize_dynamic) import: `eqsat run` agrees with ONNX Runtime within one
quantization step on >= 99% of the output elements (on these small graphs: all of
them), and the simulated program equals the interpreter bit for bit (QDQ products
import as integer kernels, as ORT runs them, so no f32 summation order is involved).
One case per pattern; the single-node properties are checked exactly against ORT
with hypothesis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from tests.onnx.helpers import eqsat_run, import_onnx, ort_run
from tests.onnx_quant.helpers import (
    contraction_ops,
    conv_gate_concat,
    conv_relu,
    feeds_for,
    matmul_add,
    mlp,
    op_types,
    quantized,
    simulated_and_run,
    within_one_step,
)

pytestmark = pytest.mark.filterwarnings("ignore")
ort_quant = pytest.importorskip("onnxruntime.quantization")

U8 = {"activation_type": ort_quant.QuantType.QUInt8}  # ORT's default is int8 activations
# (id, float graph, quantizer mode, quantizer options, ONNX ops the result must hold,
#  contraction op eqsat must import it as)
CASES = [
    ("qdq-per-tensor-u8", matmul_add, "qdq", U8, {"QuantizeLinear", "DequantizeLinear"}, "qmatmul"),
    ("qdq-per-axis-conv", conv_relu, "qdq", {"per_channel": True}, {"DequantizeLinear"}, "qconv2d"),
    ("qdq-i8-activations", mlp, "qdq", {}, {"QuantizeLinear", "DequantizeLinear"}, "qmatmul"),
    ("qlinearmatmul-u8", mlp, "qoperator", U8, {"QLinearMatMul"}, "qmatmul"),
    ("qlinearmatmul-i8", mlp, "qoperator", {"per_channel": True}, {"QLinearMatMul"}, "qmatmul"),
    ("qlinearconv", conv_relu, "qoperator", {"per_channel": True}, {"QLinearConv"}, "qconv2d"),
    (
        "qlinear-sigmoid-leakyrelu-concat",
        conv_gate_concat,
        "qoperator",
        {"per_channel": True},
        {"QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat"},
        "qconv2d",
    ),
    ("matmulinteger", mlp, "dynamic", {}, {"MatMulInteger", "DynamicQuantizeLinear"}, "qmatmul"),
    ("convinteger", conv_relu, "dynamic", {}, {"ConvInteger", "DynamicQuantizeLinear"}, "qconv2d"),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("quantized")


@pytest.mark.parametrize(
    ("name", "build", "mode", "options", "ops", "contraction"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_ort_quantized_model(folder, name, build, mode, options, ops, contraction):
    path = quantized(build(), folder, name, mode, **options)
    assert ops <= op_types(path), op_types(path)
    assert set(contraction_ops(path)) == {contraction}
    for seed in (5, 6):
        feeds = feeds_for(path, seed)
        assert within_one_step(path, feeds) >= 0.99
        simulated, run = simulated_and_run(path, feeds)
        for k in run:
            np.testing.assert_array_equal(simulated[k], run[k], err_msg=k)


def _initializer_types(path) -> dict[str, int]:
    return {t.name: t.data_type for t in onnx.load(str(path)).graph.initializer}


@pytest.mark.parametrize(("options", "qtype"), [(U8, TensorProto.UINT8), ({}, TensorProto.INT8)])
def test_activation_and_weight_types(folder, options, qtype):
    """The quantizer writes the patterns the cases above are named after: uint8 or
    int8 activations; int8 weights per output channel (int8 params once imported)."""
    path = quantized(conv_relu(), folder, f"types{qtype}", "qdq", per_channel=True, **options)
    model = onnx.load(str(path))
    types = _initializer_types(path)
    zero_types = {types[n.input[2]] for n in model.graph.node if n.op_type == "QuantizeLinear"}
    assert zero_types == {qtype}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    scales = [inits[n.input[1]] for n in model.graph.node if n.op_type == "DequantizeLinear"]
    assert any(s.ndim == 1 and s.size == 8 for s in scales)  # per axis (8 channels)
    # the int8 weights are int8 params of the model (int8 kernels can read them)
    params = dict(load_model(path).graph.bound_names())
    assert any(t.dtype.value == "i8" and t.shape == (8, 3, 3, 3) for t in params.values())


# ------------------------------------------------------------ single nodes, exactly


def _run_both(model: onnx.ModelProto, feeds: dict) -> tuple[dict, dict]:
    return eqsat_run(import_onnx(model), feeds), ort_run(model, feeds)


@settings(max_examples=25)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 6),
    per_axis=st.booleans(),
    unsigned=st.booleans(),
    seed=st.integers(0, 2**16),
    opset=st.sampled_from([13, 19, 21]),
    omit_zero=st.booleans(),
)
def test_quantize_dequantize_exact(rows, cols, per_axis, unsigned, seed, opset, omit_zero):
    """QuantizeLinear -> DequantizeLinear, per tensor or per axis (axis 1), uint8 or
    int8, uint8 also without a zero point: both outputs equal ONNX Runtime's exactly
    (ties included: x holds exact half steps)."""
    omit_zero = omit_zero and unsigned
    rng = np.random.default_rng(seed)
    qtype, lo, hi = (np.uint8, 0, 255) if unsigned else (np.int8, -128, 127)
    n = cols if per_axis else 1
    scale = rng.uniform(0.01, 0.5, n).astype(np.float32)
    zero = rng.integers(lo, hi, n, endpoint=True).astype(qtype) * (not omit_zero)
    steps = rng.integers(-300, 300, (rows, cols)).astype(np.float32) / 2  # halves: ties
    x = (steps * (scale if per_axis else scale[0])).astype(np.float32)
    if not per_axis:
        scale, zero = scale.reshape(()), zero.reshape(())
    inits = [numpy_helper.from_array(scale, "s")]
    inits += [] if omit_zero else [numpy_helper.from_array(zero, "z")]
    params = ["s"] if omit_zero else ["s", "z"]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", *params], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", *params], ["y"], axis=1),
    ]
    qt = TensorProto.UINT8 if unsigned else TensorProto.INT8
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
        [
            helper.make_tensor_value_info("q", qt, [rows, cols]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    got, want = _run_both(model, {"x": x})
    for k in want:
        assert got[k].dtype == want[k].dtype
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@settings(max_examples=15)
@given(shape=st.sampled_from([(3,), (2, 5), (2, 3, 4)]), seed=st.integers(0, 2**16))
def test_dynamic_quantize_linear_exact(shape, seed):
    """DynamicQuantizeLinear's three outputs (uint8 y, scale, zero point) equal ORT's."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 10) + rng.uniform(-2, 2)).astype(np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [
            helper.make_tensor_value_info("y", TensorProto.UINT8, list(shape)),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("z", TensorProto.UINT8, []),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got, want = _run_both(model, {"x": x})
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@settings(max_examples=15)
@given(
    m=st.integers(1, 5),
    k=st.integers(1, 9),
    n=st.integers(1, 6),
    a_zero_runtime=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matmul_integer_exact(m, k, n, a_zero_runtime, seed):
    """MatMulInteger of uint8 x int8 with a zero point known or given at run time
    (as DynamicQuantizeLinear gives it): the i32 result equals ORT's."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    az = np.array(rng.integers(0, 256), dtype=np.uint8)
    inits = [numpy_helper.from_array(b, "b")]
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])]
    if a_zero_runtime:
        inputs.append(helper.make_tensor_value_info("az", TensorProto.UINT8, []))
    else:
        inits.append(numpy_helper.from_array(az, "az"))
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])],
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"a": a, **({"az": az} if a_zero_runtime else {})}
    got, want = _run_both(model, feeds)
    np.testing.assert_array_equal(got["y"], want["y"])


def test_uint8_weights_of_qlinearconv(folder):
    """uint8 weights whose values minus zero point leave int8: the correction through
    window sums of x keeps the result exact."""
    rng = np.random.default_rng(3)
    w = rng.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)
    x = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(120, np.uint8), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array([0.01, 0.02, 0.03, 0.04], np.float32), "ws"),
        numpy_helper.from_array(np.array(7, np.uint8), "wz"),
        numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
        numpy_helper.from_array(np.array(100, np.uint8), "yz"),
    ]
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1]
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 5, 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got, want = _run_both(model, {"x": x})
    np.testing.assert_array_equal(got["y"], want["y"])
    path = folder / "u8w.onnx"
    onnx.save(model, str(path))
    simulated, run = simulated_and_run(path, {"x": x})
    np.testing.assert_array_equal(simulated[next(iter(run))], run[next(iter(run))])
    loaded = load_model(path)
    assert evaluate(loaded.graph, loaded.bindings(0, {"x": x}))


def test_qdq_matmul_becomes_one_int8_kernel(folder):
    """dequantize -> matmul of an int8 activation and per-channel int8 weights imports
    as qmatmul then the f32 rescale (frontend/onnx/convert/quant.py qdq_matmul), which
    rules/quant.rules fuse, with the QuantizeLinear after it, into one
    qmatmul_bias_dequant_quant kernel; the optimized program stays within one step."""
    from eqsat.cli import build_parser
    from eqsat.commands.compile import graph_for_target

    path = quantized(matmul_add(), folder, "fuse", "qdq", per_channel=True)
    assert contraction_ops(path) == ["qmatmul"]
    args = build_parser().parse_args(["simulate", str(path), "--hw", "edge", "-q"])
    loaded = load_model(path)
    bindings = loaded.bindings(0, feeds_for(path))
    optimized, _, _ = graph_for_target(args, loaded.graph, bindings)
    live = optimized.live()
    ops = [n.op for i, n in optimized if live[i] and "matmul" in n.op]
    assert ops == ["qmatmul_requant_dequant_add"]  # with the QDQ Add of the bias
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    step = float(inits["y_scale"])  # of the output's DequantizeLinear
    want, got = evaluate(loaded.graph, bindings), evaluate(optimized, bindings)
    # an int8 product rounds h on the other side of a tie at most by one step of h,
    # which moves y = h + b by at most about one step of y
    off = np.concatenate([np.abs(got[k] - want[k]).ravel() / step for k in want])
    assert off.max() <= 2.001 and np.mean(off <= 1.001) >= 0.99
