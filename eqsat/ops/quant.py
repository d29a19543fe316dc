"""Conversions between number formats: cast, quantize, dequantize, requantize, and
the ops of int8 post-training quantization (docs: eqsat/quant/__init__.py).

Float -> integer rounding is to nearest, ties to even (numpy.rint), and integer
results saturate. Requantization (i32 -> i8) is fixed-point: the real scale becomes a
31-bit multiplier and a shift (eqsat.quant.fixedpoint), rounded as the `rounding`
attribute says, so the reference interpreter and hwsim agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import Attrs, AttrSpec, AttrType, OpDef, OpKind, OpTypeError, require_float
from eqsat.ops.quant_base import ROUNDING_ATTR, check_rounding, check_scale, fused
from eqsat.ops.registry import register


def saturate(x: np.ndarray, dtype: DType) -> np.ndarray:
    info = np.iinfo(dtype.np_dtype)
    return np.clip(x, info.min, info.max).astype(dtype.np_dtype)


def _cast_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    dtype = DType.parse(attrs["dtype"])
    x = xs[0]
    if dtype.is_int and np.issubdtype(x.dtype, np.floating):
        # rint, clip (which saturates +-inf), NaN -> 0, narrow: one copy, the rest in
        # place (weights are large)
        r = np.rint(x)
        if not isinstance(r, np.ndarray):  # a 0-d input gives a numpy scalar
            r = np.array(r)
        info = np.iinfo(dtype.np_dtype)
        np.clip(r, info.min, info.max, out=r)
        np.copyto(r, 0, where=np.isnan(r))
        return r.astype(dtype.np_dtype)
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


def _to_int_infer(op: str, source_ok):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        check_scale(op, attrs)
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
            # NaN quantizes to the zero point (real 0), as the hardware's conversion does
            np.rint(np.nan_to_num(xs[0] / np.float32(attrs["scale"]), nan=0.0))
            + attrs["zero_point"],
            DType.parse(attrs["dtype"]),
        ),
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="round(x / scale) + zero_point, saturated (NaN -> zero_point)",
        egg_dtype="{dtype}",
    )
)


def _dequantize_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_scale("dequantize", attrs)
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


def _requantize_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_rounding("requantize", attrs)
    return _to_int_infer("requantize", _require_i32("requantize"))(ts, attrs)


def _requantize_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    from eqsat.quant.fixedpoint import multiplier_shift, requantize_fixed

    dtype = DType.parse(attrs["dtype"])
    info = np.iinfo(dtype.np_dtype)
    mult, shift = multiplier_shift(attrs["scale"])
    q = requantize_fixed(
        xs[0], mult, shift, attrs["zero_point"], attrs["rounding"], int(info.min), int(info.max)
    )
    return q.astype(dtype.np_dtype)


register(
    OpDef(
        name="requantize",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=(*_SCALE_ATTRS, AttrSpec("dtype", AttrType.DTYPE, "i8"), ROUNDING_ATTR),
        infer=_requantize_infer,
        ref=_requantize_ref,
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="i32 accumulator to a narrow integer: round(x * m / 2**s) + zero_point, saturated, "
        "m / 2**s the 31-bit fixed-point form of scale",
        egg_dtype="{dtype}",
    )
)

# ------------------------------------------------------- post-training quantization


def _observe_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    require_float("observe", ts[0])
    check_scale("observe", attrs)
    check_rounding("observe", attrs)
    if not -128 <= attrs["zero_point"] <= 127:
        raise OpTypeError(f"'observe': zero_point {attrs['zero_point']} is outside the range of i8")
    return ts[0]


register(
    OpDef(
        name="observe",
        kind=OpKind.QUANT,
        operands=("x",),
        attrs=(
            AttrSpec("scale", AttrType.FLOAT, doc="calibrated int8 scale of x"),
            AttrSpec("zero_point", AttrType.INT, 0, "calibrated int8 zero point of x"),
            ROUNDING_ATTR,
        ),
        infer=_observe_infer,
        ref=lambda xs, attrs: xs[0],
        doc="x itself, annotated with the int8 quantization calibrated for it (scale, "
        "zero_point) and the rounding of the hardware that requantizes into it",
    )
)


def _channel_vector_ok(op: str, x: TensorType, s: TensorType) -> None:
    """s holds one value per channel (the last axis of x): shape [N] or [1, ..., 1, N]
    (or a single value for all channels)."""
    n = x.shape[-1]
    if s.rank < 1 or s.rank > x.rank or any(d != 1 for d in s.shape[:-1]):
        raise OpTypeError(f"'{op}': channel scales {s} must have shape [N] or [1, ..., N]")
    if s.shape[-1] not in (1, n):
        raise OpTypeError(f"'{op}': {s} has {s.shape[-1]} channel scales, {x} has {n} channels")


def _requantize_pc_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, s = ts
    if x.dtype is not DType.I32 or x.rank < 1:
        raise OpTypeError(f"'requantize_pc' needs an i32 operand of rank >= 1, got {x}")
    require_float("requantize_pc", s)
    _channel_vector_ok("requantize_pc", x, s)
    check_scale("requantize_pc", attrs)
    check_rounding("requantize_pc", attrs)
    if not -128 <= attrs["zero_point"] <= 127:
        raise OpTypeError(
            f"'requantize_pc': zero_point {attrs['zero_point']} is outside the range of i8"
        )
    return x.with_dtype(DType.I8)


def requantize_pc_tables(s: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multipliers, shifts) of requantize_pc: the fixed-point form of
    s[n] / scale, s in f32 (as the tensor holds it) divided in f64."""
    from eqsat.quant.fixedpoint import channel_multipliers

    flat = np.asarray(s, dtype=np.float32).reshape(-1).astype(np.float64)
    return channel_multipliers(flat / float(scale))


def _requantize_pc_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    from eqsat.quant.fixedpoint import requantize_fixed

    mult, shift = requantize_pc_tables(xs[1], attrs["scale"])
    zp = int(attrs["zero_point"])
    lo = max(-128, zp) if attrs["relu"] else -128
    return requantize_fixed(xs[0], mult, shift, zp, attrs["rounding"], lo, 127).astype(np.int8)


register(
    OpDef(
        name="requantize_pc",
        kind=OpKind.QUANT,
        operands=("x", "s"),
        attrs=(
            AttrSpec("scale", AttrType.FLOAT, doc="real value of one step of the i8 result"),
            AttrSpec("zero_point", AttrType.INT, 0, "i8 value of real 0"),
            AttrSpec("relu", AttrType.BOOL, False, "clamp below at zero_point (relu)"),
            ROUNDING_ATTR,
        ),
        infer=_requantize_pc_infer,
        ref=_requantize_pc_ref,
        flops=lambda ts, out, attrs: 3 * out.numel,
        doc="per-channel requantization of an i32 accumulator x whose channel n (last axis) "
        "has scale s[n]: round(x * m[n] / 2**k[n]) + zero_point, saturated to i8, "
        "m[n] / 2**k[n] the fixed-point form of s[n] / scale",
        egg_dtype="i8",
    )
)

# Fused int8 kernels: an integer matrix product with its epilogue (bias in i32, then
# back to f32 by the per-channel scales s, or on to i8 for the next kernel).
from eqsat.ops.elementwise import GELU_APPROXIMATE  # noqa: E402
from eqsat.ops.fused import AttrRef, call  # noqa: E402

_A_ZERO = AttrSpec("a_zero", AttrType.INT, 0, "zero point subtracted from x")
_QACC = call("add", call("qmatmul", "x", "w", a_zero=AttrRef("a_zero")), "b")
_DEQ = call("mul", call("cast", _QACC, dtype="f32"), "s")

fused("qmatmul_bias_dequant", ("x", "w", "b", "s"), _DEQ, (_A_ZERO,), "f32")
fused(
    "qmatmul_bias_dequant_add", ("x", "w", "b", "s", "r"), call("add", _DEQ, "r"), (_A_ZERO,), "f32"
)
fused(
    "qmatmul_bias_gelu_quant",
    ("x", "w", "b", "s"),
    call(
        "quantize",
        call("gelu", _DEQ, approximate=AttrRef("approximate")),
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        dtype="i8",
    ),
    (
        _A_ZERO,
        AttrSpec("scale", AttrType.FLOAT, doc="scale of the i8 result"),
        AttrSpec("zero_point", AttrType.INT, 0, "zero point of the i8 result"),
        GELU_APPROXIMATE,
    ),
    "i8",
)
fused(
    "qmatmul_bias_requant",
    ("x", "w", "b", "s"),
    call(
        "requantize_pc",
        _QACC,
        "s",
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        relu=AttrRef("relu"),
        rounding=AttrRef("rounding"),
    ),
    (
        _A_ZERO,
        AttrSpec("scale", AttrType.FLOAT, doc="scale of the i8 result"),
        AttrSpec("zero_point", AttrType.INT, 0, "zero point of the i8 result"),
        AttrSpec("relu", AttrType.BOOL, False, "clamp below at zero_point (relu)"),
        ROUNDING_ATTR,
    ),
    "i8",
)

# Weight-only quantization (w4a16 / w8a16 / fp8) and the int8 convolution kernels
# (qconv2d epilogues, requantize_ch): their own modules, registered with these.
from eqsat.ops import quant_conv, weight_only  # noqa: E402, F401
