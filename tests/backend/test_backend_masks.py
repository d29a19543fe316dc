"""The elementwise math and mask ops through the backend: every op's kernel simulates
exactly as the reference interpreter computes it (random cases and edge values),
and the cost model counts the lane passes the simulator measures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backend.ewise_ops import EXPR
from backend.expr import Bin, Fmadd, Leaf, Sel, Un, fold, ops_of
from eqsat.costs import kernel_work
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.vector_passes import LANE_OPS, lane_ops
from tests.backend.helpers import assert_matches, integer_overflow, run_backend
from tests.strategies import op_cases, scaled, single_op_graph

F32, BF16, I8, I32 = DType.F32, DType.BF16, DType.I8, DType.I32
NAN, INF = float("nan"), float("inf")

NEW_OPS = sorted(
    {*LANE_OPS, "clip", "gelu", "div", "silu", "matmul_bias_gelu", "qmatmul_bias_gelu_quant"}
)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
    return g.shape == w.shape and bool(np.all((g == w) | (np.isnan(g) & np.isnan(w))))


@pytest.mark.parametrize("op", NEW_OPS)
@settings(max_examples=scaled(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_simulated_op_equals_reference(op, data):
    case = data.draw(op_cases(op), label="case")
    graph = single_op_graph(case)
    bindings = random_bindings(graph, data.draw(st.integers(0, 2**16), label="seed"))
    assume(not integer_overflow(graph, bindings))
    hw = data.draw(st.sampled_from(["edge", "datacenter"]), label="hw")
    got, report, _ = run_backend(graph, hw, bindings)
    want = evaluate(graph, bindings)
    assert_matches(graph, got, want)
    if op not in ("silu", "matmul_bias_gelu", "qmatmul_bias_gelu_quant"):
        # one kernel computing exactly the reference's f32/integer arithmetic
        assert same_bits(got["out"], want["out"]), (case, got["out"], want["out"])
    assert report.cycles >= report.roofline_cycles


def graph_of(op: str, types: list[TensorType], attrs: dict | None = None):
    b = GraphBuilder("t")
    args = [b.leaf("input", f"a{i}", t) for i, t in enumerate(types)]
    b.output("out", b.add(op, args, attrs or {}))
    return b.graph


def simulate_exactly(op: str, arrays: list[np.ndarray], attrs: dict | None = None) -> np.ndarray:
    dtypes = {np.float32: F32, np.int8: I8, np.int32: I32}
    types = [TensorType(dtypes[a.dtype.type], a.shape) for a in arrays]
    graph = graph_of(op, types, attrs)
    bindings = {f"a{i}": a for i, a in enumerate(arrays)}
    got, _, _ = run_backend(graph, "edge", bindings)
    want = evaluate(graph, bindings)["out"]
    assert same_bits(got["out"], want), (got["out"], want)
    return got["out"]


def test_where_masks_with_infinities_and_nan_exactly():
    scores = np.array([[1.5, -2.0, NAN, 3.0], [0.0, -0.0, 4.0, INF]], np.float32)
    mask = np.array([[1, 1, 0, 1]], np.int8)  # a row broadcast over the scores
    fill = np.array([[-INF], [-3.4e38]], np.float32)  # a column
    out = simulate_exactly("where", [mask, scores, fill])
    assert out[0, 2] == -INF and out[1, 2] == np.float32(-3.4e38) and out[0, 0] == 1.5
    assert np.signbit(out[1, 1]) and out[1, 3] == INF


def test_where_with_constant_branches_uses_immediates():
    b = GraphBuilder("t")
    m = b.leaf("input", "m", TensorType(I8, (3, 5)))
    x = b.leaf("input", "x", TensorType(F32, (3, 5)))
    c = b.add("const", (), {"value": -INF, "shape": (), "dtype": "f32"})
    b.output("out", b.add("where", (m, x, c)))
    bindings = random_bindings(b.graph, 4)
    bindings["m"] = np.arange(15, dtype=np.int8).reshape(3, 5) % 2
    got, _, compiled = run_backend(b.graph, "edge", bindings)
    want = evaluate(b.graph, bindings)["out"]
    assert same_bits(got["out"], want) and np.isneginf(want).any()
    assert "select" in compiled.asm and ", -inf" in compiled.asm


def test_integer_edges_simulate_exactly():
    a = np.array([7, -7, 7, -7, 5, 0, -128, 127], np.int8)
    b = np.array([2, 2, -2, -2, 0, 0, 3, -1], np.int8)
    assert simulate_exactly("div", [a, b]).tolist() == [3, -3, -3, 3, 0, 0, -42, -127]
    base = np.array([-1, 1, 2, 0, -2, 3, 0, 5], np.int32)
    exp = np.array([-3, -5, -1, -2, 3, 2, 0, 1], np.int32)
    assert simulate_exactly("pow", [base, exp]).tolist() == [-1, 1, 0, 0, -8, 9, 1, 5]
    i8 = np.array([-128, -5, 0, 5, 127], np.int8)
    assert simulate_exactly("clip", [i8], {"min": -2.5, "max": 3.5}).tolist() == [-2, -2, 0, 3, 3]
    assert simulate_exactly("clip", [i8], {"min": 200.0}).tolist() == [127] * 5
    assert simulate_exactly("abs", [i8[1:]]).tolist() == [5, 0, 5, 127]
    m = np.array([0, 3, -1, 0], np.int8)
    n = np.array([0, 0, 9, 9], np.int32)
    assert simulate_exactly("logical_xor", [m, n]).tolist() == [0, 1, 0, 1]
    assert simulate_exactly("logical_not", [m]).tolist() == [1, 0, 0, 1]


def test_float_edges_simulate_exactly():
    x = np.array([NAN, -INF, -1.5, -0.0, 0.0, 0.5, 2.5, INF], np.float32)
    y = np.array([NAN, 0.0, -1.5, 0.0, -1.0, 0.7, 2.5, INF], np.float32)
    for op in ("equal", "less", "less_equal", "greater", "greater_equal"):
        simulate_exactly(op, [x, y])
    assert simulate_exactly("isnan", [x]).tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
    for op in ("floor", "ceil", "trunc", "abs", "erf", "hard_swish", "hard_sigmoid"):
        simulate_exactly(op, [x])
    simulate_exactly("gelu", [x], {"approximate": "none"})
    simulate_exactly("clip", [x], {"min": -1.0, "max": 0.5})
    simulate_exactly("clip", [x], {"min": 1.0, "max": -1.0})
    simulate_exactly("pow", [np.abs(y), x])
    # one rounding: 1 + 2^-11 + 2^-24 is halfway between two f32 values (ties to even)
    t = np.float32(1 + 2.0**-12)
    tie = np.full(8, t, np.float32)
    assert simulate_exactly("fma", [tie, tie, np.zeros(8, np.float32)])[0] == np.float32(
        1 + 2.0**-11
    )
    simulate_exactly("fma", [x, y, x[::-1].copy()])


def test_exact_gelu_is_fused_into_the_matmul_epilogue():
    b = GraphBuilder("t")
    x = b.leaf("input", "x", TensorType(F32, (8, 16)))
    w = b.leaf("param", "w", TensorType(F32, (16, 32)))
    bias = b.leaf("param", "b", TensorType(F32, (32,)))
    b.output("out", b.add("matmul_bias_gelu", (x, w, bias), {"approximate": "none"}))
    bindings = random_bindings(b.graph, 0)
    got, _, compiled = run_backend(b.graph, "edge", bindings)
    assert_matches(b.graph, got, evaluate(b.graph, bindings))
    assert "unary.gelu_erf" in compiled.asm and "unary.gelu " not in compiled.asm


# ------------------------------------------------------------------ the cost model


def _instruction_names(e) -> list[str]:
    names = {
        Un: lambda n: n.op,
        Bin: lambda n: n.op,
        Sel: lambda n: "select",
        Fmadd: lambda n: "fma",
    }
    return [names[type(n)](n) for n in ops_of(fold(e))]


@pytest.mark.parametrize("op", sorted(LANE_OPS))
def test_lane_table_is_what_the_backend_emits(op):
    n = len(REGISTRY[op].operands)
    expr = EXPR[op]([Leaf(i) for i in range(n)], REGISTRY[op].bind_attrs({}), [], "f32")
    assert tuple(_instruction_names(expr)) == lane_ops(op, [TensorType(F32, (4,))] * n, {})


@pytest.mark.parametrize(
    ("dtype", "attrs", "ops"),
    [
        (F32, {}, ("copy",)),
        (F32, {"min": 0.0}, ("max",)),
        (F32, {"max": 6.0}, ("min",)),
        (F32, {"min": -1.0, "max": 1.0}, ("max", "min")),
        (I8, {"min": -1000.0, "max": 1000.0}, ("copy",)),
        (I8, {"min": -5.5}, ("max",)),
    ],
)
def test_clip_lane_ops_follow_its_bounds(dtype, attrs, ops):
    t = TensorType(dtype, (4,))
    bound = REGISTRY["clip"].bind_attrs(attrs)
    assert lane_ops("clip", [t], bound) == ops
    expr = EXPR["clip"]([Leaf(0)], bound, [], dtype.value)
    assert tuple(_instruction_names(expr)) == (() if ops == ("copy",) else ops)


@pytest.mark.parametrize(
    ("op", "types", "attrs"),
    [
        ("where", [(I8, (32, 64)), (F32, (32, 64)), (F32, (32, 64))], {}),
        ("less", [(F32, (64, 64)), (F32, (64, 64))], {}),
        ("pow", [(F32, (64, 48)), (F32, (64, 48))], {}),
        ("erf", [(F32, (128, 64))], {}),
        ("hard_swish", [(BF16, (64, 64))], {}),
        ("clip", [(I32, (64, 64))], {"min": -3.0, "max": 3.0}),
        ("logical_and", [(I8, (64, 64)), (I32, (64, 64))], {}),
    ],
)
def test_estimated_lane_work_is_what_the_simulator_counts(op, types, attrs):
    ts = [TensorType(d, s) for d, s in types]
    graph = graph_of(op, ts, attrs)
    node = graph.nodes[-1]
    work = kernel_work(op, ts, node.type, node.attr_dict)
    _, report, _ = run_backend(graph, "edge", random_bindings(graph, 0))
    assert work is not None and work.vector_ops == report.vector_ops
