"""Reductions over axes: sum, max, mean."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import TensorType
from eqsat.ops.base import (
    Attrs,
    AttrSpec,
    AttrType,
    AttrValue,
    OpDef,
    OpKind,
    normalize_axes,
    require_float,
)
from eqsat.ops.registry import register


def reduced_axes(op: str, x: TensorType, attrs: Attrs) -> tuple[int, ...]:
    axes = tuple(attrs["axes"]) or tuple(range(x.rank))
    return normalize_axes(op, axes, x.rank)


def _infer(op: str, float_only: bool):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        x = ts[0]
        if float_only:
            require_float(op, x)
        axes = reduced_axes(op, x, attrs)
        if attrs["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return x.with_shape(shape)

    return infer


def _normalize(op: str):
    def normalize(ts: Sequence[TensorType], attrs: Attrs) -> dict[str, AttrValue]:
        return {"axes": reduced_axes(op, ts[0], attrs), "keepdims": attrs["keepdims"]}

    return normalize


def _flops(ts: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return ts[0].numel


_REDUCTIONS = {
    "reduce_sum": (np.sum, False, "sum"),
    "reduce_max": (np.max, False, "maximum"),
    "reduce_mean": (np.mean, True, "mean"),
}


def _ref(fn):
    def ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        axes = tuple(attrs["axes"]) or None
        return np.asarray(fn(xs[0], axis=axes, keepdims=bool(attrs["keepdims"])))

    return ref


for _name, (_fn, _float_only, _word) in _REDUCTIONS.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.REDUCE,
            operands=("x",),
            attrs=(
                AttrSpec("axes", AttrType.INTS, (), "axes to reduce; [] reduces all"),
                AttrSpec("keepdims", AttrType.BOOL, False, "keep reduced axes as size 1"),
            ),
            infer=_infer(_name, _float_only),
            normalize=_normalize(_name),
            ref=_ref(_fn),
            flops=_flops,
            doc=f"{_word} over axes",
            egg_shape="(ReduceShape {x} {axes} {keepdims})",
        )
    )
