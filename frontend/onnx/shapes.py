"""Evaluating nodes whose inputs are known at import time.

Numbers fold through onnx.reference (every op of the standard, so whatever shape and
position arithmetic an exporter writes folds). Shape values that hold symbolic
dimensions are numpy object arrays of `SymDim`; the ops exporters apply to shapes
(Gather, Concat, Unsqueeze, Slice, arithmetic, comparisons, Where...) are carried out
on them here. Anything else on symbolic values is left to the converters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from frontend.onnx.context import ConvertError
from frontend.onnx.dtypes import FLOAT_TYPES, numpy_type, onnx_type_of
from frontend.onnx.symdim import NotRepresentable, SymDim
from frontend.onnx.values import Known


def fold_numeric(
    node: onnx.NodeProto,
    inputs: Sequence[Known | None],
    model: onnx.ModelProto,
    domains: Mapping[str, int],
) -> list[Known]:
    """Evaluate `node` on known numbers with the ONNX reference implementation."""
    fast = fold_symbolic(node, inputs, _attrs(node))
    if fast is not None:
        return fast
    feeds = {
        name: v.value for name, v in zip(node.input, inputs, strict=True) if name and v is not None
    }
    opsets = {("" if d == "ai.onnx" else d): v for d, v in domains.items()}
    try:
        results = ReferenceEvaluator(node, opsets=opsets).run(None, feeds)
    except Exception as err:
        raise NotRepresentable(
            frozenset(), f"the value of {node.op_type} ({type(err).__name__}: {err})"
        ) from None
    weight = _weight(node, inputs)
    return [Known(np.asarray(r), onnx_type_of(np.asarray(r)), weight) for r in results]


def _weight(node: onnx.NodeProto, inputs: Sequence[Known | None]) -> bool:
    present = [v for v in inputs if v is not None]
    return bool(present) and all(v.weight for v in present)


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _obj(a: np.ndarray) -> np.ndarray:
    """An int array as an object array of SymDim (so symbolic arithmetic applies)."""
    if a.dtype == object:
        return a
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [SymDim(int(v)) for v in a.reshape(-1)]
    return out


def _back(a: np.ndarray) -> np.ndarray:
    """Object results back to int64 where every element is a number."""
    a = np.asarray(a)
    if a.dtype != object:
        return a
    flat = a.reshape(-1)
    if all(isinstance(v, bool | np.bool_) for v in flat):
        return a.astype(bool)
    if all(not isinstance(v, SymDim) or v.is_int for v in flat):
        return np.array([int(v) for v in flat], dtype=np.int64).reshape(a.shape)
    return a


_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a // b,
    "Mod": lambda a, b: a % b,
}
_COMPARE = {
    "Equal": lambda a, b: a == b,
    "Less": lambda a, b: a < b,
    "LessOrEqual": lambda a, b: a <= b,
    "Greater": lambda a, b: a > b,
    "GreaterOrEqual": lambda a, b: a >= b,
}


def fold_symbolic(
    node: onnx.NodeProto, inputs: Sequence[Known | None], attrs: dict
) -> list[Known] | None:
    """The node's outputs where it is shape arithmetic, else None. Integer inputs only
    (float math on dimensions goes to onnx.reference, or fails when symbolic)."""
    op = node.op_type
    present = [v for v in inputs if v is not None]
    if op == "Constant":
        return None if not attrs else _constant(attrs)
    if op == "GatherElements" and not any(v.value.dtype == object for v in present):
        # onnx.reference's GatherElements fails under numpy 2 (it flattens wrongly).
        data, idx = inputs[0].value, inputs[1].value.astype(np.int64)
        axis = attrs.get("axis", 0) % data.ndim
        idx = np.where(idx < 0, idx + data.shape[axis], idx)
        if idx.size and (idx.min() < 0 or idx.max() >= data.shape[axis]):
            bad = int(idx.max() if idx.max() >= data.shape[axis] else idx.min())
            raise ConvertError(
                f"GatherElements: index {bad} is out of range for axis {axis} of size "
                f"{data.shape[axis]}"
            )
        return [
            Known(
                np.take_along_axis(data, idx, axis=axis), inputs[0].onnx_type, _weight(node, inputs)
            )
        ]
    if any(v.value.dtype.kind == "f" or v.onnx_type in FLOAT_TYPES for v in present):
        return None
    symbolic = any(v.value.dtype == object for v in present)
    if not symbolic and sum(v.value.size for v in present) > 4096:
        return None  # large integer tensors: onnx.reference is as fast and exact
    x = inputs[0] if inputs else None
    weight = _weight(node, inputs)

    def out(a: np.ndarray, onnx_type: int | None = None) -> list[Known]:
        a = _back(a)
        t = (
            onnx_type
            if onnx_type is not None
            else (x.onnx_type if x is not None else TensorProto.INT64)
        )
        if a.dtype == bool:
            t = TensorProto.BOOL
        return [Known(a, t, weight)]

    try:
        return _fold(op, node, inputs, attrs, present, symbolic, x, out)
    except NotRepresentable:
        # Symbolic bounds or shapes of an op that makes a tensor: the converter
        # writes it as an op of the model (a slice to S, a broadcast to [B, S]).
        if op in _SHAPED:
            return None
        raise


# Ops whose symbolic operands are sizes of the result, not values in it.
_SHAPED = frozenset({"Slice", "Expand", "Reshape", "ConstantOfShape", "Range", "Tile", "Gather"})


def _fold(op, node, inputs, attrs, present, symbolic, x, out) -> list[Known] | None:
    try:
        if op in ("Identity",):
            return [x]  # type: ignore[list-item]
        if op in _BINARY and len(present) == 2:
            return out(_BINARY[op](_obj(inputs[0].value), _obj(inputs[1].value)))
        if op in _COMPARE:
            a, b = _obj(inputs[0].value), _obj(inputs[1].value)
            res = (
                np.vectorize(_COMPARE[op], otypes=[bool])(a, b)
                if a.size and b.size
                else np.zeros(np.broadcast_shapes(a.shape, b.shape), bool)
            )
            return out(res, TensorProto.BOOL)
        if op == "Neg":
            return out(-_obj(x.value))
        if op in ("Max", "Min") and present:
            pick = max if op == "Max" else min
            arrays = np.broadcast_arrays(*[_obj(v.value) for v in present])
            res = np.empty(arrays[0].shape, dtype=object)
            for idx in np.ndindex(res.shape):
                res[idx] = pick(a[idx] for a in arrays)
            return out(res)
        if op == "Not":
            return out(~x.value.astype(bool), TensorProto.BOOL)
        if op in ("And", "Or", "Xor"):
            f = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}[op]
            return out(
                f(inputs[0].value.astype(bool), inputs[1].value.astype(bool)), TensorProto.BOOL
            )
        if op == "Where":
            cond = inputs[0].value.astype(bool)
            a, b = _obj(inputs[1].value), _obj(inputs[2].value)
            return out(np.where(cond, a, b), inputs[1].onnx_type)
        if op == "Cast":
            to = attrs["to"]
            if to in FLOAT_TYPES:  # onnx.reference for numbers; a converter for dims
                return None
            if to == TensorProto.BOOL:
                return out(
                    np.vectorize(lambda v: v != 0, otypes=[bool])(_obj(x.value)), TensorProto.BOOL
                )
            return out(x.value if symbolic else x.value.astype(numpy_type(to)), to)
        if op == "Unsqueeze":
            axes = _axes(node, inputs, attrs, 1)
            rank = x.value.ndim + len(axes)
            shape = list(x.value.shape)
            for a in sorted(ax % rank for ax in axes):
                shape.insert(a, 1)
            return out(x.value.reshape(shape))
        if op == "Squeeze":
            axes = _axes(node, inputs, attrs, 1)
            if axes is None:
                return out(np.squeeze(x.value))
            return out(np.squeeze(x.value, axis=tuple(a % x.value.ndim for a in axes)))
        if op == "Concat":
            return out(
                np.concatenate(
                    [_obj(v.value) if symbolic else v.value for v in present], axis=attrs["axis"]
                )
            )
        if op == "Gather":
            idx = inputs[1].value.astype(np.int64)
            axis = attrs.get("axis", 0)
            n = x.value.shape[axis]
            return out(np.take(x.value, np.where(idx < 0, idx + n, idx), axis=axis))
        if op == "Reshape":
            shape = [int(v) for v in inputs[1].value.reshape(-1)]
            shape = [x.value.shape[i] if s == 0 else s for i, s in enumerate(shape)]
            return out(x.value.reshape(shape))
        if op == "Slice":
            return out(_slice(x.value, inputs))
        if op == "Size":
            return out(np.array(x.value.size, dtype=np.int64), TensorProto.INT64)
        if op == "Shape":
            dims = list(x.value.shape)
            start, end = attrs.get("start", 0), attrs.get("end", len(dims))
            return out(np.array(dims[slice(start, end)], dtype=np.int64), TensorProto.INT64)
        if op == "Expand":
            shape = [int(v) for v in inputs[1].value.reshape(-1)]
            target = np.broadcast_shapes(x.value.shape, tuple(shape))
            return out(np.broadcast_to(x.value, target).copy())
        if op == "ConstantOfShape" and not symbolic:
            return None
    except (TypeError, ValueError, IndexError):
        return None
    return None


def _constant(attrs: dict) -> list[Known] | None:
    if "value" in attrs:
        a = numpy_helper.to_array(attrs["value"])
        t = attrs["value"].data_type
        # A float tensor in a Constant node is a weight in all but name.
        return [Known(a, t, weight=t in FLOAT_TYPES and a.size > 1)]
    for key, kind in (("value_float", TensorProto.FLOAT), ("value_int", TensorProto.INT64)):
        if key in attrs:
            return [Known(np.array(attrs[key], dtype=numpy_type(kind)), kind)]
    for key, kind in (("value_floats", TensorProto.FLOAT), ("value_ints", TensorProto.INT64)):
        if key in attrs:
            return [Known(np.array(attrs[key], dtype=numpy_type(kind)), kind)]
    return None


def _axes(node, inputs, attrs, position: int) -> list[int] | None:
    if len(inputs) > position and inputs[position] is not None:
        return [int(v) for v in inputs[position].value.reshape(-1)]
    if "axes" in attrs:
        return list(attrs["axes"])
    return None


def _slice(x: np.ndarray, inputs) -> np.ndarray:
    starts = [int(v) for v in inputs[1].value.reshape(-1)]
    ends = [int(v) for v in inputs[2].value.reshape(-1)]
    axes = (
        [int(v) for v in inputs[3].value.reshape(-1)]
        if len(inputs) > 3 and inputs[3] is not None
        else list(range(len(starts)))
    )
    steps = (
        [int(v) for v in inputs[4].value.reshape(-1)]
        if len(inputs) > 4 and inputs[4] is not None
        else [1] * len(starts)
    )
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        index[a % x.ndim] = slice(s, e, st)
    return x[tuple(index)]


__all__ = ["fold_numeric", "fold_symbolic"]
