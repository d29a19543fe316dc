"""Int8 convolution kernels: a `qconv2d` with its epilogue (bias in i32, per-channel
requantization with the activation as integer bounds, residual add), so an int8 CNN
stays int8 between its convolutions (rules/quant.rules, "int8 convolutions").

`requantize_ch` is the per-channel requantization of an NCHW accumulator: its channel
scales `s` broadcast against x ([C, 1, 1] for [N, C, H, W]), and the activation that
follows is a clamp [min, max] in real units, applied as the integer bounds
round(min / scale) + zero_point and round(max / scale) + zero_point. That is exact:
quantization is monotone, so q(clip(v, a, b)) = clip(q(v), q(a), q(b)) (ReLU: min 0;
ReLU6: min 0, max 6).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    GROUPS_ATTR,
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    require_float,
)
from eqsat.ops.fused import AttrRef, call
from eqsat.ops.quant_base import ROUNDING_ATTR, check_rounding, check_scale, fused
from eqsat.ops.registry import register

CLAMP_ATTRS = (
    AttrSpec("min", AttrType.FLOAT, -math.inf, "lower bound of the activation, real units"),
    AttrSpec("max", AttrType.FLOAT, math.inf, "upper bound of the activation, real units"),
)


def clamp_bounds(scale: float, zero_point: int, lo: float, hi: float) -> tuple[int, int]:
    """The i8 bounds of the real clamp [lo, hi]: each bound quantized as `quantize`
    does (round half to even of bound / scale, in f32, plus the zero point), saturated."""

    def bound(v: float) -> int:
        with np.errstate(over="ignore"):
            q = float(np.rint(np.float32(v) / np.float32(scale))) + zero_point
        return int(min(127.0, max(-128.0, q)))  # +-inf saturate

    return bound(lo), bound(hi)


def _requantize_ch_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, s = ts
    if x.dtype is not DType.I32 or x.rank < 1:
        raise OpTypeError(f"'requantize_ch' needs an i32 operand of rank >= 1, got {x}")
    require_float("requantize_ch", s)
    if s.rank > x.rank or any(
        d not in (1, e) for d, e in zip(s.shape[::-1], x.shape[::-1], strict=False)
    ):
        raise OpTypeError(f"'requantize_ch': scales {s} do not broadcast against {x}")
    check_scale("requantize_ch", attrs)
    check_rounding("requantize_ch", attrs)
    if not -128 <= attrs["zero_point"] <= 127:
        raise OpTypeError(
            f"'requantize_ch': zero_point {attrs['zero_point']} is outside the range of i8"
        )
    if not attrs["min"] <= attrs["max"]:
        raise OpTypeError(f"'requantize_ch': min {attrs['min']} > max {attrs['max']}")
    return x.with_dtype(DType.I8)


def requantize_ch_tables(s: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(multipliers, shifts) shaped like s: the fixed-point form of s / scale, s in f32
    (as the tensor holds it) divided in f64 (as requantize_pc's tables)."""
    from eqsat.quant.fixedpoint import channel_multipliers

    s64 = np.asarray(s, dtype=np.float32).astype(np.float64)
    return channel_multipliers(s64 / float(scale))


def _requantize_ch_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    from eqsat.quant.fixedpoint import requantize_fixed

    mult, shift = requantize_ch_tables(xs[1], attrs["scale"])
    zp = int(attrs["zero_point"])
    lo, hi = clamp_bounds(attrs["scale"], zp, attrs["min"], attrs["max"])
    return requantize_fixed(xs[0], mult, shift, zp, attrs["rounding"], lo, hi).astype(np.int8)


register(
    OpDef(
        name="requantize_ch",
        kind=OpKind.QUANT,
        operands=("x", "s"),
        attrs=(
            AttrSpec("scale", AttrType.FLOAT, doc="real value of one step of the i8 result"),
            AttrSpec("zero_point", AttrType.INT, 0, "i8 value of real 0"),
            *CLAMP_ATTRS,
            ROUNDING_ATTR,
        ),
        infer=_requantize_ch_infer,
        ref=_requantize_ch_ref,
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="per-channel requantization of an i32 accumulator x whose scales s broadcast "
        "against it (NCHW: s [C, 1, 1]): clamp(round(x * m / 2**k) + zero_point, lo, hi) "
        "in i8, m / 2**k the fixed-point form of s / scale, [lo, hi] the real clamp "
        "[min, max] quantized",
        egg_dtype="i8",
    )
)

# ------------------------------------------------------------------ fused kernels

_CONV_ATTRS = (
    AttrSpec("a_zero", AttrType.INT, 0, "zero point subtracted from x"),
    AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
    AttrSpec("padding", AttrType.INTS, (0, 0), "padding [PH, PW] of x - a_zero with 0"),
    GROUPS_ATTR,
)
_OUT_ATTRS = (
    AttrSpec("scale", AttrType.FLOAT, doc="scale of the i8 result"),
    AttrSpec("zero_point", AttrType.INT, 0, "zero point of the i8 result"),
)
_QCONV = call(
    "qconv2d",
    "x",
    "w",
    a_zero=AttrRef("a_zero"),
    stride=AttrRef("stride"),
    padding=AttrRef("padding"),
    groups=AttrRef("groups"),
)
_QACC = call("add", _QCONV, "b")
_DEQ = call("mul", call("cast", _QACC, dtype="f32"), "s")
_RESIDUAL = call("add", _DEQ, "r")


def _channel_scales(ts: Sequence[TensorType], out: TensorType) -> None:
    """The epilogue requantizes one output channel at a time (one multiplier per
    channel: backend/tileexpr.py RequantCh), so s is per channel, [O, 1, 1]."""
    s = ts[3]
    padded = (1,) * (out.rank - s.rank) + s.shape
    if any(d != 1 for k, d in enumerate(padded) if k != 1):
        raise OpTypeError(
            f"the requantization of an int8 convolution takes one scale per output "
            f"channel, [{out.shape[1]}, 1, 1], got {s}"
        )


# requantize_ch(qconv2d(x, w) + b, s): int8 in, int8 out, the activation a clamp
fused(
    "qconv2d_bias_requant",
    ("x", "w", "b", "s"),
    call(
        "requantize_ch",
        _QACC,
        "s",
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        min=AttrRef("min"),
        max=AttrRef("max"),
        rounding=AttrRef("rounding"),
    ),
    (*_CONV_ATTRS, *_OUT_ATTRS, *CLAMP_ATTRS, ROUNDING_ATTR),
    "i8",
    check=_channel_scales,
)
# (qconv2d(x, w) + b) * s: back to f32 for a float consumer
fused("qconv2d_bias_dequant", ("x", "w", "b", "s"), _DEQ, _CONV_ATTRS, "f32")
# (qconv2d(x, w) + b) * s + r and its ReLU: a residual block's last convolution, f32 out
fused("qconv2d_bias_dequant_add", ("x", "w", "b", "s", "r"), _RESIDUAL, _CONV_ATTRS, "f32")
fused(
    "qconv2d_bias_dequant_add_relu",
    ("x", "w", "b", "s", "r"),
    call("relu", _RESIDUAL),
    _CONV_ATTRS,
    "f32",
)
# silu((qconv2d(x, w) + b) * s): SiLU in the epilogue (EfficientNet's MBConv, YOLO), f32
# out for a float consumer, or quantized once for the next int8 convolution
_SILU = call("mul", _DEQ, call("sigmoid", _DEQ))
fused("qconv2d_bias_dequant_silu", ("x", "w", "b", "s"), _SILU, _CONV_ATTRS, "f32")
fused(
    "qconv2d_bias_silu_quant",
    ("x", "w", "b", "s"),
    call("quantize", _SILU, scale=AttrRef("scale"), zero_point=AttrRef("zero_point"), dtype="i8"),
    (*_CONV_ATTRS, *_OUT_ATTRS),
    "i8",
)
# q(clip((qconv2d(x, w) + b) * s + dequantize(r))): the residual add on int8 tensors
# (ONNX Runtime's QLinearAdd after the convolution), the sum rounded once to i8
fused(
    "qconv2d_bias_add_requant",
    ("x", "w", "b", "s", "r"),
    call(
        "quantize",
        call(
            "clip",
            call(
                "add",
                _DEQ,
                call("dequantize", "r", scale=AttrRef("r_scale"), zero_point=AttrRef("r_zero")),
            ),
            min=AttrRef("min"),
            max=AttrRef("max"),
        ),
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        dtype="i8",
    ),
    (
        *_CONV_ATTRS,
        AttrSpec("r_scale", AttrType.FLOAT, doc="scale of the i8 residual r"),
        AttrSpec("r_zero", AttrType.INT, 0, "zero point of the i8 residual r"),
        *_OUT_ATTRS,
        *CLAMP_ATTRS,
    ),
    "i8",
)
