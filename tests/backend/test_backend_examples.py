"""Every example model compiles, simulates and matches the reference interpreter, on both
presets, as written and optimized, at its default dimensions (a new example is covered
automatically)."""

from __future__ import annotations

import pytest

from eqsat.interpreter import random_bindings
from hwsim import parse
from tests.backend.conftest import example_graph
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.conftest import EXAMPLES

STEMS = [p.stem for p in EXAMPLES]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("optimized", [False, True], ids=["as-written", "optimized"])
@pytest.mark.parametrize("stem", STEMS)
def test_example_simulates_like_the_reference(stem, optimized, hw_name):
    original = example_graph(stem, False, hw_name)
    graph = example_graph(stem, optimized, hw_name)
    bindings = random_bindings(original, seed=3)
    got, report, compiled = run_backend(graph, hw_name, bindings, races=True)
    assert_matches(original, got, reference(original, bindings))
    assert report.cycles >= report.roofline_cycles > 0
    main = {k.node for k in compiled.kernels if k.role == "main"}
    ops = {i for i, n in graph if graph.live()[i] and not n.is_leaf}
    assert main <= ops  # every kernel marker names a node of the graph it lowers
    assert parse(compiled.asm) == compiled.program  # the assembly text is the same program


@pytest.mark.parametrize("stem", STEMS)
def test_bf16_version_of_example_matches(stem):
    """The same model in bf16 (params and inputs rounded; every op rounds its result)."""
    graph = _as_bf16(example_graph(stem, False, "edge"))
    bindings = random_bindings(graph, seed=1)
    got, _, _ = run_backend(graph, "edge", bindings, races=False)
    assert_matches(graph, got, reference(graph, bindings))


def _as_bf16(graph):
    from eqsat.ir.graph import GraphBuilder
    from eqsat.ir.types import DType

    b = GraphBuilder(graph.name + "_bf16", graph.dims)
    for _, node in graph:
        attrs = node.attr_dict
        if node.is_leaf:
            attrs["dtype"] = "bf16" if DType(attrs["dtype"]).is_float else attrs["dtype"]
        b.add(node.op, node.inputs, attrs, node.name)
    for name, i in graph.outputs:
        b.output(name, i)
    return b.graph
