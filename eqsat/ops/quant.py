"""Conversions between number formats: cast, quantize, dequantize, requantize.

Rounding is to nearest, ties to even (numpy.rint), and integer results saturate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import Attrs, AttrSpec, AttrType, OpDef, OpKind, OpTypeError, require_float
from eqsat.ops.registry import register


def saturate(x: np.ndarray, dtype: DType) -> np.ndarray:
    info = np.iinfo(dtype.np_dtype)
    return np.clip(x, info.min, info.max).astype(dtype.np_dtype)


def _cast_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    dtype = DType.parse(attrs["dtype"])
    x = xs[0]
    if dtype.is_int and np.issubdtype(x.dtype, np.floating):
        return saturate(np.rint(np.nan_to_num(x)), dtype)
    if dtype.is_int:
        return saturate(x.astype(np.int64), dtype)
    return x.astype(np.float32)


register(
    OpDef(
        name="cast",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=(AttrSpec("dtype", AttrType.DTYPE),),
        infer=lambda ts, attrs: ts[0].with_dtype(DType.parse(attrs["dtype"])),
        ref=_cast_ref,
        flops=lambda ts, out, attrs: out.numel,
        doc="convert to another dtype (round to nearest even, saturate to integer range)",
        egg_dtype="{dtype}",
    )
)


def _check_scale(op: str, attrs: Attrs) -> None:
    if not attrs["scale"] > 0:
        raise OpTypeError(f"'{op}': scale must be positive, got {attrs['scale']}")


def _to_int_infer(op: str, source_ok):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        _check_scale(op, attrs)
        source_ok(ts[0])
        out = DType.parse(attrs["dtype"])
        if out.is_float:
            raise OpTypeError(f"'{op}': dtype must be an integer type, got {out}")
        info = np.iinfo(out.np_dtype)
        if not info.min <= attrs["zero_point"] <= info.max:
            raise OpTypeError(
                f"'{op}': zero_point {attrs['zero_point']} is outside the range of {out}"
            )
        return ts[0].with_dtype(out)

    return infer


def _require_i32(op: str):
    def check(t: TensorType) -> None:
        if t.dtype is not DType.I32:
            raise OpTypeError(f"'{op}' needs an i32 operand, got {t}")

    return check


_SCALE_ATTRS = (
    AttrSpec("scale", AttrType.FLOAT, doc="real value of one integer step"),
    AttrSpec("zero_point", AttrType.INT, 0, "integer that represents real 0"),
)


register(
    OpDef(
        name="quantize",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=(*_SCALE_ATTRS, AttrSpec("dtype", AttrType.DTYPE, "i8")),
        infer=_to_int_infer("quantize", lambda t: require_float("quantize", t)),
        ref=lambda xs, attrs: saturate(
            np.rint(xs[0] / np.float32(attrs["scale"])) + attrs["zero_point"],
            DType.parse(attrs["dtype"]),
        ),
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="round(x / scale) + zero_point, saturated",
        egg_dtype="{dtype}",
    )
)


def _dequantize_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    _check_scale("dequantize", attrs)
    if ts[0].dtype.is_float:
        raise OpTypeError(f"'dequantize' needs an integer operand, got {ts[0]}")
    return ts[0].with_dtype(DType.F32)


register(
    OpDef(
        name="dequantize",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=_SCALE_ATTRS,
        infer=_dequantize_infer,
        ref=lambda xs, attrs: (
            (xs[0].astype(np.float32) - np.float32(attrs["zero_point"]))
            * np.float32(attrs["scale"])
        ),
        flops=lambda ts, out, attrs: 2 * out.numel,
        doc="(x - zero_point) * scale, as f32",
        egg_dtype="f32",
    )
)

register(
    OpDef(
        name="requantize",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=(*_SCALE_ATTRS, AttrSpec("dtype", AttrType.DTYPE, "i8")),
        infer=_to_int_infer("requantize", _require_i32("requantize")),
        ref=lambda xs, attrs: saturate(
            np.rint(xs[0].astype(np.float64) * attrs["scale"]) + attrs["zero_point"],
            DType.parse(attrs["dtype"]),
        ),
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="i32 accumulator to a narrow integer: round(x * scale) + zero_point, saturated",
        egg_dtype="{dtype}",
    )
)
