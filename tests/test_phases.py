"""The phase-ordered pipeline (eqsat/phases.py): every rules file on its own, with an
extraction between phases; it preserves meaning, never raises the estimate, and its
result depends on the order, which one e-graph with all the rules does not."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.interpreter import random_bindings
from eqsat.loading import load_model
from eqsat.phases import PHASE_ORDER, compile_phases, optimize_phased, phase_files
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware
from tests.conftest import EXAMPLES
from tests.optimize_helpers import assert_same_outputs
from tests.strategies import graphs, scaled

# (x @ w) * 0.5 + b: algebra moves the scale onto the weight (x has more rows than
# w), which leaves add(matmul, b) for fusion's matmul-bias; fusion first fuses the
# scale into the product (matmul_scale, its epilogue as cheap as the bare matmul's)
# and leaves the bias add alone, and algebra has nothing left to move.
SCALED_LINEAR = """
model scaled_linear {
  input x: f32[512, 64]
  param w: f32[64, 64]
  param b: f32[64]
  const s: f32[] = 0.5
  z = add(mul(matmul(x, w), s), b)
  output z
}
"""


@functools.cache
def _phases():
    return tuple(compile_phases(phase_files()))


def _ops(graph) -> list[str]:
    return [n.op for _, n in graph if not n.is_leaf]


def test_phase_files_run_in_pipeline_order():
    names = [p.stem for p in phase_files()]
    assert names[: len(PHASE_ORDER)] == list(PHASE_ORDER)
    assert sorted(names) == sorted(p.stem for p in DEFAULT_RULES_DIR.glob("*.rules"))


def test_order_of_phases_decides_the_program():
    graph = check_model(parse_model(SCALED_LINEAR))
    hw = load_hardware("edge")
    algebra, fusion = compile_phases(
        [DEFAULT_RULES_DIR / "algebra.rules", DEFAULT_RULES_DIR / "fusion.rules"]
    )
    first_algebra = optimize_phased(graph, [algebra, fusion], hw)
    first_fusion = optimize_phased(graph, [fusion, algebra], hw)
    assert sorted(_ops(first_algebra.graph)) == ["matmul_bias", "mul"]
    assert sorted(_ops(first_fusion.graph)) == ["add", "matmul_scale"]
    assert first_algebra.cycles_after < first_fusion.cycles_after
    # Each phase starts from the program the previous one extracted.
    assert first_fusion.steps[1].cycles_before == first_fusion.steps[0].cycles_after
    # Both rule sets in one e-graph find the better program whatever the order.
    together = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw)
    assert together.after.cycles <= first_algebra.cycles_after
    for result in (first_algebra, first_fusion):
        assert_same_outputs(graph, result.graph, random_bindings(graph, 1))


@pytest.mark.parametrize("name", ["attention", "mlp", "resnet_block"])
def test_phased_examples_mean_the_same_and_never_cost_more(name):
    graph = load_model(next(p for p in EXAMPLES if p.stem == name)).graph
    result = optimize_phased(graph, _phases(), load_hardware("datacenter"))
    assert [s.name for s in result.steps] == [name for name, _ in _phases()]
    for step in result.steps:
        assert step.cycles_after <= step.cycles_before
    assert result.cycles_after <= result.cycles_before
    assert_same_outputs(graph, result.graph, random_bindings(graph, 0))


@settings(max_examples=scaled(5), deadline=None)
@given(graph=graphs(max_ops=5), seed=st.integers(0, 2**32 - 1))
def test_random_models_phase_to_equivalent_programs(graph, seed):
    result = optimize_phased(graph, _phases(), load_hardware("edge"))
    assert result.cycles_after <= result.cycles_before
    assert_same_outputs(graph, result.graph, random_bindings(graph, seed))
