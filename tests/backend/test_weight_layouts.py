"""A weight read only through one transpose (a Gemm's transB weight [N, K]) is stored
transposed by the host, as conv weights are: its product reads rows, and the cost
model, which prices the transpose at nothing, is right about it."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from eqsat.costs import op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.program_cost import program_cost
from hwsim import load_hardware, simulate
from tests.backend.helpers import assert_matches, reference


def _graph(dtype: DType, m: int, k: int, n: int):
    b = GraphBuilder("t")
    x = b.leaf("input", "x", TensorType(dtype, (m, k)))
    w = b.leaf("param", "w", TensorType(dtype, (n, k)))
    wt = b.add("transpose", [w], {"perm": (1, 0)}, "wt")
    if dtype is DType.I8:
        y = b.add("qmatmul", [x, wt], {"a_zero": -128, "b_zero": 0}, "y")
    else:
        y = b.add("matmul", [x, wt], {}, "y")
    b.output("y", y)
    return b.graph


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("dtype", "m"), [(DType.F32, 64), (DType.I8, 1), (DType.I8, 32)])
def test_a_transposed_weight_is_stored_transposed(hw_name, dtype, m):
    graph = _graph(dtype, m, 640, 200)
    hw = load_hardware(hw_name)
    bindings = random_bindings(graph, 0)
    compiled = compile_graph(graph, hw)  # the weights fed at run time, by the host
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    assert [k.role for k in compiled.kernels] == ["main"]  # no copy, no sums kernel
    product = graph.nodes[-1]
    in_types = [graph.nodes[j].type for j in product.inputs]
    model = op_cost(hw, product.op, in_types, product.type, product.attr_dict).cycles
    assert program_cost(graph, hw).cycles == model
    sim = result.report.cycles
    assert abs(model - sim) / sim < 0.05, (model, sim)
    np.testing.assert_array_equal(compiled.feeds(bindings)["w"], bindings["w"].T)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_value_read_only_by_a_transpose_of_fewer_than_two_axes(rank):
    """A transpose of a scalar or a vector keeps its one axis: the layout choice takes
    it as the identity (it indexed the permutation's last axis, and a scalar has none)."""
    b = GraphBuilder("t")
    x = b.leaf("input", "x", TensorType(DType.F32, (5,) * rank))
    y = b.add("add_relu", [x, x])  # a fused kernel: its layout follows its one reader
    b.output("y", b.add("transpose", [y], {"perm": tuple(range(rank))}))
    graph = b.graph
    bindings = random_bindings(graph, 0)
    hw = load_hardware("edge")
    compiled = compile_graph(graph, hw)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
