"""Leaves: model inputs, parameters (weights) and constants (scalar or fill).

Their type lives in their attributes so that a leaf is a self-describing node in the
graph and in the e-graph.
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
    raise RuntimeError("input and param leaves are bound by the caller, not computed")


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
        ref=_const_ref,
        doc="a tensor filled with one value (a scalar when the shape is [])",
        egg_shape="{shape}",
        egg_dtype="{dtype}",
    )
)
