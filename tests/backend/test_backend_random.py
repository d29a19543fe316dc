"""Random well-typed models (the shared strategy in tests/strategies.py) compile,
simulate and match the reference interpreter on both presets.

Integer overflow is excluded: numpy wraps, the machine saturates (like most
accelerators' integer units), so the two agree exactly only when nothing overflows.
Requantize with a scale that is not m / 2**s is approximated by a 31-bit fixed-point
multiplier (tested on its own in test_backend_units.py).
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backend.expr import requant_params
from eqsat.interpreter import random_bindings
from tests.backend.helpers import (
    assert_matches,
    bf16_magnitude,
    bf16_roundings,
    integer_overflow,
    magnitude,
    reference,
    run_backend,
)
from tests.strategies import graphs, scaled


def _exact_requantize(graph) -> bool:
    for _, node in graph:
        if node.op == "requantize" and node.attr("dtype") == "i8":
            m, s = requant_params(float(node.attr("scale")))
            if m / 2.0**s != float(node.attr("scale")):
                return False
        if node.op == "requantize" and node.attr("dtype") != "i8":
            return False
    return True


def _runtime_channel_scales(graph) -> bool:
    """A per-channel requantize (requantize_pc, requantize_ch, or a kernel around one)
    whose scales are an input: its multipliers are instruction immediates, so they must
    be known at compile time."""
    per_channel = ("requantize_pc", "requantize_ch")

    def has_per_channel(body) -> bool:
        if body is None or isinstance(body, str):
            return False
        return body.op in per_channel or any(has_per_channel(a) for a in body.args)

    for _, node in graph:
        if node.op in per_channel or has_per_channel(node.opdef.composition):
            scales = graph.nodes[node.inputs[node.opdef.operands.index("s")]]
            if scales.op == "input":
                return True
    return False


def _runtime_winograd_weights(graph) -> bool:
    """A Winograd weight transform of a value that is not a param: it runs when the
    weights are loaded, so the backend refuses it (priced unrunnable)."""
    return any(
        node.op == "winograd_weight" and graph.nodes[node.inputs[0]].op != "param"
        for _, node in graph
    )


@settings(max_examples=scaled(800), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(graphs(max_ops=8), st.integers(0, 2**16), st.sampled_from(["edge", "datacenter"]))
def test_random_models_simulate_like_the_reference(graph, seed, hw_name):
    bindings = random_bindings(graph, seed)
    assume(_exact_requantize(graph))
    assume(not _runtime_channel_scales(graph))
    assume(not _runtime_winograd_weights(graph))
    assume(not integer_overflow(graph, bindings))
    got, report, _ = run_backend(graph, hw_name, bindings)
    assert_matches(
        graph,
        got,
        reference(graph, bindings),
        bf16_magnitude(graph, bindings),
        bf16_roundings(graph),
        magnitude(graph, bindings, "f32"),
    )
    assert report.cycles >= report.roofline_cycles
