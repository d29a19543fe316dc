"""Rules around the spatial ops: a convolution rule that drops `groups` is caught as
unsound (the generators draw grouped and depthwise convolutions), the RMSNorm fusion
recognises the decomposed forms exporters write, and fused grouped convolutions
survive optimization and simulate like the model."""

from __future__ import annotations

import pytest

from eqsat.interpreter import random_bindings
from eqsat.rules import load_rules
from eqsat.verify.check import FAILED, PASSED, check_direction
from eqsat.verify.rules import select
from frontend import check_model, parse_model
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.optimize_helpers import assert_same_outputs, optimize_graph
from tests.strategies import scaled

FORGETFUL = """
ruleset forgetful

# conv(x, w) + b, but the fused kernel takes the default groups
conv-bias-no-groups: add(conv2d(x, w, stride=S, padding=P), b) => conv2d_bias(x, w, b, stride=S, padding=P)
                     if rank(b) == 3, dim(b, 0) == dim(w, 0), dim(b, 1) == 1, dim(b, 2) == 1
# the batch-norm scale folded into a convolution that forgets its groups
conv-fold-no-groups: mul(conv2d(x, w, stride=S, padding=P), s)
                     => conv2d(x, mul(w, reshape(s, shape=[dim(s, 0), 1, 1, 1])), stride=S, padding=P)
                     if rank(s) == 3, dim(s, 0) == dim(w, 0), dim(s, 1) == 1, dim(s, 2) == 1
# rmsnorm over any axis (it normalizes the last one)
rmsnorm-any-axis:    r = mul(mul(x, rsqrt(add(reduce_mean(mul(x, x), axes=[A], keepdims=true),
                                              const(value=E, shape=[])))), gamma)
                     => r = rmsnorm(x, gamma, eps=E)
                     if rank(gamma) == 1, dim(gamma, 0) == dim(x, -1), E > 0.0
"""


@pytest.fixture(scope="module")
def forgetful(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "forgetful.rules"
    path.write_text(FORGETFUL)
    return {d.name: d for d in select(load_rules(path))}


@pytest.mark.parametrize("name", ["conv-bias-no-groups", "conv-fold-no-groups", "rmsnorm-any-axis"])
def test_rules_that_drop_groups_or_the_axis_are_caught(forgetful, name):
    result = check_direction(forgetful[name], scaled(200), seed=3)
    assert result.status == FAILED, f"{name} was not caught"


def test_the_shipped_conv_rules_carry_groups():
    from eqsat.rules import default_rules_dir

    shipped = {d.name: d for d in select(load_rules(default_rules_dir()))}
    for name in ("conv-bias", "conv-fold-scale", "conv-bias-relu", "conv-bias-add-relu"):
        result = check_direction(shipped[name], scaled(100), seed=5)
        assert result.status == PASSED, name


RMSNORM_FORMS = {
    "rsqrt": "mul(mul(x, rsqrt(add(reduce_mean(mul(x, x), axes=[-1], keepdims=true), eps))), g)",
    "reciprocal-sqrt": (
        "mul(mul(x, reciprocal(sqrt(add(reduce_mean(mul(x, x), axes=[-1], keepdims=true), eps)))), g)"
    ),
    "pow": "mul(mul(x, rsqrt(add(reduce_mean(pow(x, two), axes=[-1], keepdims=true), eps))), g)",
    "pow-gamma-left": (
        "mul(g, mul(x, reciprocal(sqrt(add(reduce_mean(pow(x, two), axes=[-1], keepdims=true), eps)))))"
    ),
}


@pytest.mark.parametrize("form", sorted(RMSNORM_FORMS))
def test_decomposed_rmsnorm_becomes_one_kernel(form):
    graph = check_model(
        parse_model(
            f"""
            model llama_norm {{
              input x: f32[8, 64]
              param g: f32[64]
              const eps: f32[] = 1e-6
              const two: f32[] = 2.0
              y = {RMSNORM_FORMS[form]}
              output y
            }}
            """
        )
    )
    result = optimize_graph(graph)
    ops = {node.op for _, node in result.graph}
    assert "rmsnorm" in ops and "reduce_mean" not in ops, ops
    assert_same_outputs(graph, result.graph, random_bindings(graph, 0))


def test_a_mobilenet_block_fuses_its_depthwise_epilogue_and_simulates():
    graph = check_model(
        parse_model(
            """
            model mobilenet_block {
              input x: f32[2, 16, 14, 14]
              param dw: f32[16, 1, 3, 3]
              param db: f32[16, 1, 1]
              param pw: f32[32, 16, 1, 1]
              param pb: f32[32, 1, 1]
              d = relu(add(conv2d(x, dw, padding=[1, 1], groups=16), db))
              y = relu(add(conv2d(d, pw), pb))
              output y
            }
            """
        )
    )
    result = optimize_graph(graph)
    fused = [node for _, node in result.graph if node.op == "conv2d_bias_relu"]
    assert sorted(node.attr("groups") for node in fused) == [1, 16]
    bindings = random_bindings(graph, 0)
    assert_same_outputs(graph, result.graph, bindings)
    got, _, _ = run_backend(result.graph, "edge", bindings)
    assert_matches(result.graph, got, reference(graph, bindings))
