"""Scans: cumulative sums along one axis (ONNX CumSum).

Exporters compute position ids from the runtime attention mask with CumSum
(`cumsum(mask, axis=1) * mask + padding_idx` in RoBERTa, OPT, BLOOM), so the op keeps
ONNX's meaning exactly: `exclusive` leaves each element out of its own sum (the first
output is 0), `reverse` sums from the end of the axis. Floats accumulate in f32 in
order along the axis; integers wrap in their type like the other integer ops.
"""

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
    OpTypeError,
    normalize_axis,
)
from eqsat.ops.registry import register


def cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """ONNX CumSum on an array in its compute type (f32 for floats; integers are summed
    exactly and each result saturates to the stored type, as every integer result:
    eqsat/quant/fixedpoint.py)."""
    axis %= x.ndim
    flipped = np.flip(x, axis) if reverse else x
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is nan, as summed
        if x.dtype.kind in "iu" and x.dtype.itemsize < 8:
            info = np.iinfo(x.dtype)
            exact = np.cumsum(flipped, axis=axis, dtype=np.int64)
            running = np.clip(exact, info.min, info.max).astype(x.dtype)
        else:
            running = np.cumsum(flipped, axis=axis, dtype=x.dtype)
    if exclusive:
        shifted = np.zeros_like(running)
        head = [slice(None)] * x.ndim
        tail = [slice(None)] * x.ndim
        head[axis], tail[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(head)] = running[tuple(tail)]
        running = shifted
    return np.flip(running, axis) if reverse else running


def _infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = ts[0]
    if x.rank < 1:
        raise OpTypeError(f"'cumsum' needs an operand of rank >= 1, got {x}")
    normalize_axis("cumsum", attrs["axis"], x.rank)
    return x


def _normalize(ts: Sequence[TensorType], attrs: Attrs) -> dict[str, AttrValue]:
    return {
        "axis": normalize_axis("cumsum", attrs["axis"], ts[0].rank),
        "exclusive": attrs["exclusive"],
        "reverse": attrs["reverse"],
    }


register(
    OpDef(
        name="cumsum",
        kind=OpKind.REDUCE,
        operands=("x",),
        attrs=(
            AttrSpec("axis", AttrType.INT, -1, "the axis summed along"),
            AttrSpec("exclusive", AttrType.BOOL, False, "leave each element out of its own sum"),
            AttrSpec("reverse", AttrType.BOOL, False, "sum from the end of the axis"),
        ),
        infer=_infer,
        normalize=_normalize,
        ref=lambda xs, attrs: cumsum(
            xs[0], int(attrs["axis"]), bool(attrs["exclusive"]), bool(attrs["reverse"])
        ),
        flops=lambda ts, out, attrs: out.numel,
        doc="running sum along an axis (ONNX CumSum): exclusive leaves each element out "
        "(the first sum is 0), reverse sums from the end; floats accumulate in f32, "
        "integers wrap in their type",
        egg_shape="{x}",
    )
)
