"""Every registry op: the strategies build valid applications of it, and the reference
interpreter's result has exactly the inferred shape and dtype (broadcasting included).

Iterates over eqsat.ops.REGISTRY, so a new op is covered as soon as it has a generator
in eqsat/verify/opcases.py (and test_every_op_has_a_generator fails until it does).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpKind, OpTypeError
from tests.strategies import (
    CALLABLE_OPS,
    OP_GENERATORS,
    accepts_first,
    op_cases,
    scaled,
    single_op_graph,
    tensor_types,
)

ALL_OPS = sorted(REGISTRY)


def test_every_op_has_a_generator():
    missing = sorted(set(REGISTRY) - set(OP_GENERATORS))
    assert not missing, f"ops without a generator in eqsat/verify/opcases.py: {missing}"
    stale = sorted(set(OP_GENERATORS) - set(REGISTRY))
    assert not stale, f"generators for ops that are not registered: {stale}"


@pytest.mark.parametrize("op", ALL_OPS)
@settings(max_examples=scaled(25), deadline=None)
@given(data=st.data())
def test_interpreter_matches_inferred_type(op, data):
    case = data.draw(op_cases(op), label="case")
    expected = case.out_type()  # the generator only builds well-typed cases
    graph = single_op_graph(case)
    assert graph.nodes[-1].type == expected
    seed = data.draw(st.integers(0, 2**16), label="seed")
    with np.errstate(all="ignore"):
        out = evaluate(graph, random_bindings(graph, seed))["out"]
    assert isinstance(out, np.ndarray)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype.np_dtype


@pytest.mark.parametrize("op", [op for op in CALLABLE_OPS if REGISTRY[op].operands])
@settings(max_examples=scaled(10), deadline=None)
@given(data=st.data())
def test_generator_honours_a_given_first_operand(op, data):
    """models() chains ops through op_cases(op, first=t); check that contract."""
    candidates = data.draw(st.lists(tensor_types(), min_size=8, max_size=8), label="types")
    accepted = [t for t in candidates if accepts_first(op, t)]
    # Fall back on a first operand the generator itself would build.
    t = accepted[0] if accepted else data.draw(op_cases(op)).in_types[0]
    assert accepts_first(op, t)
    case = data.draw(op_cases(op, t), label="case")
    assert case.in_types[0] == t
    case.out_type()


def test_broadcasting_is_numpy_broadcasting():
    for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        b = GraphBuilder("bc")
        x = b.leaf("input", "x", TensorType(DType.F32, (3, 1, 4)))
        y = b.leaf("input", "y", TensorType(DType.F32, (2, 1)))
        b.output("z", b.add(op, (x, y)))
        assert b.graph.nodes[-1].type.shape == (3, 2, 4)
        vals = random_bindings(b.graph, 1)
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}.get(
            op, getattr(np, op, None)
        )
        np.testing.assert_array_equal(evaluate(b.graph, vals)["z"], fn(vals["x"], vals["y"]))
    with pytest.raises(OpTypeError, match="do not broadcast"):
        REGISTRY["add"].type_of([TensorType(DType.F32, (3, 4)), TensorType(DType.F32, (3,))], {})


def test_rank0_has_no_axes():
    """Regression: axis 0 of a scalar used to type-check (and slice crashed with an
    IndexError in the checker, concat in inference, reduce in the interpreter)."""
    scalar = TensorType(DType.F32, ())
    for op, attrs in [
        ("softmax", {"axis": 0}),
        ("concat", {"axis": 0}),
        ("slice", {"starts": (0,), "ends": (1,)}),
        ("reduce_sum", {"axes": (0,)}),
    ]:
        opdef = REGISTRY[op]
        with pytest.raises(OpTypeError, match="rank 0"):
            opdef.type_of([scalar] * len(opdef.operands), opdef.bind_attrs(attrs))


def test_leaf_ops_are_leaves():
    for name in ("input", "param", "const"):
        assert REGISTRY[name].kind is OpKind.LEAF
