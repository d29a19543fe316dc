"""Comparisons, logic and selection. eqsat has no bool dtype: a mask is an i8 tensor
holding 0 or 1, and an integer operand counts as true where it is nonzero.

Comparisons follow IEEE: any comparison with nan is false (0). `where` picks values
without arithmetic on them, so inf, -inf and nan pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    Attrs,
    OpDef,
    OpKind,
    OpTypeError,
    broadcast_shapes,
    require_float,
    same_dtype,
)
from eqsat.ops.registry import register

MASK = DType.I8


def _mask(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(np.int8)


def _per_element(ts: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return out.numel


# ----------------------------------------------------------------- comparisons

COMPARISONS: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], str]] = {
    "equal": (np.equal, "a == b"),
    "less": (np.less, "a < b"),
    "less_equal": (np.less_equal, "a <= b"),
    "greater": (np.greater, "a > b"),
    "greater_equal": (np.greater_equal, "a >= b"),
}


def _compare_infer(name: str):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        same_dtype(name, ts)
        return TensorType(MASK, broadcast_shapes(*(t.shape for t in ts)))

    return infer


def _binary_mask_ref(fn):
    def ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _mask(fn(xs[0], xs[1]))

    return ref


for _name, (_fn, _doc) in COMPARISONS.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.ELEMENTWISE,
            operands=("a", "b"),
            infer=_compare_infer(_name),
            ref=_binary_mask_ref(_fn),
            flops=_per_element,
            doc=f"{_doc} as an i8 mask of 0/1 (numpy broadcasting; false for nan)",
            egg_shape="(Bcast {a} {b})",
            egg_dtype="i8",
        )
    )


# ----------------------------------------------------------------------- logic

LOGICAL: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], str]] = {
    "logical_and": (np.logical_and, "a and b"),
    "logical_or": (np.logical_or, "a or b"),
    "logical_xor": (np.logical_xor, "a xor b"),
}


def _require_int(name: str, ts: Sequence[TensorType]) -> None:
    for t in ts:
        if not t.dtype.is_int:
            raise OpTypeError(
                f"'{name}' needs integer operands (i8 or i32, nonzero is true), got {t}"
            )


def _logical_infer(name: str):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        _require_int(name, ts)
        return TensorType(MASK, broadcast_shapes(*(t.shape for t in ts)))

    return infer


for _name, (_fn, _doc) in LOGICAL.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.ELEMENTWISE,
            operands=("a", "b"),
            infer=_logical_infer(_name),
            ref=_binary_mask_ref(_fn),
            flops=_per_element,
            doc=f"{_doc} of integer operands (nonzero is true) as an i8 mask of 0/1 "
            "(numpy broadcasting; i8 and i32 may mix)",
            egg_shape="(Bcast {a} {b})",
            egg_dtype="i8",
        )
    )


def _logical_not_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    _require_int("logical_not", ts)
    return ts[0].with_dtype(MASK)


register(
    OpDef(
        name="logical_not",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        infer=_logical_not_infer,
        ref=lambda xs, attrs: _mask(xs[0] == 0),
        flops=_per_element,
        doc="not x of an integer operand (nonzero is true) as an i8 mask of 0/1",
        egg_dtype="i8",
    )
)


def _isnan_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    require_float("isnan", ts[0])
    return ts[0].with_dtype(MASK)


register(
    OpDef(
        name="isnan",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        infer=_isnan_infer,
        ref=lambda xs, attrs: _mask(np.isnan(xs[0])),
        flops=_per_element,
        doc="1 where x is nan, else 0 (an i8 mask)",
        egg_dtype="i8",
    )
)


# ----------------------------------------------------------------------- where


def _where_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    cond, a, b = ts
    if cond.dtype is not MASK:
        raise OpTypeError(f"'where': the condition must be an i8 mask, got {cond}")
    dtype = same_dtype("where", (a, b))
    return TensorType(dtype, broadcast_shapes(cond.shape, a.shape, b.shape))


register(
    OpDef(
        name="where",
        kind=OpKind.ELEMENTWISE,
        operands=("cond", "a", "b"),
        infer=_where_infer,
        ref=lambda xs, attrs: np.where(xs[0] != 0, xs[1], xs[2]),
        flops=_per_element,
        doc="a where cond is nonzero, else b (cond an i8 mask; numpy broadcasting of all "
        "three; values are picked, not computed: inf and nan pass unchanged)",
        egg_shape="(Bcast {cond} (Bcast {a} {b}))",
        egg_dtype="{a}",
    )
)
