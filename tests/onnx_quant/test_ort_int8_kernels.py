"""ONNX Runtime-quantized graphs optimize into eqsat's fused int8 kernels, exactly:
the optimized program simulates to the same bits as `eqsat run` of the import, and
the import stays within one quantization step of ONNX Runtime.

- a QDQ Conv's int32 bias at scale x_scale * w_scale joins the i32 accumulator at
  import (ORT's QLinearConv arithmetic), so the convolution, bias, rescale and the
  QuantizeLinear after it are one `qconv2d_bias_dequant_quant` kernel (the bias
  folding checked against ORT with hypothesis);
- per-channel scales of a product with batch axes are [1, N], so BERT's rank-3 QDQ
  MatMuls and their QuantizeLinear fuse into one `qmatmul_bias_dequant_quant`;
- MaxPool between a DequantizeLinear and a QuantizeLinear runs on the int8 values;
- a dynamically quantized MatMulInteger's run-time zero point is an i32 bias of the
  product, in the kernel's epilogue.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from tests.onnx.helpers import ort_run
from tests.onnx_quant.helpers import _f32, _model, _weight, feeds_for, quantized

pytestmark = pytest.mark.filterwarnings("ignore")
pytest.importorskip("onnxruntime.quantization")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("int8_kernels")


def _optimized(path, feeds, hw: str = "edge"):
    """(loaded model, bindings, the program `eqsat simulate` runs)."""
    from eqsat.cli import build_parser
    from eqsat.commands.compile import graph_for_target

    # a generous time limit: on a loaded machine the default (30 s) can run out, and the
    # optimizer then keeps the input program
    flags = ["simulate", str(path), "--hw", hw, "-q", "--time-limit", "300"]
    args = build_parser().parse_args(flags)
    loaded = load_model(path)
    bindings = loaded.bindings(0, feeds)
    optimized, _, _ = graph_for_target(args, loaded.graph, bindings)
    return loaded, bindings, optimized


def _kernels(graph) -> list[str]:
    """The ops of the live non-leaf nodes that are not free layout views."""
    live = graph.live()
    views = {"reshape", "transpose"}
    return sorted(n.op for i, n in graph if live[i] and not n.is_leaf and n.op not in views)


def _simulated(graph, bindings, hw: str = "edge") -> dict:
    from backend import compile_graph
    from hwsim import load_hardware, simulate

    hardware = load_hardware(hw)
    compiled = compile_graph(graph, hardware)
    return compiled.results(simulate(compiled.program, hardware, compiled.feeds(bindings)).outputs)


def _assert_exact(path, feeds, expected_kernels: list[str]) -> None:
    """The optimized program has exactly `expected_kernels` and simulates to the bits of
    `eqsat run` on the import as written."""
    loaded, bindings, optimized = _optimized(path, feeds)
    assert _kernels(optimized) == sorted(expected_kernels)
    run = evaluate(loaded.graph, bindings)
    simulated = _simulated(optimized, {k: v for k, v in bindings.items()})
    for k in run:
        np.testing.assert_array_equal(simulated[k], run[k], err_msg=k)


def _conv_maxpool(c: int = 3, o: int = 8, hw: int = 8):
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node(
            "MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        ),
    ]
    inits = [_weight("w", (o, c, 3, 3)), _weight("b", (o,), 0.1)]
    out = hw // 2
    return _model(nodes, [_f32("x", [1, c, hw, hw])], [_f32("y", [1, o, out, out])], inits)


def _batched_linear(s: int = 4, k: int = 24, n: int = 12):
    """BERT's linear layer: a rank-3 activation times a 2-D weight, then the bias."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["y"]),
    ]
    inits = [_weight("w", (k, n)), _weight("b", (n,), 0.1)]
    return _model(nodes, [_f32("x", [1, s, k])], [_f32("y", [1, s, n])], inits)


def test_qdq_conv_bias_and_maxpool_are_int8_kernels(folder):
    """QDQ Conv (per-channel weights, int32 bias) -> Relu -> MaxPool: the input's
    quantization, one int8 convolution with its bias, rescale and requantization, and
    the max pool on i8 (the Relu is in ORT's quantization range); only the output is
    dequantized."""
    path = quantized(_conv_maxpool(), folder, "conv_pool", "qdq", per_channel=True)
    feeds = feeds_for(path)
    expected = ["quantize", "qconv2d_bias_dequant_quant", "max_pool2d", "dequantize"]
    _assert_exact(path, feeds, expected)
    _, _, optimized = _optimized(path, feeds)
    pools = [n for _, n in optimized if n.op == "max_pool2d"]
    assert [optimized.nodes[n.inputs[0]].type.dtype.value for n in pools] == ["i8"]


def test_qdq_batched_matmul_is_one_int8_kernel(folder):
    path = quantized(_batched_linear(), folder, "linear3d", "qdq", per_channel=True)
    feeds = feeds_for(path)
    loaded, _, optimized = _optimized(path, feeds)
    kernels = _kernels(optimized)
    # the product, its requantization and the QDQ Add of the bias: one int8 kernel
    assert kernels.count("qmatmul_requant_dequant_add") == 1
    assert "qmatmul" not in kernels and "cast" not in kernels
    assert "dequantize_add_quantize" not in kernels
    run = evaluate(loaded.graph, loaded.bindings(0, feeds))
    simulated = _simulated(optimized, loaded.bindings(0, feeds))
    for k in run:
        np.testing.assert_array_equal(simulated[k], run[k], err_msg=k)


def test_dynamic_matmul_zero_point_in_the_epilogue(folder):
    """quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scale):
    the run-time zero point's correction is the i32 bias of one qmatmul_bias_dequant."""
    path = quantized(_batched_linear(), folder, "linear3d", "dynamic")
    feeds = feeds_for(path)
    loaded, bindings, optimized = _optimized(path, feeds)
    kernels = _kernels(optimized)
    assert kernels.count("qmatmul_bias_dequant") == 1 and "qmatmul" not in kernels
    want = ort_run(path, feeds)
    got = loaded.onnx.results(evaluate(loaded.graph, bindings))
    for k in want:
        step = float(np.ptp(want[k])) / 255
        assert np.max(np.abs(got[k] - want[k])) <= step


def _qdq_conv_model(rng, c: int, o: int, hw: int, k: int, pad: int) -> tuple:
    """A QDQ Conv written as ORT's quantizer writes it: int8 activations (per tensor),
    int8 weights per output channel, an int32 bias at scale x_scale * w_scale."""
    xs, ys = np.float32(rng.uniform(0.01, 0.1)), np.float32(rng.uniform(0.05, 0.5))
    xz, yz = np.int8(rng.integers(-20, 20)), np.int8(rng.integers(-20, 20))
    ws = rng.uniform(0.001, 0.02, o).astype(np.float32)
    w = rng.integers(-127, 128, (o, c, k, k)).astype(np.int8)
    bs = (xs * ws).astype(np.float32)
    b = rng.integers(-5000, 5000, o).astype(np.int32)
    inits = [
        numpy_helper.from_array(np.array(xs), "xs"),
        numpy_helper.from_array(np.array(xz), "xz"),
        numpy_helper.from_array(w, "wq"),
        numpy_helper.from_array(ws, "ws"),
        numpy_helper.from_array(np.zeros(o, np.int8), "wz"),
        numpy_helper.from_array(b, "bq"),
        numpy_helper.from_array(bs, "bs"),
        numpy_helper.from_array(np.zeros(o, np.int32), "bz"),
        numpy_helper.from_array(np.array(ys), "ys"),
        numpy_helper.from_array(np.array(yz), "yz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[pad] * 4),
        helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    out = hw + 2 * pad - k + 1
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, o, out, out])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = (rng.standard_normal((1, c, hw, hw)) * 2).astype(np.float32)
    return model, {"x": x}, float(ys)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    c=st.integers(1, 4),
    o=st.integers(1, 6),
    hw=st.integers(3, 7),
    k=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_qdq_conv_bias_folding_matches_ort(folder, c, o, hw, k, seed):
    """The folded bias computes what ORT's QLinearConv computes (its QDQ fusion):
    f32(acc + b) * (x_scale * w_scale), within one step of ORT everywhere. (The
    single-example test above checks that it fuses and simulates exactly.)"""
    import onnx

    rng = np.random.default_rng(seed)
    model, feeds, step = _qdq_conv_model(rng, c, o, hw, k, k // 2)
    path = folder / f"conv_bias_{seed}.onnx"
    onnx.save(model, str(path))
    loaded = load_model(path)
    graph = loaded.graph
    live = graph.live()
    adds = [n for i, n in graph if live[i] and n.op == "add"]
    assert [n.type.dtype.value for n in adds] == ["i32"]  # the bias, in the accumulator
    got = loaded.onnx.results(evaluate(graph, loaded.bindings(0, feeds)))
    want = ort_run(path, feeds)
    assert np.max(np.abs(got["y"] - want["y"])) <= step * 1.001


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    op=st.sampled_from(["add", "mul"]),
    scales=st.tuples(st.floats(0.001, 0.5), st.floats(0.001, 0.5), st.floats(0.001, 0.5)),
    zeros=st.tuples(st.integers(-128, 127), st.integers(-128, 127), st.integers(-128, 127)),
    seed=st.integers(0, 2**16),
)
def test_elementwise_requantize_kernels_simulate_exactly(tmp_path, op, scales, zeros, seed):
    """quantize(dequantize(x) op dequantize(y)) becomes dequantize_{op}_quantize, one
    kernel, and simulates to the interpreter's bits (ties included: the values are
    drawn on the int8 grid)."""
    (sx, sy, so), (zx, zy, zo) = scales, zeros
    text = f"""model m {{
  input x: i8[4, 96]
  input y: i8[96]
  r = quantize({op}(dequantize(x, scale={sx!r}, zero_point={zx}),
                   dequantize(y, scale={sy!r}, zero_point={zy})),
               scale={so!r}, zero_point={zo}, dtype=i8)
  output r
}}
"""
    path = tmp_path / "m.model"
    path.write_text(text)
    rng = np.random.default_rng(seed)
    feeds = {
        "x": rng.integers(-128, 128, (4, 96)).astype(np.int8),
        "y": rng.integers(-128, 128, 96).astype(np.int8),
    }
    loaded, bindings, optimized = _optimized(path, feeds)
    assert _kernels(optimized) == sorted(["dequantize", f"dequantize_{op}_quantize"])
    want = evaluate(loaded.graph, bindings)
    got = _simulated(optimized, bindings)
    np.testing.assert_array_equal(got["r"], want["r"])


@pytest.mark.parametrize("op_type", ["QLinearConv", "ConvInteger"])
def test_depthwise_integer_convolution_is_exact(folder, op_type):
    """A depthwise (group = C) QLinearConv / ConvInteger imports as a grouped qconv2d:
    equal to ONNX Runtime's result, and simulated exactly."""
    import onnx

    rng = np.random.default_rng(3)
    c = 6
    w = rng.integers(-100, 100, (c, 1, 3, 3)).astype(np.int8)
    x = rng.integers(0, 256, (1, c, 7, 7)).astype(np.uint8)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(120, np.uint8), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(rng.uniform(0.01, 0.05, c).astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(c, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
        numpy_helper.from_array(np.array(100, np.uint8), "yz"),
    ]
    conv = {"pads": [1, 1, 1, 1], "group": c, "strides": [2, 2]}
    if op_type == "QLinearConv":
        names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
        out = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, c, 4, 4])
    else:
        names, inits = ["x", "w", "xz"], [inits[1], inits[2]]
        out = helper.make_tensor_value_info("y", TensorProto.INT32, [1, c, 4, 4])
    graph = helper.make_graph(
        [helper.make_node(op_type, names, ["y"], **conv)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, 7, 7])],
        [out],
        inits,
    )
    path = folder / f"depthwise_{op_type}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    loaded = load_model(path)
    bindings = loaded.bindings(0, {"x": x})
    run = evaluate(loaded.graph, bindings)
    np.testing.assert_array_equal(loaded.onnx.results(run)["y"], ort_run(path, {"x": x})["y"])
    simulated = _simulated(loaded.graph, bindings)
    for k in run:
        np.testing.assert_array_equal(simulated[k], run[k], err_msg=k)
