"""Fixtures of the backend tests: optimized example graphs, computed once per session."""

from __future__ import annotations

import functools

import pytest

from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import load_model
from hwsim import load_hardware
from tests.conftest import ROOT


@functools.cache
def example_graph(stem: str, optimized: bool, hw_name: str, dims: tuple = ()):
    """The example's graph (default dims unless given), optionally optimized for hw."""
    _, graph = load_model(ROOT / "examples" / f"{stem}.model", dict(dims))
    if not optimized:
        return graph
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    return optimize(graph, rules, load_hardware(hw_name)).graph


@pytest.fixture
def graphs_of():
    return example_graph
