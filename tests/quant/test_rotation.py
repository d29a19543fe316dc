"""Online Hadamard rotation (`hadamard` op, rules/rotation.rules, `--rotate`): the op is
an exact rotation, the simulator computes what the interpreter does at the cost the
model prices, and the quantizer rotates the heavy-tailed input of a SwiGLU down
projection, not the Gaussian one, for a better int8 SQNR."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.costs import op_cost
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpTypeError, get_op
from eqsat.ops.rotation import hadamard, hadamard_matrix, hadamard_rows
from eqsat.quant.calibrate import calibration_samples
from eqsat.quant.passes import plan_quantization
from eqsat.quant.rotation import rotation_block
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.quant.helpers import quantized

EDGE = load_hardware("edge")

SWIGLU = """model swiglu {
  input x: f32[64, 256]
  param w_gate: f32[256, 512]
  param w_up: f32[256, 512]
  param w_down: f32[512, 256]
  h = mul(silu(matmul(x, w_gate)), matmul(x, w_up))
  y = matmul(h, w_down)
  output y
}
"""

blocks = st.sampled_from([2, 4, 8, 16, 32])


@given(blocks, st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_rotation_is_orthogonal_and_cancels_in_a_matmul(block, rows, groups, seed) -> None:
    rng = np.random.default_rng(seed)
    k = block * groups
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w = rng.standard_normal((k, 5)).astype(np.float32)
    h = hadamard_matrix(block).astype(np.float64)
    np.testing.assert_allclose(h @ h, np.eye(block), atol=1e-6)  # H = H^T = H^-1
    np.testing.assert_allclose(hadamard(np.eye(block, dtype=np.float32), block), h, atol=1e-7)
    r = hadamard(x, block)
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), np.linalg.norm(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(hadamard(r, block), x, atol=1e-5)
    np.testing.assert_allclose(r @ hadamard_rows(w, block), x @ w, rtol=1e-4, atol=1e-4)


def test_type_rules_refuse_bad_blocks() -> None:
    op = get_op("hadamard")
    t = TensorType(DType.F32, (4, 48))
    assert op.type_of([t], op.bind_attrs({"block": 16})) == t
    for block in (3, 32, 1):  # not a power of two; does not divide 48; too small
        with pytest.raises(OpTypeError):
            op.type_of([t], op.bind_attrs({"block": block}))
    with pytest.raises(OpTypeError):
        op.type_of([TensorType(DType.I8, (4, 48))], op.bind_attrs({"block": 16}))


def test_block_is_the_largest_power_of_two_factor_up_to_128() -> None:
    assert [rotation_block(k) for k in (11008, 4096, 768, 96, 40)] == [128, 128, 128, 32, None]


@settings(max_examples=6, deadline=None)
@given(
    st.sampled_from([(3, 32, 16), (2, 5, 64, 32), (40, 128, 128), (7, 6, 2)]), st.integers(0, 99)
)
def test_simulated_equals_interpreter_at_the_priced_cycles(case, seed) -> None:
    *shape, block = case
    text = f"""model rot {{
  input x: f32[{", ".join(map(str, shape))}]
  y = hadamard(x, block={block})
  output y
}}"""
    graph = check_model(parse_model(text), {})
    bindings = random_bindings(graph, seed)
    want = evaluate(graph, bindings)["y"]
    compiled = compile_graph(graph, EDGE)
    result = simulate(compiled.program, EDGE, compiled.feeds(bindings))
    np.testing.assert_array_equal(result.outputs["y"], want)  # the same f32 butterflies
    t = TensorType(DType.F32, tuple(shape))
    assert result.report.cycles == op_cost(EDGE, "hadamard", [t], t, {"block": block}).cycles


def test_a_transposed_input_is_copied_dense_first() -> None:
    text = """model rot {
  input x: f32[16, 8]
  y = hadamard(transpose(x, perm=[1, 0]), block=16)
  output y
}"""
    graph = check_model(parse_model(text), {})
    bindings = random_bindings(graph, 1)
    compiled = compile_graph(graph, EDGE)
    result = simulate(compiled.program, EDGE, compiled.feeds(bindings))
    np.testing.assert_array_equal(result.outputs["y"], hadamard(bindings["x"].T, 16))


@pytest.fixture(scope="module")
def swiglu():
    graph = check_model(parse_model(SWIGLU), {})
    return graph, quantized(graph, rotate="none")[0], quantized(graph, rotate="auto")[0]


def test_auto_rotates_the_gated_product_only(swiglu) -> None:
    _, _, auto = swiglu
    found = {r.label: r for r in auto.quant.plan.rotations}
    assert set(found) == {"x", "h"} and found["h"].block == 128
    assert found["h"].chosen and found["h"].gain_db >= 3.0  # heavy tails: a product
    assert not found["x"].chosen and abs(found["x"].gain_db) < 1.0  # Gaussian already
    ops = [n.op for _, n in auto.graph]
    assert ops.count("hadamard") == 1 and "w_down.rot.q" in auto.quant.plan.params


def test_rotation_improves_the_int8_sqnr_of_the_block(swiglu) -> None:
    _, plain, auto = swiglu
    assert auto.quant.sqnr["y"] >= plain.quant.sqnr["y"] + 1.5
    # the one extra kernel is the rotation of h [64, 512], at its vector-unit price
    h = TensorType(DType.F32, (64, 512))
    rotation = op_cost(EDGE, "hadamard", [h], h, {"block": 128})
    assert auto.after.kernels == plain.after.kernels + 1
    assert auto.after.cycles - plain.after.cycles == rotation.cycles
    assert auto.after.dram_bytes - plain.after.dram_bytes == 2 * h.nbytes


def test_the_rewrite_is_exact_before_quantization(swiglu) -> None:
    """The annotated model (observe = x) with hadamard(h) and H^T w computes the model."""
    graph = swiglu[0]
    bindings = random_bindings(graph, 0)
    params = {k: v for k, v in bindings.items() if k != "x"}
    samples = calibration_samples(graph, None)
    plan = plan_quantization(graph, params, samples, "even", rotate="all")
    assert [r.label for r in plan.rotations if r.chosen] == ["x", "h"]
    want = evaluate(graph, bindings)["y"]
    got = evaluate(plan.graph, {**bindings, **plan.params})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_a_layer_left_in_f32_drops_its_rotation(swiglu) -> None:
    """On datacenter int8 does not pay for this block: extraction keeps the f32 product
    and, through hadamard-matmul-cancel, without the rotation the pass wrote."""
    graph = swiglu[0]
    result, _ = quantized(graph, "datacenter", rotate="all")
    ops = [n.op for _, n in result.graph if n.op not in ("param", "input", "const")]
    assert ops == ["matmul_swiglu", "matmul"]
    assert result.quant.sqnr["y"] == float("inf")
