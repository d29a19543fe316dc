"""Ops that move data without arithmetic: transpose, reshape, concat, slice, broadcast."""

from __future__ import annotations

import math
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
    same_dtype,
)
from eqsat.ops.registry import register


def _fmt(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# ------------------------------------------------------------------ transpose


def _perm(rank: int, perm_attr: Sequence[int], what: object) -> tuple[int, ...]:
    perm = tuple(perm_attr) or tuple(reversed(range(rank)))
    if len(perm) != rank or sorted(p % rank for p in perm if -rank <= p < rank) != list(
        range(rank)
    ):
        raise OpTypeError(
            f"'transpose': perm {_fmt(perm)} is not a permutation of the axes of {what}"
        )
    return tuple(p % rank for p in perm)


def _transpose_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    perm = _perm(ts[0].rank, attrs["perm"], ts[0])
    return ts[0].with_shape(tuple(ts[0].shape[p] for p in perm))


register(
    OpDef(
        name="transpose",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(AttrSpec("perm", AttrType.INTS, (), "axis order; [] reverses the axes"),),
        infer=_transpose_infer,
        normalize=lambda ts, attrs: {"perm": _perm(ts[0].rank, attrs["perm"], ts[0])},
        ref=lambda xs, attrs: np.transpose(xs[0], _perm(xs[0].ndim, attrs["perm"], "x")),
        doc="permute axes (numpy.transpose)",
        egg_shape="(Permute {x} {perm})",
    )
)


# -------------------------------------------------------------------- reshape


def _reshape_target(x: TensorType, attrs: Attrs) -> tuple[int, ...]:
    shape = list(attrs["shape"])
    if shape.count(-1) > 1 or any(d == 0 or d < -1 for d in shape):
        raise OpTypeError(
            f"'reshape': shape {_fmt(shape)} must be positive sizes and at most one -1"
        )
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if x.numel % known:
            raise OpTypeError(f"'reshape': cannot reshape {x} to {_fmt(shape)}")
        shape[shape.index(-1)] = x.numel // known
    if math.prod(shape) != x.numel:
        raise OpTypeError(
            f"'reshape': cannot reshape {x} ({x.numel} elements) to {_fmt(shape)} "
            f"({math.prod(shape)} elements)"
        )
    return tuple(shape)


register(
    OpDef(
        name="reshape",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(AttrSpec("shape", AttrType.INTS, doc="new shape; one entry may be -1"),),
        infer=lambda ts, attrs: ts[0].with_shape(_reshape_target(ts[0], attrs)),
        normalize=lambda ts, attrs: {"shape": _reshape_target(ts[0], attrs)},
        ref=lambda xs, attrs: np.reshape(xs[0], tuple(attrs["shape"])),
        doc="same elements, new shape (row-major)",
        egg_shape="{shape}",
    )
)

# --------------------------------------------------------------------- concat


def _concat_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = same_dtype("concat", ts)
    first = ts[0]
    axis = normalize_axis("concat", attrs["axis"], first.rank)
    for t in ts[1:]:
        if t.rank != first.rank or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, first.shape, strict=True)) if i != axis
        ):
            raise OpTypeError(f"'concat' along axis {axis}: {first} and {t} differ off that axis")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    return TensorType(dtype, tuple(shape))


register(
    OpDef(
        name="concat",
        kind=OpKind.LAYOUT,
        operands=("x",),
        variadic=True,
        attrs=(AttrSpec("axis", AttrType.INT, 0),),
        infer=_concat_infer,
        normalize=lambda ts, attrs: {"axis": normalize_axis("concat", attrs["axis"], ts[0].rank)},
        ref=lambda xs, attrs: np.concatenate(xs, axis=attrs["axis"]),
        doc="join tensors along an axis",
        egg_shape="(ConcatShape {x} {x1} {axis})",
    )
)

# ---------------------------------------------------------------------- slice


def _slice_bounds(x: TensorType, attrs: Attrs) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Full per-axis [start, end) bounds, numpy-style negative indices and clamping."""
    starts, ends = list(attrs["starts"]), list(attrs["ends"])
    axes = list(attrs["axes"]) or list(range(len(starts)))
    if not (len(starts) == len(ends) == len(axes)):
        raise OpTypeError(
            f"'slice': starts {_fmt(starts)}, ends {_fmt(ends)} and axes {_fmt(axes)} differ in length"
        )
    lo, hi = [0] * x.rank, list(x.shape)
    seen = set()
    for s, e, a in zip(starts, ends, axes, strict=True):
        a = normalize_axis("slice", a, x.rank)
        if a in seen:
            raise OpTypeError(f"'slice': axis {a} is sliced twice")
        seen.add(a)
        n = x.shape[a]
        s2 = min(max(s + n if s < 0 else s, 0), n)
        e2 = min(max(e + n if e < 0 else e, 0), n)
        if e2 <= s2:
            raise OpTypeError(f"'slice': [{s}:{e}] of axis {a} of {x} is empty")
        lo[a], hi[a] = s2, e2
    return tuple(lo), tuple(hi)


def _slice_normalize(ts: Sequence[TensorType], attrs: Attrs) -> dict[str, AttrValue]:
    lo, hi = _slice_bounds(ts[0], attrs)
    return {"starts": lo, "ends": hi, "axes": tuple(range(ts[0].rank))}


def _slice_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    index = [slice(None)] * x.ndim
    axes = list(attrs["axes"]) or list(range(len(attrs["starts"])))
    for s, e, a in zip(attrs["starts"], attrs["ends"], axes, strict=True):
        index[a] = slice(s, e)
    return x[tuple(index)]


register(
    OpDef(
        name="slice",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(
            AttrSpec("starts", AttrType.INTS),
            AttrSpec("ends", AttrType.INTS),
            AttrSpec("axes", AttrType.INTS, (), "axes the bounds apply to; [] means 0, 1, ..."),
        ),
        infer=lambda ts, attrs: ts[0].with_shape(
            tuple(h - l for l, h in zip(*_slice_bounds(ts[0], attrs), strict=True))
        ),
        normalize=_slice_normalize,
        ref=_slice_ref,
        doc="x[starts:ends] along the given axes (step 1; negative indices count from the end)",
        egg_shape="(ListSub {ends} {starts})",
    )
)

# ------------------------------------------------------------------ broadcast


def _broadcast_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, shape = ts[0], tuple(attrs["shape"])
    ok = len(shape) >= x.rank and all(
        d == s or d == 1 for d, s in zip(reversed(x.shape), reversed(shape), strict=False)
    )
    if not ok or any(d < 1 for d in shape):
        raise OpTypeError(f"'broadcast': {x} does not broadcast to {_fmt(shape)}")
    return x.with_shape(shape)


register(
    OpDef(
        name="broadcast",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(AttrSpec("shape", AttrType.INTS),),
        infer=_broadcast_infer,
        ref=lambda xs, attrs: np.broadcast_to(xs[0], tuple(attrs["shape"])).copy(),
        doc="numpy broadcast_to a larger shape",
        egg_shape="{shape}",
    )
)
