"""Small float ONNX graphs, quantized by ONNX Runtime's quantizer, and the checks the
quantized-import tests make: agreement with ONNX Runtime in quantization steps, and
simulated (hwsim) results equal to the reference interpreter's."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from tests.onnx.helpers import ort_run

RNG = np.random.default_rng(0)


def _weight(name: str, shape, scale: float = 0.3) -> onnx.TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _f32(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def matmul_add(m: int = 4, k: int = 24, n: int = 12) -> onnx.ModelProto:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["y"]),
    ]
    inits = [_weight("w", (k, n)), _weight("b", (n,), 0.1)]
    return _model(nodes, [_f32("x", [m, k])], [_f32("y", [m, n])], inits)


def mlp(m: int = 4, k: int = 16, h: int = 32, n: int = 8) -> onnx.ModelProto:
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["y0"]),
        helper.make_node("Add", ["y0", "b2"], ["y"]),
    ]
    inits = [_weight("w1", (k, h)), _weight("b1", (h,), 0.1)]
    inits += [_weight("w2", (h, n)), _weight("b2", (n,), 0.1)]
    return _model(nodes, [_f32("x", [m, k])], [_f32("y", [m, n])], inits)


def conv_relu(c: int = 3, o: int = 8, hw: int = 8) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    inits = [_weight("w", (o, c, 3, 3)), _weight("b", (o,), 0.1)]
    return _model(nodes, [_f32("x", [1, c, hw, hw])], [_f32("y", [1, o, hw, hw])], inits)


def conv_gate_concat(c: int = 3, o: int = 8, hw: int = 8) -> onnx.ModelProto:
    """A convolution whose result is gated by a squeeze-excitation sigmoid on one
    branch and a LeakyRelu on the other, the two concatenated: QOperator writes
    QLinearSigmoid, QLinearLeakyRelu and QLinearConcat for them."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"]),
        helper.make_node("Conv", ["p", "ws", "bs"], ["q"]),
        helper.make_node("Sigmoid", ["q"], ["g"]),
        helper.make_node("Mul", ["c", "g"], ["s"]),
        helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.1),
        helper.make_node("Concat", ["s", "l"], ["y"], axis=1),
    ]
    inits = [_weight("w", (o, c, 3, 3)), _weight("b", (o,), 0.1)]
    inits += [_weight("ws", (o, o, 1, 1)), _weight("bs", (o,), 0.1)]
    return _model(nodes, [_f32("x", [1, c, hw, hw])], [_f32("y", [1, 2 * o, hw, hw])], inits)


class _Reader:
    """onnxruntime's CalibrationDataReader protocol: a few seeded samples."""

    def __init__(self, shape, samples: int = 4):
        rng = np.random.default_rng(1)
        self._it = iter(
            [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(samples)]
        )

    def get_next(self):
        return next(self._it, None)


def quantized(model: onnx.ModelProto, folder: Path, name: str, mode: str, **options) -> Path:
    """MODEL quantized by ORT: mode "qdq" / "qoperator" (quantize_static, calibrated on
    4 samples) or "dynamic" (quantize_dynamic); options go to the quantizer."""
    q = pytest.importorskip("onnxruntime.quantization")
    logging.getLogger().setLevel(logging.ERROR)
    src, out = folder / f"{name}.onnx", folder / f"{name}.{mode}.onnx"
    onnx.save(model, str(src))
    if mode == "dynamic":
        q.quantize_dynamic(str(src), str(out), **options)
    else:
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        fmt = q.QuantFormat.QDQ if mode == "qdq" else q.QuantFormat.QOperator
        q.quantize_static(str(src), str(out), _Reader(shape), quant_format=fmt, **options)
    return out


def op_types(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def feeds_for(path: Path, seed: int = 5) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    vi = model.graph.input[0]
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    return {vi.name: np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def output_steps(path: Path, want: dict[str, np.ndarray]) -> dict[str, float]:
    """One quantization step of each output: the scale of the DequantizeLinear that
    computes it; for a float output of a dynamically quantized model, (max - min) / 255
    of ORT's output."""
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    steps = {}
    for name, ref in want.items():
        node = producers.get(name)
        if node is not None and node.op_type == "DequantizeLinear" and node.input[1] in inits:
            steps[name] = float(np.max(inits[node.input[1]]))
        else:
            steps[name] = float(np.ptp(ref)) / 255
    return steps


def steps_off(path: Path, feeds: dict) -> np.ndarray:
    """|eqsat run - ONNX Runtime| in quantization steps, every output element."""
    want = ort_run(path, feeds)
    loaded = load_model(path)
    got = loaded.onnx.results(evaluate(loaded.graph, loaded.bindings(0, feeds)))
    steps = output_steps(path, want)
    return np.concatenate(
        [(np.abs(got[k].astype(np.float64) - want[k]) / steps[k]).ravel() for k in want]
    )


def within_one_step(path: Path, feeds: dict) -> float:
    """The share of output elements within one quantization step of ORT (a relative
    1e-3 of a step allowed for the f32 rounding of the dequantized value)."""
    return float(np.mean(steps_off(path, feeds) <= 1.0 + 1e-3))


def simulated_and_run(path: Path, feeds: dict, hw: str = "edge"):
    """(simulated outputs, interpreter outputs) of the imported model as written."""
    from backend import compile_graph
    from hwsim import load_hardware, simulate

    loaded = load_model(path)
    bindings = loaded.bindings(0, feeds)
    hardware = load_hardware(hw)
    compiled = compile_graph(loaded.graph, hardware)
    result = simulate(compiled.program, hardware, compiled.feeds(bindings))
    return compiled.results(result.outputs), evaluate(loaded.graph, bindings)


def contraction_ops(path: Path) -> list[str]:
    """The contraction ops (matmul, conv, qmatmul, ...) of the imported model."""
    from eqsat.ops.fused import contraction_of

    graph = load_model(path).graph
    live = graph.live()
    return [n.op for i, n in graph if live[i] and contraction_of(n.op) is not None]
