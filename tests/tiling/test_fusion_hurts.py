"""Fusion hurts when its working set does not fit: on a 16 KiB scratchpad a fused
softmax over 4096-wide rows cannot keep a row resident, so extraction keeps the five
streaming kernels; on the edge preset (256 KiB) it fuses."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from backend.errors import BackendError
from eqsat.interpreter import evaluate, random_bindings
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.tiling.helpers import TINY_SRAM

SOFTMAX_ROWS = check_model(
    parse_model(
        """
model softmax_rows {
  input x: f32[8, 4096]
  e = exp(sub(x, reduce_max(x, axes=[1], keepdims=true)))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  output y
}
"""
    )
)
UNFUSED = ["reduce_max", "sub", "exp", "reduce_sum", "div"]


@pytest.fixture(scope="module")
def rules():
    return compile_rule_paths([DEFAULT_RULES_DIR])


def _ops(graph) -> list[str]:
    return [n.op for _, n in graph if not n.is_leaf]


def _simulate(graph, hw):
    compiled = compile_graph(graph, hw)
    bindings = random_bindings(graph, 0)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    got = compiled.results(result.outputs)["y"]
    np.testing.assert_allclose(got, evaluate(graph, bindings)["y"], rtol=1e-4, atol=1e-6)
    return result.report.cycles


def test_fusion_is_chosen_where_it_fits(rules):
    hw = load_hardware("edge")
    result = optimize(SOFTMAX_ROWS, rules, hw)
    assert _ops(result.graph) == ["softmax"]
    assert result.after.infeasible == 0
    assert _simulate(result.graph, hw) < _simulate(SOFTMAX_ROWS, hw)


def test_fusion_is_turned_down_where_it_does_not_fit(rules):
    hw = load_hardware(TINY_SRAM)
    result = optimize(SOFTMAX_ROWS, rules, hw)
    assert result.saturation.rules_fired["softmax-stable"]  # the fused kernel was there
    ops = _ops(result.graph)
    # the streaming kernels stay (the division may become a reciprocal of the row sums
    # times e, one lane pass per element instead of four)
    assert "softmax" not in ops and ops[:4] == UNFUSED[:4]
    assert result.after.infeasible == 0
    assert _simulate(result.graph, hw) <= _simulate(SOFTMAX_ROWS, hw)
    # what extraction turned down: the fused kernel cannot keep a row in 16 KiB
    fused = optimize(SOFTMAX_ROWS, rules, load_hardware("edge")).graph
    with pytest.raises(BackendError, match="does not fit"):
        compile_graph(fused, hw)
