"""int8 arithmetic: quantize / dequantize / requantize as scalar bodies with explicit
fixed-point requantization (an i64 product by the 31-bit multiplier, a rounding
shift, the zero point, saturation), integer contractions with arith.extsi into i32
accumulators, and per-channel requantization whose multiplier tables come from scales
known at compile time (as the hwsim backend needs them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from eqsat.ops.quant import requantize_pc_tables

from .contract import conv_acc, matmul_acc
from .core import Body, MlirEmitError, Val, affine_map, broadcast_map
from .qscalar import requantize_scalar

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def emit_requantize_pc(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    """Per-channel requantization: the (multiplier, shift) tables of the scales s,
    known at compile time, as i64 constants indexed by the last axis."""
    x, s = args
    scales = em.known_value(s)
    if scales is None:
        raise MlirEmitError(
            "requantize_pc needs its channel scales at compile time (a literal, or a param "
            "whose value is given); they are a runtime input here"
        )
    mult, shift = requantize_pc_tables(scales, float(ap.attrs["scale"]))
    n = x.shape[-1]
    mult = np.broadcast_to(mult.reshape(-1), (n,)).astype(np.int64)
    shift = np.broadcast_to(shift.reshape(-1), (n,)).astype(np.int64)
    m_val = em.func.constant(mult, "i64", f"{ap.hint}_mult")
    s_val = em.func.constant(shift, "i64", f"{ap.hint}_shift")
    zp = int(ap.attrs["zero_point"])
    lo = max(-128, zp) if ap.attrs["relu"] else -128
    rank = x.rank
    last = affine_map(rank, [f"d{rank - 1}"])

    def body(b: Body) -> str:
        (v, m, sh) = b.args[:3]
        return requantize_scalar(b, v, m[0], sh[0], zp, str(ap.attrs["rounding"]), lo, 127, "i8")[0]

    return em.func.generic(
        [x, m_val, s_val],
        [broadcast_map(x.shape, ap.shape), last, last],
        ap.shape,
        "i8",
        ["parallel"] * rank,
        body,
        ap.hint,
    )


def emit_requantize_ch(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    """Per-channel requantization with scales s broadcast against x: (multiplier,
    shift) tables shaped like s, known at compile time, read through s's broadcast
    map; the clamp [min, max] as integer bounds (eqsat.ops.quant_conv)."""
    from eqsat.ops.quant_conv import clamp_bounds, requantize_ch_tables

    x, s = args
    scales = em.known_value(s)
    if scales is None:
        raise MlirEmitError(
            "requantize_ch needs its channel scales at compile time (a literal, or params "
            "whose values are given); they are a runtime input here"
        )
    scale = float(ap.attrs["scale"])
    mult, shift = requantize_ch_tables(np.asarray(scales).reshape(s.shape), scale)
    m_val = em.func.constant(mult.astype(np.int64), "i64", f"{ap.hint}_mult")
    s_val = em.func.constant(shift.astype(np.int64), "i64", f"{ap.hint}_shift")
    zp = int(ap.attrs["zero_point"])
    lo, hi = clamp_bounds(scale, zp, ap.attrs["min"], ap.attrs["max"])
    table = broadcast_map(s.shape, ap.shape)

    def body(b: Body) -> str:
        (v, m, sh) = b.args[:3]
        return requantize_scalar(b, v, m[0], sh[0], zp, str(ap.attrs["rounding"]), lo, hi, "i8")[0]

    return em.func.generic(
        [x, m_val, s_val],
        [broadcast_map(x.shape, ap.shape), table, table],
        ap.shape,
        "i8",
        ["parallel"] * x.rank,
        body,
        ap.hint,
    )


def emit_qmatmul(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    a, b = args
    zeros = (int(ap.attrs["a_zero"]), int(ap.attrs["b_zero"]))
    if b.rank == 2 and a.dtype == b.dtype == "i8":
        return matmul_acc(em, a, b, ap.shape, "i32", ap.hint, zeros=zeros)
    a = _minus_zero(em, a, int(ap.attrs["a_zero"]), ap.hint)
    b = _minus_zero(em, b, int(ap.attrs["b_zero"]), ap.hint)
    return matmul_acc(em, a, b, ap.shape, "i32", ap.hint)


def emit_qconv2d(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x, w = args
    zero = int(ap.attrs["a_zero"])
    if zero:
        x = _minus_zero(em, x, zero, ap.hint)
    return conv_acc(em, x, w, ap, "i32", 0)


def _minus_zero(em: Emitter, v: Val, zero: int, hint: str) -> Val:
    """v - zero widened to i32 (an i8 operand with a zero point is not i8 any more)."""
    if not zero:
        return v

    def body(b: Body) -> str:
        x, t = b.args[0]
        wide = b.op(f"arith.extsi {x} : {t} to i32") if t != "i32" else x
        return b.op(f"arith.subi {wide}, {b.const(zero, 'i32')} : i32")

    return em.func.generic(
        [v],
        [broadcast_map(v.shape, v.shape)],
        v.shape,
        "i32",
        ["parallel"] * v.rank,
        body,
        f"{hint}_centered",
    )
