"""Saturation limits hold on a rule set that explodes (associativity + commutativity
on a long add chain), and a valid, equivalent program is still extracted."""

from __future__ import annotations

import pytest

from eqsat.config import Limits
from eqsat.egraph.saturate import ITERATION_LIMIT, NODE_LIMIT, SATURATED, TIME_LIMIT
from eqsat.interpreter import random_bindings
from eqsat.rulesets import compile_rule_paths
from frontend import load_model
from tests.optimize_helpers import DATA, assert_same_outputs, optimize_graph


@pytest.fixture(scope="module")
def chain():
    return load_model(DATA / "add_chain.model")[1]


@pytest.fixture(scope="module")
def explode():
    return compile_rule_paths([DATA / "explode.rules"])


@pytest.mark.parametrize("node_limit", [500, 5_000, 20_000])
def test_node_limit_stops_within_a_small_overshoot(chain, explode, node_limit) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=100, node_limit=node_limit))
    sat = result.saturation
    assert sat.stop_reason == NODE_LIMIT
    # The back-off scheduler shares the remaining budget among the matching rules.
    assert sat.nodes <= 1.5 * node_limit
    assert_same_outputs(chain, result.graph, random_bindings(chain, 0))


def test_time_limit_stops_saturation(chain, explode) -> None:
    limit = 0.3
    result = optimize_graph(
        chain, explode, Limits(iter_limit=100, node_limit=10**9, time_limit=limit)
    )
    sat = result.saturation
    assert sat.stop_reason == TIME_LIMIT
    # A round predicted to overrun is not started; allow for a slow machine.
    assert sat.seconds < 10 * limit
    assert_same_outputs(chain, result.graph, random_bindings(chain, 1))


def test_iteration_limit(chain, explode) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=2, node_limit=10**9))
    assert result.saturation.stop_reason == ITERATION_LIMIT
    assert len(result.saturation.iterations) == 2


def test_small_rule_sets_saturate(chain) -> None:
    rules = compile_rule_paths([DATA / "fuse_only.rules"])
    result = optimize_graph(chain, rules)
    assert result.saturation.stop_reason == SATURATED


def test_each_round_reports_its_size(chain, explode) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=4, node_limit=10**9))
    sizes = [it.nodes for it in result.saturation.iterations]
    assert sizes == sorted(sizes) and sizes[-1] > result.saturation.initial_nodes
    assert result.saturation.rules_fired["add-comm"] > 0
    assert result.saturation.rules_fired["add-assoc"] > 0
