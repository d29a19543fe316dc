"""Shared helpers of the quantization tests: quantize a model as the CLI does."""

from __future__ import annotations

import argparse
from functools import cache

from eqsat.interpreter import random_bindings
from eqsat.pipeline import optimize
from eqsat.quant import cli as quant_cli
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model, parse_model_file
from hwsim import load_hardware
from tests.conftest import ROOT


def model(name: str, dims: dict[str, int] | None = None):
    return check_model(parse_model_file(str(ROOT / "examples" / f"{name}.model")), dims or {})


# Two branches from one hidden layer: a graph small enough that every mixed-precision
# choice of its three matmuls is quick to measure (tests of auto and the SQNR floor).
TWO_BRANCH = """
model tiny {
  input x: f32[16, 256]
  param w1: f32[256, 256]
  param b1: f32[256]
  param w2: f32[256, 128]
  param w3: f32[256, 128]
  h = relu(add(matmul(x, w1), b1))
  y = add(matmul(h, w2), matmul(h, w3))
  output y
}
"""


def two_branch():
    return check_model(parse_model(TWO_BRANCH), {})


def args(**kw) -> argparse.Namespace:
    base = {"quantize": "int8", "calibrate": None, "calibration": "minmax", "percentile": 99.99}
    return argparse.Namespace(**{**base, **kw})


@cache
def rules(approx: bool):
    return compile_rule_paths([DEFAULT_RULES_DIR], include_approx=approx)


def quantized(graph, hw_name: str = "edge", seed: int = 0, **kw):
    """(optimize result with .quant, bindings): what `eqsat simulate --quantize int8` does."""
    hw = load_hardware(hw_name)
    bindings = random_bindings(graph, seed)
    run = quant_cli.prepare(args(**kw), graph, hw.rounding, bindings, warn=lambda m: None)
    result = optimize(run.plan.graph, rules(True), hw, facts=run.plan.seeds, baseline=graph)
    quant_cli.measure(run, graph, result.graph)
    result.quant = run
    return result, bindings
