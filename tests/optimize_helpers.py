"""Shared by the optimizer tests: load, optimize once, compare outputs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from eqsat.config import Limits
from eqsat.interpreter import evaluate
from eqsat.ir.graph import Graph
from eqsat.pipeline import OptimizeResult, optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import load_model
from hwsim.hardware import load_hardware

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


@cache
def default_rules():
    return compile_rule_paths([DEFAULT_RULES_DIR])


@cache
def optimized_example(name: str, hw: str = "edge", extractor: str = "greedy") -> OptimizeResult:
    _, graph = load_model(ROOT / "examples" / f"{name}.model")
    return optimize(graph, default_rules(), load_hardware(hw), extractor=extractor)


def optimize_graph(graph: Graph, rules=None, limits: Limits | None = None) -> OptimizeResult:
    return optimize(graph, rules or default_rules(), load_hardware("edge"), limits or Limits())


def assert_same_outputs(original: Graph, optimized: Graph, bindings: dict) -> None:
    """Outputs agree up to float reassociation. Where the original is not finite
    (NaN or inf from, say, sqrt of a negative) a rewrite may refine it (x*0 -> 0)."""
    want = evaluate(original, bindings)
    got = evaluate(optimized, bindings)
    assert set(want) == set(got)
    for name, a in want.items():
        b = got[name]
        assert a.shape == b.shape and a.dtype == b.dtype, name
        if a.dtype.kind in "iu":
            np.testing.assert_array_equal(a, b, err_msg=name)
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        finite = np.isfinite(a64)
        scale = np.max(np.abs(a64[finite]), initial=1.0)
        tol = 1e-2 if a.dtype.name == "bfloat16" else 1e-4
        np.testing.assert_allclose(
            b64[finite], a64[finite], rtol=tol, atol=tol * scale, err_msg=name
        )
