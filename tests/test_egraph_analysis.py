"""The e-graph's shape and dtype analysis (generated from each op's egg_shape and
egg_dtype templates) agrees with the registry's own type inference, for every op."""

from __future__ import annotations

import json

import pytest
from egglog.bindings import EGraph
from hypothesis import given, settings

from eqsat.egraph.decode import decode
from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.extraction import locate
from eqsat.egraph.program import graph_program
from eqsat.egraph.saturate import run_commands, saturate_analysis
from eqsat.egraph.typing import type_egraph
from eqsat.ops import REGISTRY
from frontend import load_model
from tests.conftest import EXAMPLES
from tests.strategies import graphs, op_cases, scaled, single_op_graph

_PRELUDED: list[EGraph] = []


def _preluded() -> EGraph:
    """One e-graph with the prelude (every op's declaration and analysis rules) per
    process: declaring ~270 ops costs more than analysing a small graph, so each
    graph is analysed between a push and a pop of that e-graph."""
    if not _PRELUDED:
        egraph = EGraph()
        run_commands(egraph, program_prelude())
        _PRELUDED.append(egraph)
    return _PRELUDED[0]


def analysed(graph):
    egraph = _preluded()
    run_commands(egraph, "(push)")
    try:
        run_commands(egraph, graph_program(graph)[0])
        saturate_analysis(egraph)
        decoded = decode(json.loads(egraph.serialize([]).to_json()))
        conflicts = run_commands(egraph, "(print-size ShapeConflict)")[-1]
    finally:
        run_commands(egraph, "(pop)")
    assert conflicts.size == 0
    return decoded


def assert_analysis_matches(graph) -> None:
    decoded = analysed(graph)
    classes = locate(graph, decoded)
    live = graph.live()
    for i, node in graph:
        if not live[i]:
            continue
        c = classes[i]
        assert decoded.shapes.get(c) == node.type.shape, (node.op, node.attrs)
        assert decoded.dtypes.get(c) == node.type.dtype.value, (node.op, node.attrs)
    # and the Python-side typing of the decoded e-graph accepts every node
    typed = type_egraph(decoded)
    assert not typed.invalid


@pytest.mark.parametrize("op", sorted(REGISTRY))
def test_analysis_agrees_with_registry_for_every_op(op: str) -> None:
    @settings(max_examples=scaled(10))
    @given(case=op_cases(op))
    def check(case) -> None:
        assert_analysis_matches(single_op_graph(case))

    check()


@settings(max_examples=scaled(20))
@given(graph=graphs(max_ops=6))
def test_analysis_agrees_on_random_models(graph) -> None:
    assert_analysis_matches(graph)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_analysis_agrees_on_examples(path) -> None:
    _, graph = load_model(path)
    assert_analysis_matches(graph)
