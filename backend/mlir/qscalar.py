"""Scalar bodies of the int8 conversions: quantize, dequantize and requantize with
explicit fixed-point arithmetic (an i64 product by the 31-bit multiplier, a rounding
shift with eqsat.quant.fixedpoint's tie rule, the zero point, saturation)."""

from __future__ import annotations

from collections.abc import Mapping

from eqsat.quant.fixedpoint import multiplier_shift

from .core import INT_RANGE, Body, f32

Scalar = tuple[str, str]


def quantize_scalar(b: Body, v: Scalar, scale: float, zero_point: int, dtype: str) -> Scalar:
    """saturate(rint(x / scale) + zero_point), NaN -> zero_point."""
    lo, hi = INT_RANGE[dtype]
    q = b.op(f"arith.divf {f32(b, v)}, {b.const(scale, 'f32')} : f32")
    q = b.op(f"math.roundeven {q} : f32")
    nan = b.op(f"arith.cmpf uno, {q}, {q} : f32")
    q = b.op(f"arith.select {nan}, {b.const(0.0, 'f32')}, {q} : f32")
    q = b.op(f"arith.addf {q}, {b.const(float(zero_point), 'f32')} : f32")
    q = b.op(f"arith.maximumf {q}, {b.const(float(lo), 'f32')} : f32")
    q = b.op(f"arith.minimumf {q}, {b.const(float(hi), 'f32')} : f32")
    return b.op(f"arith.fptosi {q} : f32 to {dtype}"), dtype


def _quantize(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return quantize_scalar(
        b, xs[0], float(attrs["scale"]), int(attrs["zero_point"]), str(attrs["dtype"])
    )


def _dequantize(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x = f32(b, xs[0])
    d = b.op(f"arith.subf {x}, {b.const(float(attrs['zero_point']), 'f32')} : f32")
    return b.op(f"arith.mulf {d}, {b.const(float(attrs['scale']), 'f32')} : f32"), "f32"


def requantize_scalar(
    b: Body,
    v: Scalar,
    mult: str,
    shift: str,
    zero_point: int,
    rounding: str,
    lo: int,
    hi: int,
    dtype: str,
) -> Scalar:
    """saturate(round(x * mult / 2**shift) + zero_point) to [lo, hi]; mult and shift are
    i64 values, the rounding is eqsat.quant.fixedpoint's (ties to even or away)."""
    x, t = v
    p = b.op(f"arith.extsi {x} : {t} to i64") if t != "i64" else x
    p = b.op(f"arith.muli {p}, {mult} : i64")
    one = b.const(1, "i64")
    safe = b.op(f"arith.maxsi {shift}, {one} : i64")
    half = b.op(f"arith.shli {one}, {b.op(f'arith.subi {safe}, {one} : i64')} : i64")
    if rounding == "away":
        zero = b.const(0, "i64")
        neg = b.op(f"arith.cmpi slt, {p}, {zero} : i64")
        mag = b.op(f"arith.select {neg}, {b.op(f'arith.subi {zero}, {p} : i64')}, {p} : i64")
        mag = b.op(f"arith.shrsi {b.op(f'arith.addi {mag}, {half} : i64')}, {safe} : i64")
        q = b.op(f"arith.select {neg}, {b.op(f'arith.subi {zero}, {mag} : i64')}, {mag} : i64")
    else:
        floor = b.op(f"arith.shrsi {p}, {safe} : i64")
        rem = b.op(f"arith.subi {p}, {b.op(f'arith.shli {floor}, {safe} : i64')} : i64")
        above = b.op(f"arith.cmpi sgt, {rem}, {half} : i64")
        tie = b.op(f"arith.cmpi eq, {rem}, {half} : i64")
        odd = b.op(f"arith.trunci {floor} : i64 to i1")
        up = b.op(f"arith.ori {above}, {b.op(f'arith.andi {tie}, {odd} : i1')} : i1")
        q = b.op(f"arith.addi {floor}, {b.op(f'arith.extui {up} : i1 to i64')} : i64")
    unshifted = b.op(f"arith.cmpi eq, {shift}, {b.const(0, 'i64')} : i64")
    q = b.op(f"arith.select {unshifted}, {p}, {q} : i64")
    q = b.op(f"arith.addi {q}, {b.const(zero_point, 'i64')} : i64")
    q = b.op(f"arith.maxsi {q}, {b.const(lo, 'i64')} : i64")
    q = b.op(f"arith.minsi {q}, {b.const(hi, 'i64')} : i64")
    return b.op(f"arith.trunci {q} : i64 to {dtype}"), dtype


def _requantize(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    dtype = str(attrs["dtype"])
    m, s = multiplier_shift(float(attrs["scale"]))
    lo, hi = INT_RANGE[dtype]
    return requantize_scalar(
        b,
        xs[0],
        b.const(m, "i64"),
        b.const(s, "i64"),
        int(attrs["zero_point"]),
        str(attrs["rounding"]),
        lo,
        hi,
        dtype,
    )


QUANT_SCALAR = {"quantize": _quantize, "dequantize": _dequantize, "requantize": _requantize}
