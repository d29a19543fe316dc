"""Leaves: model inputs, parameters (weights), constants, and index generators.

Their type lives in their attributes so that a leaf is a self-describing node in the
graph and in the e-graph. A `const` is one value filling a shape; a `literal` is a
tensor of arbitrary values that belongs to the model (a causal mask, position ids),
kept by name in `Graph.constants` so that the e-graph holds only its identity. `iota`
is not a leaf but it has no operands: it numbers the positions along one axis, which
is how shape-dependent position and mask computations are written before their
dimensions are bound (they fold to literals then: eqsat/ir/fold.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import Attrs, AttrSpec, AttrType, OpDef, OpKind, OpTypeError
from eqsat.ops.registry import register


def _leaf_type(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    shape = tuple(attrs["shape"])
    if any(d < 1 for d in shape):
        raise OpTypeError(f"dimensions must be positive, got [{', '.join(map(str, shape))}]")
    return TensorType(DType.parse(str(attrs["dtype"])), shape)


def _no_ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    raise RuntimeError("input, param and literal leaves are bound by name, not computed")


def _const_ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    dtype = DType.parse(str(attrs["dtype"]))
    compute = np.float32 if dtype.is_float else dtype.np_dtype
    return np.full(tuple(attrs["shape"]), attrs["value"], dtype=compute)


_TYPE_ATTRS = (
    AttrSpec("shape", AttrType.INTS, doc="static shape"),
    AttrSpec("dtype", AttrType.DTYPE, doc="element type"),
)

for _name, _doc in (("input", "a model input"), ("param", "a model parameter (weights)")):
    register(
        OpDef(
            name=_name,
            kind=OpKind.LEAF,
            operands=(),
            attrs=(AttrSpec("name", AttrType.STR), *_TYPE_ATTRS),
            infer=_leaf_type,
            ref=_no_ref,
            doc=_doc,
            egg_shape="{shape}",
            egg_dtype="{dtype}",
        )
    )

register(
    OpDef(
        name="const",
        kind=OpKind.LEAF,
        operands=(),
        attrs=(AttrSpec("value", AttrType.FLOAT, doc="the fill value"), *_TYPE_ATTRS),
        infer=_leaf_type,
        # a zero fill has no sign: egglog's f64 holds -0.0 and 0.0 as one value, so the
        # e-graph could hand either back (+ 0.0 turns -0.0 into 0.0, keeps nan and inf)
        normalize=lambda ts, attrs: {**attrs, "value": float(attrs["value"]) + 0.0},
        ref=_const_ref,
        doc="a tensor filled with one value (a scalar when the shape is [])",
        egg_shape="{shape}",
        egg_dtype="{dtype}",
    )
)

register(
    OpDef(
        name="literal",
        kind=OpKind.LEAF,
        operands=(),
        attrs=(
            AttrSpec("name", AttrType.STR, doc="key of its values in the model's constants"),
            *_TYPE_ATTRS,
        ),
        infer=_leaf_type,
        ref=_no_ref,
        doc="a constant tensor with its values (inline in the model text, or `external`: "
        "in the params file next to it)",
        egg_shape="{shape}",
        egg_dtype="{dtype}",
    )
)


def iota_values(shape: Sequence[int], axis: int, dtype: DType) -> np.ndarray:
    """Position along `axis`, broadcast over the other axes."""
    rank = len(shape)
    index = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(rank)])
    compute = np.float32 if dtype.is_float else dtype.np_dtype
    return np.broadcast_to(index.astype(compute), tuple(shape)).copy()


def _iota_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t = _leaf_type(in_types, attrs)
    if t.rank == 0:
        raise OpTypeError("'iota' needs a shape of rank >= 1")
    if not -t.rank <= attrs["axis"] < t.rank:
        raise OpTypeError(f"'iota': axis {attrs['axis']} is out of range for rank {t.rank}")
    if t.dtype.is_int and t.shape[attrs["axis"] % t.rank] - 1 > np.iinfo(t.dtype.np_dtype).max:
        raise OpTypeError(f"'iota': {t} cannot number {t.shape[attrs['axis'] % t.rank]} positions")
    return t


register(
    OpDef(
        name="iota",
        kind=OpKind.ELEMENTWISE,
        operands=(),
        attrs=(
            AttrSpec("shape", AttrType.INTS, doc="result shape"),
            AttrSpec("axis", AttrType.INT, 0, "the axis whose position each element holds"),
            AttrSpec("dtype", AttrType.DTYPE, "i32", "element type"),
        ),
        infer=_iota_infer,
        normalize=lambda ts, attrs: {**attrs, "axis": attrs["axis"] % len(attrs["shape"])},
        ref=lambda xs, attrs: iota_values(
            attrs["shape"], attrs["axis"], DType.parse(str(attrs["dtype"]))
        ),
        flops=lambda ts, out, attrs: out.numel,
        doc="0, 1, 2, ... along an axis, broadcast over the others (positions, masks)",
        egg_shape="{shape}",
        egg_dtype="{dtype}",
    )
)
