"""Concatenations of many parts (DenseNet's blocks): the e-graph holds a concat of n
parts as n - 1 nested binary ones; extraction prices each part's copy once and the
program gets one kernel per concat again, so the fusions around them pay (before,
every nested level was priced as a copy of all it held and the optimized program was
costlier than the input, which `optimize` then kept)."""

from __future__ import annotations

import pytest

from eqsat.interpreter import random_bindings
from eqsat.pipeline import optimize
from frontend import check_model, parse_model
from hwsim.hardware import load_hardware
from tests.optimize_helpers import assert_same_outputs, default_rules


def dense_block(layers: int = 4, width: int = 8, growth: int = 4) -> str:
    """A DenseNet block as torchvision exports it: each layer reads the concat of the
    block's input and every earlier layer's output, pre-activation (BN, ReLU), a 1x1
    bottleneck with BN and ReLU, a 3x3 convolution of `growth` channels."""
    lines = ["model dense_block {", f"  input x: f32[1, {width}, 8, 8]"]
    parts = ["x"]
    for k in range(1, layers + 1):
        c = width + growth * (k - 1)
        lines += [
            f"  param s{k}: f32[{c}, 1, 1]",
            f"  param t{k}: f32[{c}, 1, 1]",
            f"  param w{k}: f32[{width}, {c}, 1, 1]",
            f"  param b{k}: f32[{width}, 1, 1]",
            f"  param v{k}: f32[{growth}, {width}, 3, 3]",
            f"  c{k} = concat({', '.join(parts)}, axis=1)" if k > 1 else "  c1 = relu(x)",
            f"  n{k} = relu(add(mul(c{k}, s{k}), t{k}))",
            f"  h{k} = relu(add(conv2d(n{k}, w{k}), b{k}))",
            f"  y{k} = conv2d(h{k}, v{k}, padding=[1, 1])",
        ]
        parts.append(f"y{k}")
    lines += [f"  out = concat({', '.join(parts)}, axis=1)", "  output out", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
def test_a_dense_block_gets_cheaper_and_keeps_one_kernel_per_concat(hw: str) -> None:
    graph = check_model(parse_model(dense_block()))
    result = optimize(graph, default_rules(), load_hardware(hw))
    assert not result.kept_original
    assert result.after.cycles < result.before.cycles
    ops = {n.op for n in result.graph.nodes}
    assert "conv2d_bias_relu" in ops  # the bottleneck, its batch norm folded
    assert "mul_add_relu" in ops  # the pre-activation of a concat, one pass
    concats = sorted(len(n.inputs) for i, n in result.graph if n.op == "concat")
    assert concats == [2, 3, 4, 5]  # as written: no part copied twice
    assert_same_outputs(result.original, result.graph, random_bindings(result.original, 0))
