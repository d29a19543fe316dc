"""The float islands ONNX Runtime's quantizer leaves in an int8 transformer (erf-GELU,
LayerNormalization, Softmax between a DequantizeLinear and a QuantizeLinear) run as one
kernel each, and the simulated results equal the reference interpreter's bit for bit.

The graph is a BERT feed-forward block in miniature (product, erf-GELU, product,
residual, LayerNormalization, Softmax), quantized by ORT in both static formats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper, numpy_helper

from tests.onnx_quant.helpers import (
    _f32,
    _model,
    _weight,
    feeds_for,
    quantized,
    within_one_step,
)

FUSED = {
    "qlinear_erf_gelu",
    "qlinear_erf_gate",
    "dequantize_erf_gelu",
    "qmatmul_requant_dequant_add",
    "dequantize_layernorm_quantize",
    "dequantize_softmax_quantize",
    "dequantize_softmax_requantize",
}


def ffn_block(m: int = 8, d: int = 32, h: int = 64):
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Div", ["h1", "sqrt2"], ["g0"]),
        helper.make_node("Erf", ["g0"], ["g1"]),
        helper.make_node("Add", ["g1", "one"], ["g2"]),
        helper.make_node("Mul", ["h1", "g2"], ["g3"]),
        helper.make_node("Mul", ["g3", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["y0"]),
        helper.make_node("Add", ["y0", "x"], ["r"]),
        helper.make_node("LayerNormalization", ["r", "gamma", "beta"], ["n"], axis=-1),
        helper.make_node("Softmax", ["n"], ["y"], axis=-1),
    ]
    inits = [_weight("w1", (d, h)), _weight("b1", (h,), 0.1), _weight("w2", (h, d), 0.2)]
    inits += [c("sqrt2", math.sqrt(2.0)), c("one", 1.0), c("half", 0.5)]
    inits += [c("gamma", 1.0 + 0.1 * np.arange(d) / d), _weight("beta", (d,), 0.1)]
    return _model(nodes, [_f32("x", [m, d])], [_f32("y", [m, d])], inits)


@pytest.mark.parametrize("mode", ["qoperator", "qdq"])
def test_float_islands_fuse_and_simulate_exactly(tmp_path, mode) -> None:
    from backend import compile_graph
    from eqsat.cli import build_parser
    from eqsat.commands.compile import graph_for_target
    from eqsat.costs import op_cost
    from eqsat.interpreter import evaluate
    from eqsat.loading import load_model
    from hwsim import simulate

    path = quantized(ffn_block(), tmp_path, "ffn", mode)
    feeds = feeds_for(path)
    assert within_one_step(path, feeds) == 1.0
    loaded = load_model(path)
    bindings = loaded.bindings(0, feeds)
    run = evaluate(loaded.graph, bindings)
    flags = ["simulate", str(path), "--hw", "datacenter", "-q", "--time-limit", "300"]
    optimized, hw, _ = graph_for_target(build_parser().parse_args(flags), loaded.graph, bindings)
    live = optimized.live()
    ops = [n.op for i, n in optimized if live[i] and not n.is_leaf]
    # each island one kernel: no float erf, layernorm or softmax kernel is left
    assert {"erf", "layernorm", "softmax"}.isdisjoint(ops), ops
    assert "dequantize_layernorm_quantize" in ops, ops
    assert FUSED & set(ops) - {"dequantize_layernorm_quantize"}, ops
    compiled = compile_graph(optimized, hw)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    outs = compiled.results(result.outputs)
    for k in run:
        np.testing.assert_array_equal(outs[k], run[k])
    # the cost model prices each fused kernel as the simulator runs it
    spans = {k.name.split(".")[0]: k.end - k.start for k in result.report.kernels}
    for i, node in optimized:
        if live[i] and node.op in FUSED:
            types = [optimized.nodes[j].type for j in node.inputs]
            est = op_cost(hw, node.op, types, node.type, node.attr_dict).cycles
            assert abs(est - spans[node.op]) <= 0.05 * spans[node.op], (node.op, est)
