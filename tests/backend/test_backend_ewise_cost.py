"""Elementwise kernels of one instruction are priced as the streaming kernel runs them
(eqsat/spatial_plan.py stream_plan): whole operands, broadcast rows and columns
reloaded with every tile, channel biases; the price is the simulated cycles."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqsat.costs import op_cost
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.strategies import scaled

F32 = DType.F32
TINY = "tests/data/tiny_sram.toml"
TOLERANCE = 0.05


def _graph(op: str, shapes: list[tuple[int, ...]]):
    b = GraphBuilder(op)
    leaves = [b.leaf("input", f"a{k}", TensorType(F32, s)) for k, s in enumerate(shapes)]
    node = b.add(op, leaves, {}, "out")
    b.output("y", b.add("neg", [node], {}, "r"))  # the kernel writes a scratch buffer
    return b.graph


def _check(op: str, shapes: list[tuple[int, ...]], hw_name: str) -> tuple[int, int]:
    from eqsat.interpreter import random_bindings

    graph = _graph(op, shapes)
    bindings = random_bindings(graph, 0)
    got, report, compiled = run_backend(graph, hw_name, bindings, races=False)
    assert_matches(graph, got, reference(graph, bindings))
    i = next(i for i, n in graph if n.name == "out")
    spans = {k.name: k.cycles for k in report.kernels}
    sim = sum(spans[k.name] for k in compiled.kernels if k.node == i)
    node = graph.nodes[i]
    hw = compiled.hw
    model = op_cost(hw, op, [graph.nodes[j].type for j in node.inputs], node.type, {}).cycles
    return model, sim


CASES = [
    ("add", [(1, 128, 768), (1, 128, 768)]),  # a residual add
    ("add", [(1, 128, 3072), (3072,)]),  # a bias row: reloaded with every tile
    ("mul", [(64, 100), (64, 1)]),  # a column broadcast
    ("add", [(1, 64, 28, 28), (64, 1, 1)]),  # a channel bias
    ("exp", [(5000,)]),
    ("maximum", [(3, 7), (3, 7)]),  # one small tile: launch and latency
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("op", "shapes"), CASES, ids=lambda v: str(v))
def test_streamed_elementwise_kernels_are_priced_as_simulated(op, shapes, hw_name):
    model, sim = _check(op, shapes, hw_name)
    assert abs(model - sim) / sim <= TOLERANCE, f"model {model}, simulated {sim}"


@settings(max_examples=scaled(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(1, 300),
    cols=st.integers(2, 900),
    broadcast=st.sampled_from(["full", "row", "col"]),
    op=st.sampled_from(["add", "mul", "sub", "div"]),
    hw_name=st.sampled_from(["edge", "datacenter", TINY]),
)
def test_any_shape_and_broadcast(rows, cols, broadcast, op, hw_name):
    other = {"full": (rows, cols), "row": (cols,), "col": (rows, 1)}[broadcast]
    if rows == 1 and broadcast == "col":
        other = (1, 1)
    if other == (1, 1):
        return  # a scalar operand may fold into an immediate: not priced this way
    if broadcast == "col" and hw_name == TINY:
        return  # a known mispricing: test_column_operand_on_tiny_tiles_is_underpriced
    model, sim = _check(op, [(rows, cols), other], hw_name)
    # a column operand's small load next to each tile is where the queue model is
    # furthest off (up to 10% under when compute and DMA are balanced)
    assert abs(model - sim) / sim <= 0.12, f"model {model}, simulated {sim}"


@pytest.mark.xfail(
    strict=True,
    reason="known: many steps of two-row tiles with a column operand (three DMAs a step) "
    "simulate about 14% slower than the queue model in eqsat/spatial_plan.py predicts",
)
def test_column_operand_on_tiny_tiles_is_underpriced():
    model, sim = _check("add", [(104, 117), (104, 1)], TINY)
    assert abs(model - sim) / sim <= 0.12, f"model {model}, simulated {sim}"
