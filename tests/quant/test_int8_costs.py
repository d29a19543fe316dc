"""The cost model prices int8 kernels as the backend emits them: the zero-point sums of
a run-time operand (a transposed copy and row reductions, per inference), none for
weights (folded at compile time or prepared by the host at load time), and no weight
copy for a literal conv weight (stored in the packed layout like a param)."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from eqsat.costs import op_cost, zero_point_sums_cost
from eqsat.fidelity import measure_program
from eqsat.interpreter import evaluate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.program_cost import program_cost
from hwsim import load_hardware, simulate


def _product(leaf: str, bt: int, m: int, k: int, n: int, za: int, zb: int):
    b = GraphBuilder("zp")
    x = b.leaf("input", "x", TensorType(DType.I8, (bt, m, k)))
    y = b.leaf(leaf, "y", TensorType(DType.I8, (bt, k, n)))
    b.output("o", b.add("qmatmul", (x, y), {"a_zero": za, "b_zero": zb}, "o"))
    rng = np.random.default_rng(bt * m + n)
    bind = {
        "x": rng.integers(-128, 128, (bt, m, k)).astype(np.int8),
        "y": rng.integers(-128, 128, (bt, k, n)).astype(np.int8),
    }
    return b.graph, bind


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(
    "shape", [(12, 16, 64, 16, 3, -5), (1, 128, 768, 128, 3, 0), (12, 64, 64, 64, 0, 7)]
)
def test_run_time_zero_point_sums_are_priced(hw_name, shape) -> None:
    """An activation x activation int8 product (attention's) with zero points: the
    estimate, sums included, is within 6% of the simulated cycles."""
    hw = load_hardware(hw_name)
    graph, bind = _product("input", *shape)
    row = measure_program(graph, hw, bind)
    assert abs(row.error) <= 0.06, (row.predicted, row.simulated)
    (kernel,) = row.kernels  # the product and its sums kernels, priced together
    assert abs(kernel.error) <= 0.06
    node = graph.nodes[graph.outputs[0][1]]
    in_types = [graph.nodes[j].type for j in node.inputs]
    main = op_cost(hw, "qmatmul", in_types, node.type, node.attr_dict).cycles
    assert program_cost(graph, hw).cycles == kernel.predicted > main


def test_weight_zero_point_sums_cost_nothing() -> None:
    """Over a param (fed at run time) the sums are prepared by the host: no kernel, no
    price; simulated == run exactly."""
    hw = load_hardware("datacenter")
    graph, bind = _product("param", 1, 64, 256, 96, -7, 0)
    node = graph.nodes[graph.outputs[0][1]]
    in_types = [graph.nodes[j].type for j in node.inputs]
    assert zero_point_sums_cost(hw, "qmatmul", in_types, node.attr_dict, [True, False]) == 0
    assert zero_point_sums_cost(hw, "qmatmul", in_types, node.attr_dict, [True, True]) > 0
    compiled = compile_graph(graph, hw)
    assert [k.name for k in compiled.kernels] == ["qmatmul.o"]
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    np.testing.assert_array_equal(compiled.results(result.outputs)["o"], evaluate(graph, bind)["o"])
    row = measure_program(graph, hw, bind)
    assert abs(row.error) <= 0.03


def test_literal_conv_weights_are_not_copied() -> None:
    """A qconv2d whose weights are a model literal (an ONNX initializer) reads them in
    the packed layout, as it reads a param's: no copy kernel, estimate within 3%."""
    hw = load_hardware("datacenter")
    rng = np.random.default_rng(2)
    b = GraphBuilder("lit")
    x = b.leaf("input", "x", TensorType(DType.I8, (1, 64, 14, 14)))
    w = b.literal("w", rng.integers(-127, 128, (64, 64, 3, 3)), DType.I8)
    attrs = {"a_zero": -128, "padding": (1, 1)}
    b.output("y", b.add("qconv2d", (x, w), attrs, "y"))
    graph = b.graph
    bind = {"x": rng.integers(-128, 128, (1, 64, 14, 14)).astype(np.int8)}
    compiled = compile_graph(graph, hw)
    assert not any(k.name.startswith("copy") for k in compiled.kernels)
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    np.testing.assert_array_equal(compiled.results(result.outputs)["y"], evaluate(graph, bind)["y"])
    assert abs(measure_program(graph, hw, bind).error) <= 0.03
