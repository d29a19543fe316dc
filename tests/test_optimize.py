"""eqsat optimize: the optimized program means what the original meant, never costs
more, and is strictly cheaper where fusion applies; ILP never loses to greedy."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.interpreter import random_bindings
from frontend import check_model, graph_to_model, parse_model, print_model
from tests.conftest import EXAMPLES
from tests.optimize_helpers import assert_same_outputs, optimized_example
from tests.strategies import graphs, scaled

NAMES = [p.stem for p in EXAMPLES]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=scaled(5))
@given(seed=st.integers(0, 2**32 - 1))
def test_optimized_example_is_equivalent(name: str, seed: int) -> None:
    result = optimized_example(name)
    assert_same_outputs(result.original, result.graph, random_bindings(result.original, seed))


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
@pytest.mark.parametrize("name", NAMES)
def test_cost_never_above_original(name: str, hw: str) -> None:
    result = optimized_example(name, hw)
    assert result.after.cycles <= result.before.cycles
    assert result.extraction.dag_cost <= result.before.cycles


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
@pytest.mark.parametrize("name", ["bert_layer", "mlp"])
def test_fusion_makes_bert_and_mlp_strictly_cheaper(name: str, hw: str) -> None:
    result = optimized_example(name, hw)
    assert result.after.cycles < result.before.cycles
    assert result.after.kernels < result.before.kernels
    assert any(node.opdef.kind.value == "fused" for node in result.graph.nodes)


@pytest.mark.parametrize("name", NAMES)
def test_ilp_never_costs_more_than_greedy(name: str) -> None:
    greedy = optimized_example(name, "edge", "greedy")
    ilp = optimized_example(name, "edge", "ilp")
    assert ilp.extraction.dag_cost <= greedy.extraction.dag_cost + 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_optimized_model_prints_and_reparses(name: str) -> None:
    result = optimized_example(name)
    text = print_model(graph_to_model(result.graph))
    again = check_model(parse_model(text))
    assert again.nodes == result.graph.nodes
    assert again.outputs == result.graph.outputs


@settings(max_examples=scaled(20))
@given(graph=graphs(max_ops=6), seed=st.integers(0, 2**32 - 1))
def test_random_models_optimize_to_equivalent_programs(graph, seed) -> None:
    from tests.optimize_helpers import optimize_graph

    result = optimize_graph(graph)
    assert result.after.cycles <= result.before.cycles
    assert_same_outputs(graph, result.graph, random_bindings(graph, seed))
