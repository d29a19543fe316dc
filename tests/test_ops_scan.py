"""cumsum (ONNX CumSum): reference semantics against an independent triangular-matrix
formulation and against onnx.reference, integer wrapping, f32 accumulation of bf16,
typed errors, canonical attributes, the e-graph's shape analysis, the position ids
exporters compute with it, and the rule that turns a scan of ones into positions."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.rules import load_rules_text
from eqsat.rules.errors import MissingAttributeError
from eqsat.verify.check import FAILED, check_direction
from eqsat.verify.compare import reduction_length
from eqsat.verify.guards import hardware_facts
from eqsat.verify.rules import select
from frontend import check_model, parse_model
from tests.optimize_helpers import assert_same_outputs, optimize_graph
from tests.strategies import op_cases, scaled, single_op_graph
from tests.test_egraph_analysis import assert_analysis_matches

F32, BF16, I8, I32 = DType.F32, DType.BF16, DType.I8, DType.I32
NP_DTYPE = {F32: np.float32, BF16: ml_dtypes.bfloat16, I8: np.int8, I32: np.int32}


def run(x: np.ndarray, dtype: DType = F32, **attrs) -> np.ndarray:
    """cumsum(x, **attrs) as a one-node graph through the interpreter."""
    b = GraphBuilder("t")
    arg = b.leaf("input", "x", TensorType(dtype, x.shape))
    b.output("out", b.add("cumsum", [arg], attrs))
    return evaluate(b.graph, {"x": x})["out"]


def triangular(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """The running sum as a product with a 0/1 matrix: out[j] = sum of x[i] over the
    i that output j sums (i <= j, i < j when exclusive; mirrored when reverse), in
    float64 for floats and exact int64 for integers."""
    n = x.shape[axis]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    below = (i >= j) if reverse else (i <= j)
    picks = below & (i != j) if exclusive else below
    wide = np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64
    moved = np.moveaxis(x.astype(wide), axis, -1)
    return np.moveaxis(moved @ picks.astype(wide), -1, axis)


def onnx_cumsum(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """onnx.reference's CumSum (opset 14: the axis is an input)."""
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    node = helper.make_node(
        "CumSum", ["x", "axis"], ["y"], exclusive=int(exclusive), reverse=int(reverse)
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", elem[x.dtype], x.shape),
            helper.make_tensor_value_info("axis", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", elem[x.dtype], None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feeds = {"x": x, "axis": np.array(axis, np.int64)}
        return ReferenceEvaluator(model).run(None, feeds)[0]


SCAN_ATTRS = st.fixed_dictionaries({"exclusive": st.booleans(), "reverse": st.booleans()})


@st.composite
def scan_inputs(draw, dtype: DType):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype.np_dtype)
    else:
        x = (rng.standard_normal(shape) * 10).astype(np.float32)
    return x, axis, draw(SCAN_ATTRS)


# ------------------------------------------------------------------ semantics


def test_onnx_spec_examples():
    x = np.array([1, 2, 3, 4, 5], np.float32)
    assert run(x).tolist() == [1, 3, 6, 10, 15]
    assert run(x, exclusive=True).tolist() == [0, 1, 3, 6, 10]
    assert run(x, reverse=True).tolist() == [15, 14, 12, 9, 5]
    assert run(x, exclusive=True, reverse=True).tolist() == [14, 12, 9, 5, 0]
    m = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    assert run(m, I32, axis=0).tolist() == [[1, 2, 3], [5, 7, 9]]
    assert run(m, I32, axis=1, exclusive=True).tolist() == [[0, 1, 3], [0, 4, 9]]


@pytest.mark.parametrize("dtype", [F32, I8, I32])
def test_matches_the_triangular_formulation(dtype):
    """Integers equal the exact sum saturated to their type; f32 the float64 sum up to
    the rounding of a running sum."""

    @settings(max_examples=scaled(60), deadline=None)
    @given(case=scan_inputs(dtype))
    def check(case) -> None:
        x, axis, attrs = case
        got = run(x, dtype, axis=axis, **attrs)
        want = triangular(x, axis % x.ndim, **attrs)
        assert got.dtype == x.dtype and got.shape == x.shape
        if dtype.is_int:
            info = np.iinfo(x.dtype)
            np.testing.assert_array_equal(got, np.clip(want, info.min, info.max))  # saturated
        else:
            scale = np.abs(x).sum(axis=axis, keepdims=True) + 1
            assert np.all(np.abs(got - want) <= 8 * np.finfo(np.float32).eps * scale)

    check()


@pytest.mark.parametrize("dtype", [F32, I32])
def test_matches_onnx_reference(dtype):
    @settings(max_examples=scaled(40), deadline=None)
    @given(case=scan_inputs(dtype))
    def check(case) -> None:
        x, axis, attrs = case
        got = run(x, dtype, axis=axis, **attrs)
        want = onnx_cumsum(x, axis, **attrs)
        if dtype.is_int:  # where a sum overflows, onnx.reference wraps and eqsat saturates
            exact = triangular(x, axis % x.ndim, **attrs)
            fits = (exact >= -(2**31)) & (exact < 2**31)
            np.testing.assert_array_equal(got[fits], want[fits])
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)

    check()


def test_integers_saturate_in_their_type():
    """Each running sum is exact, then saturated (not the saturated sum carried on)."""
    assert run(np.array([100, 100, -100], np.int8), I8).tolist() == [100, 127, 100]
    big = np.iinfo(np.int32).max
    assert run(np.array([big, 1], np.int32), I32).tolist() == [big, big]
    assert run(np.array([-128, -1], np.int8), I8, reverse=True).tolist() == [-128, -1]


def test_bf16_accumulates_in_f32_and_rounds_once():
    """300 ones: a bf16 accumulator stops at 256 (256 + 1 rounds back); the sums run in
    f32 and only the results are rounded (300 is a bf16 value)."""
    x = np.ones(300, dtype=ml_dtypes.bfloat16)
    got = run(x, BF16)
    assert got.dtype == ml_dtypes.bfloat16
    assert float(got[-1]) == 300.0
    want = np.cumsum(np.ones(300, np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_non_finite_values_propagate_as_in_a_running_sum():
    x = np.array([1.0, np.inf, 2.0, -np.inf, 3.0], np.float32)
    got = run(x)
    assert got[:3].tolist() == [1.0, np.inf, np.inf] and np.isnan(got[3:]).all()
    excl = run(x, exclusive=True)
    assert excl[:3].tolist() == [0.0, 1.0, np.inf] and np.isnan(excl[4])


def test_position_ids_as_exporters_write_them():
    """RoBERTa's create_position_ids_from_input_ids: cumsum(mask) * mask + padding_idx,
    in the text format, with a right-padded and a left-padded row."""
    src = """model positions {
      input mask: i32[2, 6]
      const pad: i32[] = 1
      ids = add(mul(cumsum(mask, axis=1), mask), pad)
      output ids
    }"""
    graph = check_model(parse_model(src))
    mask = np.array([[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1]], np.int32)
    got = evaluate(graph, {"mask": mask})["ids"]
    assert got.tolist() == [[2, 3, 4, 5, 1, 1], [1, 1, 2, 3, 4, 5]]


def test_position_ids_of_a_mask_of_ones_become_positions():
    """An export without an attention mask scans a fill of ones: the cumsum-fill rule
    turns the running sum into iota + 1, and extraction drops the scan."""
    graph = check_model(
        parse_model(
            """model no_mask {
              input x: f32[4, 512]
              const ones: i32[4, 512] = 1
              const pad: i32[] = 1
              ids = add(mul(cumsum(ones, axis=1), ones), pad)
              y = add(x, cast(ids, dtype=f32))
              output y
            }"""
        )
    )
    result = optimize_graph(graph)
    assert result.saturation.rules_fired["cumsum-fill"] > 0
    ops = [node.op for _, node in result.graph]
    assert "cumsum" not in ops and "iota" in ops, ops
    assert result.after.cycles < result.before.cycles
    assert_same_outputs(graph, result.graph, random_bindings(graph, 0))


# Each drops a guard or an attribute that rules/algebra.rules keeps: verify-rules must
# catch them (the generators draw exclusive and reverse scans, i8 and bf16 fills).
UNSOUND = """
ruleset scratch
# a fill's reverse running sum taken for the forward one
cumsum-fill-any-direction: r = cumsum(const(value=V, shape=S), axis=A, exclusive=false)
                 => mul(add(iota(shape=S, axis=A, dtype=dtype(r)),
                            const(value=1.0, shape=[], dtype=dtype(r))),
                        const(value=V, shape=[], dtype=dtype(r)))
                 if dtype(r) != i8, dtype(r) != bf16
# the exclusive sum taken for the inclusive one
cumsum-fill-off-by-one: r = cumsum(const(value=V, shape=S), axis=A, reverse=false)
                 => mul(iota(shape=S, axis=A, dtype=dtype(r)), const(value=V, shape=[], dtype=dtype(r)))
                 if dtype(r) != i8, dtype(r) != bf16
"""


@pytest.mark.parametrize("direction", select(load_rules_text(UNSOUND)), ids=lambda d: d.name)
def test_unsound_variants_are_caught(direction):
    result = check_direction(direction, scaled(200), 7, hardware_facts("edge"))
    assert result.status == FAILED, direction.name


def test_a_rule_must_give_the_canonical_axis():
    text = "ruleset scratch\n# x\nscan-any: relu(x) => cumsum(relu(x))\n"
    with pytest.raises(MissingAttributeError, match="non-negative axis"):
        load_rules_text(text)


# ------------------------------------------------------------- the registry entry


def test_attributes_and_their_canonical_form():
    op = REGISTRY["cumsum"]
    t = TensorType(F32, (2, 3, 4))
    assert op.bind_attrs({}) == {"axis": -1, "exclusive": False, "reverse": False}
    canon = op.canonical_attrs([t], op.bind_attrs({"axis": -2, "reverse": True}))
    assert canon == {"axis": 1, "exclusive": False, "reverse": True}
    assert op.type_of([t], op.bind_attrs({"axis": -3})) == t
    assert op.flops([t], t, op.bind_attrs({})) == 24


BAD = [
    (TensorType(F32, ()), {}, "rank >= 1"),
    (TensorType(F32, (2, 3)), {"axis": 2}, "axis 2 is out of range for rank 2"),
    (TensorType(F32, (2, 3)), {"axis": -3}, "axis -3 is out of range for rank 2"),
    (TensorType(I8, (4,)), {"exclusive": 1}, "'exclusive' must be true or false"),
    (TensorType(I8, (4,)), {"direction": 1}, "'cumsum' has no attribute 'direction'"),
]


@pytest.mark.parametrize(("t", "attrs", "words"), BAD, ids=[b[2] for b in BAD])
def test_type_errors_say_what_is_wrong(t, attrs, words):
    op = REGISTRY["cumsum"]
    with pytest.raises(OpTypeError) as err:
        op.type_of([t], op.bind_attrs(attrs))
    assert words in str(err.value), str(err.value)


def test_rule_tolerance_counts_the_whole_axis():
    b = GraphBuilder("t")
    x = b.leaf("input", "x", TensorType(F32, (3, 7, 2)))
    b.output("out", b.add("cumsum", [x], {"axis": 1}))
    node = b.graph.nodes[-1]
    assert reduction_length(node, b.graph) == 7


def test_egraph_shapes_agree_with_the_registry():
    @settings(max_examples=scaled(40), deadline=None)
    @given(case=op_cases("cumsum"))
    def check(case) -> None:
        assert_analysis_matches(single_op_graph(case))

    check()
