"""Row kernels (softmax, layernorm, rmsnorm) and reductions as eqsat/row_plan.py plans
them: the backend emits exactly the planned tiles and instructions, the results match
the reference, and the cost model's price is the simulated cycles (tiles that hold the
whole tensor, many tiles, an edge tile, rows too long for SRAM, reductions over axes
that are not the last)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.costs import UNRUNNABLE_CYCLES, channels_last_reduce_cost, op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.row_plan import PARAMS, row_cost, row_kernel_fits, rows_per_tile
from eqsat.window_plan import stores_channels_last
from hwsim import Binary, Load, Reduce, Store, Unary, load_hardware, simulate
from hwsim.timing import instruction_cost
from tests.backend.helpers import assert_matches, kernel_instrs, reference
from tests.strategies import scaled

F32, BF16 = DType.F32, DType.BF16
TINY = "tests/data/tiny_sram.toml"
TOLERANCE = 0.03  # |model - sim| / sim


def _graph(kind: str, t: TensorType, axis: int = -1):
    """One row kernel whose output is consumed (so it writes a scratch buffer, as in a
    model), its parameters of x's dtype."""
    b = GraphBuilder(kind)
    x = b.leaf("input", "x", t)
    d = (t.shape[axis],)
    if kind == "softmax":
        node = b.add("softmax", [x], {"axis": axis}, "out")
    else:
        params = [b.leaf("param", name, TensorType(t.dtype, d)) for name in ("gamma", "beta")]
        params = params[: 2 if kind == "layernorm" else 1]
        node = b.add(kind, [x, *params], {"eps": 1e-5}, "out")
    b.output("y", b.add("relu", [node], {}, "r"))
    return b.graph


def _run(graph, hw_name: str):
    hw = load_hardware(hw_name)
    bindings = random_bindings(graph, 0)
    compiled = compile_graph(graph, hw, consts=bindings)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    return hw, bindings, compiled, result


def _kernel_cycles(graph, compiled, result) -> int:
    node = next(i for i, n in graph if n.name == "out")
    spans = {k.name: k.cycles for k in result.report.kernels}
    return sum(spans[k.name] for k in compiled.kernels if k.node == node)


def _kernel_instrs(graph, compiled) -> list:
    """The instructions of the row kernel."""
    node = next(i for i, n in graph if n.name == "out")
    (name,) = [k.name for k in compiled.kernels if k.node == node]
    return kernel_instrs(compiled, name)


def _node(graph):
    i = next(i for i, n in graph if n.name == "out")
    n = graph.nodes[i]
    return n, [graph.nodes[j].type for j in n.inputs]


KINDS = ["softmax", "layernorm", "rmsnorm"]
SHAPES = [
    TensorType(F32, (12, 128, 128)),  # BERT's attention probabilities: many tiles
    TensorType(F32, (128, 768)),  # BERT's hidden states
    TensorType(BF16, (130, 512)),  # an edge tile
    TensorType(F32, (3, 10)),  # one tile, launch-bound
    TensorType(F32, (2, 6000)),  # long rows: one row per tile on edge
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("t", SHAPES, ids=str)
def test_cost_model_prices_the_simulated_cycles(hw_name, kind, t):
    graph = _graph(kind, t)
    hw, bindings, compiled, result = _run(graph, hw_name)
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    node, in_types = _node(graph)
    model = op_cost(hw, node.op, in_types, node.type, node.attr_dict).cycles
    sim = _kernel_cycles(graph, compiled, result)
    assert abs(model - sim) / sim <= TOLERANCE, f"model {model}, simulated {sim}"


@settings(max_examples=scaled(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    rows=st.integers(1, 300),
    n=st.integers(1, 700),
    dtype=st.sampled_from([F32, BF16]),
    hw_name=st.sampled_from(["edge", "datacenter", TINY]),
)
def test_the_backend_emits_the_planned_instructions(kind, rows, n, dtype, hw_name):
    """As many loads, stores, reductions and vector instructions as the plan's tiles
    and row program hold; the vector unit busy for exactly the planned cycles."""
    t = TensorType(dtype, (rows, n))
    hw = load_hardware(hw_name)
    dtypes = {k: dtype.value for k in PARAMS[kind]}
    if not row_kernel_fits(hw, kind, n, dtype.value, dtype.value, dtypes):
        return
    graph = _graph(kind, t)
    _, bindings, compiled, result = _run(graph, hw_name)
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    instrs = _kernel_instrs(graph, compiled)
    rt = rows_per_tile(hw, rows, n, dtype.value, dtype.value, dtypes)
    tiles = -(-rows // rt)
    params = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[kind]
    assert sum(isinstance(i, Load) for i in instrs) == tiles + params
    assert sum(isinstance(i, Store) for i in instrs) == tiles
    per_tile = {"softmax": (2, 3), "layernorm": (2, 9), "rmsnorm": (1, 6)}[kind]
    assert sum(isinstance(i, Reduce) for i in instrs) == tiles * per_tile[0]
    assert sum(isinstance(i, Binary | Unary) for i in instrs) == tiles * per_tile[1]
    planned = row_cost(hw, kind, rows, n, dtype.value, dtype.value, dtypes)
    vector = sum(
        c for unit, c in map(lambda i: instruction_cost(hw, i), instrs) if unit == "vector"
    )
    assert vector == planned.compute_cycles


def test_a_row_that_does_not_fit_is_unrunnable():
    hw = load_hardware(TINY)
    t = TensorType(F32, (4, 4096))
    cost = op_cost(hw, "softmax", [t], t, {"axis": -1})
    assert not cost.feasible and cost.cycles >= UNRUNNABLE_CYCLES
    with pytest.raises(Exception, match="does not fit the SRAM"):
        compile_graph(_graph("softmax", t), hw)


def test_softmax_along_a_middle_axis_is_priced_on_that_axis():
    hw = load_hardware("edge")
    t = TensorType(F32, (4, 300, 16))
    last = op_cost(hw, "softmax", [t], t, {"axis": -1}).cycles
    middle = op_cost(hw, "softmax", [t], t, {"axis": 1}).cycles
    assert middle != last
    graph = _graph("softmax", t, axis=1)
    _, bindings, compiled, result = _run(graph, "edge")
    np.testing.assert_allclose(
        compiled.results(result.outputs)["y"], reference(graph, bindings)["y"], rtol=1e-5
    )


def _reduce_graph(op: str, t: TensorType, axes: tuple[int, ...]):
    b = GraphBuilder(op)
    x = b.leaf("input", "x", t)
    node = b.add(op, [x], {"axes": axes, "keepdims": False}, "out")
    b.output("y", b.add("relu", [node], {}, "r"))
    return b.graph


REDUCTIONS = [
    ("reduce_mean", TensorType(F32, (2, 512, 7, 7)), (2, 3)),  # global average pooling
    ("reduce_mean", TensorType(F32, (1, 128, 4096)), (2,)),  # RMSNorm's mean square
    ("reduce_sum", TensorType(F32, (64, 3, 50)), (0,)),  # a leading axis: across rows
    ("reduce_max", TensorType(BF16, (2, 3000, 40)), (1,)),  # a middle axis, many chunks
    ("reduce_max", TensorType(BF16, (8, 40000)), (1,)),  # rows cut into column chunks
    ("reduce_sum", TensorType(F32, (5, 9)), (1,)),  # one small tile
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter", TINY])
@pytest.mark.parametrize(("op", "t", "axes"), REDUCTIONS, ids=lambda v: str(v))
def test_reductions_are_priced_as_simulated(hw_name, op, t, axes):
    graph = _reduce_graph(op, t, axes)
    hw, bindings, compiled, result = _run(graph, hw_name)
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    node, in_types = _node(graph)
    model = op_cost(hw, node.op, in_types, node.type, node.attr_dict).cycles
    sim = _kernel_cycles(graph, compiled, result)
    assert abs(model - sim) / sim <= 0.05, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("op", ["reduce_mean", "reduce_max"])
def test_a_channels_last_image_is_pooled_as_stored(hw_name, op):
    """A depthwise convolution's row-block kernel stores its result channels-last; the
    global pool after it (a squeeze-excitation block's) reduces across its rows as
    stored, with no copy kernel, and is priced as it runs."""
    b = GraphBuilder("se")
    x = b.leaf("input", "x", TensorType(F32, (1, 48, 20, 20)))
    w = b.leaf("param", "w", TensorType(F32, (48, 1, 3, 3)))
    bias = b.leaf("param", "b", TensorType(F32, (48, 1, 1)))
    attrs = {"stride": (1, 1), "padding": (1, 1), "groups": 48}
    conv = b.add("conv2d_bias_silu", [x, w, bias], attrs, "c")
    pooled = b.add(op, [conv], {"axes": (2, 3), "keepdims": True}, "out")
    b.output("y", b.add("mul", [conv, b.add("sigmoid", [pooled], {}, "g")], {}, "s"))
    graph = b.graph
    hw, bindings, compiled, result = _run(graph, hw_name)
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    node = next(i for i, n in graph if n.name == "out")
    assert [k.role for k in compiled.kernels if k.node == node] == ["main"]
    c = graph.nodes[conv]
    assert stores_channels_last(c.op, [graph.nodes[j].type for j in c.inputs], c.type, attrs)
    n, in_types = _node(graph)
    model = channels_last_reduce_cost(hw, n.op, in_types[0], n.type, n.attr_dict).cycles
    sim = _kernel_cycles(graph, compiled, result)
    assert abs(model - sim) / sim <= 0.02, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("op", ["reduce_max", "reduce_sum"])
def test_a_reduction_of_every_axis_of_a_strided_view(op):
    """A dynamic quantization's range (reduce_max of a whole tensor) of a transposed
    view: no axis is kept, so the view is copied into one row first."""
    b = GraphBuilder("r")
    x = b.leaf("input", "x", TensorType(F32, (6, 40, 3)))
    t = b.add("transpose", [x], {"perm": (2, 0, 1)}, "t")
    node = b.add(op, [b.add("relu", [t], {}, "v")], {"axes": (0, 1, 2), "keepdims": False}, "out")
    r = b.add(op, [t], {"axes": (0, 1, 2), "keepdims": False}, "raw")
    b.output("y", node)
    b.output("z", r)
    graph = b.graph
    _, bindings, compiled, result = _run(graph, "edge")
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
