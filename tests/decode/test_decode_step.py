"""The decode step over a KV cache (examples/llama_decode.model; bench/models/
decode_models.py at any size) computes what a causal prefill over the whole sequence
computes for its last row, with its cache padded to a bucket and the padding masked,
and so does its optimized program simulated on both presets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from bench.models.decode_models import (
    SHAPES,
    decode_feeds,
    decode_model,
    graph_of,
    layer_weights,
    prefill_model,
)
from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import graph_to_model, print_model
from hwsim import load_hardware, simulate
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "llama_decode.model"
SMALL = SHAPES["small"]


def _sequence(length: int, seed: int):
    rng = np.random.default_rng(seed)
    weights = layer_weights(SMALL, rng)
    x = rng.standard_normal((1, length, SMALL.hidden)).astype(np.float32)
    return weights, x


def _prefill(weights, x):
    graph = graph_of(prefill_model(SMALL), {"S": x.shape[1]})
    return evaluate(graph, {"x": x, **weights})


def test_the_example_is_the_generated_decode_step():
    example = load_model(EXAMPLE, {"L": 7}).graph
    generated = graph_of(decode_model(SMALL), {"L": 7})
    assert print_model(graph_to_model(example)) == print_model(graph_to_model(generated))


@settings(max_examples=6)
@given(length=st.integers(1, 24), pad=st.integers(0, 9), seed=st.integers(0, 2**16))
def test_decode_step_is_the_last_row_of_the_prefill(length, pad, seed):
    weights, x = _sequence(length + 1, seed)
    full = _prefill(weights, x)
    past = _prefill(weights, x[:, :length])
    bucket = length + pad
    feeds = decode_feeds(past["present_k"], past["present_v"], bucket)
    step = evaluate(
        graph_of(decode_model(SMALL), {"L": bucket}), {"x": x[:, length:], **weights, **feeds}
    )
    np.testing.assert_allclose(step["y"][:, 0], full["y"][:, length], rtol=1e-4, atol=1e-4)
    for name in ("present_k", "present_v"):
        grown = step[name]
        np.testing.assert_array_equal(grown[:, :, :length], past[name])  # the cache, kept
        assert not grown[:, :, length:bucket].any()  # the padding, as fed
        np.testing.assert_allclose(
            grown[:, :, bucket], full[name][:, :, length], rtol=1e-4, atol=1e-5
        )


@pytest.fixture(scope="module")
def rules():
    return compile_rule_paths(sorted(DEFAULT_RULES_DIR.glob("*.rules")))


def _simulated_step(rules, preset: str, length: int, bucket: int, seed: int) -> None:
    hw = load_hardware(preset)
    weights, x = _sequence(length + 1, seed)
    full = _prefill(weights, x)
    past = _prefill(weights, x[:, :length])
    graph = load_model(EXAMPLE, {"L": bucket}).graph
    compiled = compile_graph(optimize(graph, rules, hw).graph, hw)
    feeds = {
        "x": x[:, length:],
        **weights,
        **decode_feeds(past["present_k"], past["present_v"], bucket),
    }
    got = compiled.results(simulate(compiled.program, hw, compiled.feeds(feeds)).outputs)
    np.testing.assert_allclose(got["y"][:, 0], full["y"][:, length], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        got["present_k"][:, :, bucket], full["present_k"][:, :, length], rtol=1e-4, atol=1e-5
    )
    np.testing.assert_array_equal(got["present_v"][:, :, :length], past["present_v"])


@settings(max_examples=2)
@given(length=st.integers(1, 40), pad=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_example_simulates_as_the_prefill_on_datacenter(rules, length, pad, seed):
    _simulated_step(rules, "datacenter", length, length + pad, seed)


def test_example_simulates_as_the_prefill_on_edge(rules):
    _simulated_step(rules, "edge", 13, 16, 0)
