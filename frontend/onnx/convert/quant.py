"""Quantized ONNX: QuantizeLinear/DequantizeLinear (per tensor and per axis),
QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger, DynamicQuantizeLinear, and
the com.microsoft QOperator ops ONNX Runtime's quantizer writes (QGemm, QLinearAdd,
QLinearMul, QLinearSoftmax, QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu,
QLinearConcat).

Each becomes a composition of registry ops with ONNX Runtime's arithmetic:
- Rounding is to nearest, ties to even, then saturation (registry `quantize`/`cast`).
- uint8: eqsat has no u8 dtype; an ONNX uint8 tensor is an i32 tensor holding its
  values (frontend/onnx/dtypes.py). Integer kernels take i8: a uint8 value u is
  used as u - 128 (exact) with its zero point moved by -128, so that (u - z) ==
  ((u - 128) - (z - 128)). A QuantizeLinear to uint8 computes that i8 form directly
  and keeps it in the result's tags (`TAG_I8`); the i32 form (i8 + 128) is only used
  by consumers that are not quantization ops (it is dead code otherwise).
- QLinearMatMul/QLinearConv/QGemm: the i32 accumulator (plus the i32 bias) times the
  f32 multiplier a_scale * b_scale / y_scale (computed in f32 as ORT does), rounded,
  plus the output zero point, saturated - ORT's MlasRequantizeOutput. This is not
  eqsat's fixed-point `requantize` (m / 2**s differs at ties), so it is written as
  cast to f32, mul, quantize(scale=1); rules may fuse it.
- Zero points known at import go into the kernels' a_zero/b_zero attributes (or
  into the weights); run-time zero points (DynamicQuantizeLinear) are subtracted
  with the exact integer identity (a - z) @ b = a @ b - z * colsum(b).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from frontend.onnx.convert.elementwise import leaky_relu_of
from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.spatial import spatial_pads
from frontend.onnx.convert.tensor import reshape, swap_last_axes
from frontend.onnx.symdim import SymDim
from frontend.onnx.values import Known, Tensor, Value

MS = "com.microsoft"
TAG_I8 = "quant_i8"  # the i8 form (value - 128) of a uint8 tensor
RANGES = {
    TensorProto.INT8: (-128, 127),
    TensorProto.UINT8: (0, 255),
    TensorProto.INT16: (-32768, 32767),  # held in i32, as other wide integers
    TensorProto.UINT16: (0, 65535),
}
EIGHT_BIT = (TensorProto.INT8, TensorProto.UINT8)
OFFSET = {TensorProto.INT8: 0, TensorProto.UINT8: 128}  # onnx value = i8 form + offset
F32 = TensorProto.FLOAT
I32 = TensorProto.INT32


# ------------------------------------------------------------ helpers


def _i32(value) -> Known:
    return Known(np.asarray(value, dtype=np.int32), I32)


def _f32(value) -> Known:
    return Known(np.asarray(value, dtype=np.float32), F32)


def _uniform(v: Value | None, default=0):
    """The single value of a known tensor whose elements are all equal, else None
    (a run-time tensor or differing elements)."""
    if v is None:
        return default
    if not isinstance(v, Known):
        return None
    flat = np.asarray(v.value).reshape(-1)
    if flat.size == 0 or not np.all(flat == flat[0]):
        return None
    return flat[0].item()


def _qtype(cx: Cx, zero: Value | None, default: int = TensorProto.UINT8) -> int:
    """The ONNX element type of quantized values: the zero point's, else
    `output_dtype` (opset 21), else uint8."""
    qt = zero.onnx_type if zero is not None else int(cx.attr("output_dtype", 0) or default)
    require(
        qt in RANGES,
        "only int8, uint8, int16 and uint16 quantization is supported (got element type "
        f"{TensorProto.DataType.Name(qt).lower()})",
    )
    return qt


def as_i8(cx: Cx, v: Value) -> tuple[Value, int]:
    """(i8 form, offset) of an int8 or uint8 value: value == i8 form + offset."""
    qt = v.onnx_type
    require(qt in EIGHT_BIT, f"expected an int8 or uint8 tensor, got {cx.dtype(v)}")
    off = OFFSET[qt]
    if isinstance(v, Known):
        data = (np.asarray(v.value).astype(np.int32) - off).astype(np.int8)
        return Known(data, TensorProto.INT8, v.weight, v.name), off
    if off == 0:
        return v, 0
    if TAG_I8 not in v.tags:
        shifted = cx.emit("sub", [v, _i32(off)])
        v.tags[TAG_I8] = cx.emit("cast", [shifted], {"dtype": "i8"}, TensorProto.INT8)
    return v.tags[TAG_I8], off


def _from_i8(cx: Cx, q8: Value, qt: int) -> Value:
    """The ONNX value of quantized type `qt` from its i8 form."""
    if qt == TensorProto.INT8:
        return q8
    wide = cx.emit("cast", [q8], {"dtype": "i32"}, I32)
    out = cx.emit("add", [wide, _i32(OFFSET[qt])], onnx_type=qt)
    out.tags[TAG_I8] = q8
    return out


def _axis(cx: Cx, x: Value, default: int = 1) -> int:
    axis = int(cx.attr("axis", default))
    rank = cx.rank(x)
    return axis % rank if -rank <= axis < rank else axis  # checked where it is used


def _along(cx: Cx, v: Value, axis: int, rank: int) -> Value:
    """A 1-D per-axis vector shaped to broadcast along `axis` of a rank-`rank` tensor."""
    if cx.rank(v) == 0 or cx.rank(v) == rank:  # one value, or one per element (blocked)
        return v
    require(cx.rank(v) == 1, "per-axis scales and zero points must be 1-D")
    require(0 <= axis < rank, f"axis {axis} is out of range for rank {rank}")
    if isinstance(v, Known):
        shape = [1] * rank
        shape[axis] = v.value.shape[0]
        return Known(np.asarray(v.value).reshape(shape), v.onnx_type, v.weight)
    n = cx.shape(v)[0]
    return reshape(cx, v, [n if a == axis else SymDim(1) for a in range(rank)])


def _as_i32(cx: Cx, v: Value) -> Value:
    if isinstance(v, Known):
        return _i32(np.asarray(v.value).astype(np.int32))
    return v if cx.dtype(v).value == "i32" else cx.emit("cast", [v], {"dtype": "i32"}, I32)


def _blocks(cx: Cx, x: Value, v: Value | None, axis: int) -> Value | None:
    """A blocked scale or zero point (opset 21 `block_size`) repeated to x's shape."""
    size = int(cx.attr("block_size", 0))
    if size == 0 or v is None:
        return v
    known = cx.known(cx.inputs.index(v), "a blocked scale or zero point")
    n = cx.shape(x)[axis]
    require(n is not None and n.is_int, "blocked quantization along a symbolic axis")
    full = np.repeat(np.asarray(known.value), size, axis=axis).take(range(n.coef), axis=axis)
    return Known(full, known.onnx_type, known.weight)


# ------------------------------------------------------------ quantize / dequantize


def _weight_param(cx: Cx, w: Known) -> Tensor:
    """An integer weight as a `param` of the model (the writer makes integer constants
    literals, which constant folding would dequantize into f32 weights): int8 kernels
    read the int8 values."""
    key = (id(w), True)
    if key not in cx.w._constants:
        cx.w._constants[key] = (w, cx.w._constant(w, w.name or cx.hint, as_param=True))
    return cx.w._constants[key][1]


def quantize_values(
    cx: Cx, x: Value, scale: Value, zero: Value | None, qt: int, axis: int = 1
) -> Value:
    """ONNX QuantizeLinear: saturate(round(x / scale) + zero) of type qt."""
    lo, hi = RANGES[qt]
    off = OFFSET.get(qt, 0)
    rank = cx.rank(x)
    s, z = _uniform(scale, None), _uniform(zero)
    if qt not in EIGHT_BIT:
        z = None  # wide types: rounded and saturated in i32 below
    if s is not None and z is not None and s > 0:  # per tensor
        q8 = cx.emit(
            "quantize", [x], {"scale": float(s), "zero_point": int(z) - off, "dtype": "i8"}
        )
        return _from_i8(cx, q8, qt)
    scaled = x if s == 1.0 else cx.emit("div", [x, _along(cx, scale, axis, rank)])
    if z is not None:  # per-axis scale, one zero point
        q8 = cx.emit(
            "quantize", [scaled], {"scale": 1.0, "zero_point": int(z) - off, "dtype": "i8"}
        )
        return _from_i8(cx, q8, qt)
    # Zero points per axis or at run time: round in i32 (beyond +-2**24 the result
    # saturates whatever the zero point), add, saturate.
    bounded = cx.emit("clip", [scaled], {"min": -(2.0**24), "max": 2.0**24})
    q = cx.emit("cast", [bounded], {"dtype": "i32"}, I32)
    if zero is not None:
        q = cx.emit("add", [q, _along(cx, _as_i32(cx, zero), axis, rank)], onnx_type=I32)
    q = cx.emit("clip", [q], {"min": float(lo), "max": float(hi)}, onnx_type=qt)
    if qt == TensorProto.INT8:
        return cx.emit("cast", [q], {"dtype": "i8"}, TensorProto.INT8)
    return q


def dequantize_values(cx: Cx, x: Value, scale: Value, zero: Value | None, axis: int = 1) -> Value:
    """ONNX DequantizeLinear: (x - zero) * scale in f32."""
    rank = cx.rank(x)
    if x.onnx_type in EIGHT_BIT:
        x, off = as_i8(cx, x)
    else:
        require(
            x.onnx_type in RANGES or x.onnx_type == I32,
            "DequantizeLinear of int8, uint8, int16, uint16 or int32 values only",
        )
        off = 0
    s, z = _uniform(scale, None), _uniform(zero)
    if isinstance(x, Known) and x.weight:
        x = _weight_param(cx, x)
    if s is not None and z is not None and s > 0:
        out = cx.emit(
            "dequantize", [x], {"scale": float(s), "zero_point": int(z) - off}, onnx_type=F32
        )
        if off or x.onnx_type == TensorProto.INT8:
            out.tags[TAG_DQ] = Dequantized(x, int(z) - off, np.float32([s]), axis)
        elif x.onnx_type == I32 and z == 0:
            out.tags[TAG_BIAS] = Dequantized(x, 0, np.float32([s]), axis)
        return out
    real = cx.emit("cast", [x], {"dtype": "f32"}, F32)
    if z is None or z != off:  # subtract the zero point of the i8 form
        if zero is None or isinstance(zero, Known):
            given = 0 if zero is None else np.asarray(zero.value)
            zf = _f32(np.asarray(given, dtype=np.float32) - off)
        else:
            zf = cx.emit("sub", [cx.emit("cast", [zero], {"dtype": "f32"}, F32), _f32(off)])
        real = cx.emit("sub", [real, _along(cx, zf, axis, rank)])
    out = cx.emit("mul", [real, _along(cx, scale, axis, rank)])
    eight_bit = off or x.onnx_type == TensorProto.INT8
    if z is not None and isinstance(scale, Known) and cx.rank(scale) == 1:
        scales = np.asarray(scale.value, dtype=np.float32)
        if eight_bit and np.all(scales > 0):
            out.tags[TAG_DQ] = Dequantized(x, int(z) - off, scales, axis)
        elif x.onnx_type == I32 and z == 0 and np.all(scales > 0):
            out.tags[TAG_BIAS] = Dequantized(x, 0, scales, axis)
    return out


# --------------------------------------------- QDQ products as integer kernels

TAG_DQ = "dequantized"  # the int8 form of a DequantizeLinear's result (Dequantized)
TAG_BIAS = "dequantized_i32"  # the i32 values of a DequantizeLinear of int32 (a bias)


@dataclass(frozen=True)
class Dequantized:
    """What a DequantizeLinear of int8 values computed: (q8 - zero) * scale, q8 in
    the i8 form, one zero point, one scale or one per index of `axis`."""

    q8: Value
    zero: int
    scale: np.ndarray  # f32, shape [1] or [n]
    axis: int


def _dequantized(v: Value) -> Dequantized | None:
    return v.tags.get(TAG_DQ) if isinstance(v, Tensor) else None


def channel_scales(cx: Cx, scale: Value, axis: int, rank: int) -> Value:
    """Per-channel scales shaped as the int8 kernels' epilogues take them: [1, N] for
    the last axis of a product (whatever its batch axes), [C, 1, 1] for the channels
    of an NCHW convolution; otherwise broadcast along `axis` of a rank-`rank` tensor.
    Each shape broadcasts to the same values, so this only decides which rules match
    (`qmatmul-dequant`, `onnx-qconv-bias-dequant`)."""
    if isinstance(scale, Known) and cx.rank(scale) == 1 and rank >= 2:
        n = scale.value.shape[0]
        if axis == rank - 1:
            return Known(np.asarray(scale.value).reshape(1, n), scale.onnx_type, scale.weight)
        if axis == 1 and rank == 4:
            return Known(np.asarray(scale.value).reshape(n, 1, 1), scale.onnx_type, scale.weight)
    return _along(cx, scale, axis, rank)


def _rescaled(cx: Cx, acc: Value, scale: np.ndarray, axis: int) -> Value:
    """f32(acc) * scale (one value, or one per index of `axis` of acc). One value is
    repeated per channel when the channel count is known, so that per-tensor and
    per-channel weights fuse alike (the rules take [1, N] and [C, 1, 1] scales)."""
    real = cx.emit("cast", [acc], {"dtype": "f32"}, F32)
    channels = cx.shape(acc)[axis]
    if scale.size == 1 and channels.is_int and cx.rank(acc) >= 2:
        scale = np.full(channels.coef, scale.reshape(-1)[0], dtype=np.float32)
    if scale.size == 1:
        return cx.emit("mul", [real, _f32(scale.reshape(()))])
    return cx.emit("mul", [real, channel_scales(cx, _f32(scale), axis, cx.rank(acc))])


def qdq_matmul(cx: Cx, a: Value, b: Value, transpose_b: bool = False) -> Value | None:
    """MatMul (Gemm: b transposed) of two DequantizeLinear results as ONNX Runtime runs
    QDQ graphs: the integer product of the int8 values (i32 accumulator, exact), then
    f32(acc) * (a_scale * b_scale), the scales multiplied in f32 - so that the program
    is integer where the model is, and simulates exactly as `eqsat run` computes it.
    None when the operands do not fit (per-row scales of a, a zero point per column of
    b, 1-D operands)."""
    da, db = _dequantized(a), _dequantized(b)
    if da is None or db is None or da.scale.size != 1 or cx.rank(a) < 2 or cx.rank(b) < 2:
        return None
    rank_b = cx.rank(b)
    out_axis = rank_b - 2 if transpose_b else rank_b - 1  # b's axis of the output columns
    if db.scale.size > 1 and (db.axis % rank_b != out_axis or db.zero != 0):
        return None
    b8 = swap_last_axes(cx, db.q8) if transpose_b else db.q8
    acc = cx.emit("qmatmul", [da.q8, b8], {"a_zero": da.zero, "b_zero": db.zero}, onnx_type=I32)
    return _rescaled(cx, acc, np.float32(da.scale[0]) * db.scale, cx.rank(acc) - 1)


def _integer_bias(bias: Value | None, scale: np.ndarray, channels: int) -> Value | None:
    """The i32 values of a DequantizeLinear'd int32 bias whose scale is exactly the
    product's (x_scale * w_scale[o] in f32, as ONNX Runtime's quantizer writes it), else
    None. Such a bias joins the i32 accumulator before the one f32 rescale, as ORT's
    QLinearConv (the kernel its QDQ fusion runs) adds it."""
    db = bias.tags.get(TAG_BIAS) if isinstance(bias, Tensor) else None
    if db is None or db.zero != 0 or db.scale.size not in (1, channels):
        return None
    if not np.array_equal(
        np.broadcast_to(db.scale, (channels,)), np.broadcast_to(scale, (channels,))
    ):
        return None
    return db.q8


def qdq_conv(
    cx: Cx, x: Value, w: Value, attrs: dict, bias: Value | None = None
) -> tuple[Value, bool] | None:
    """Conv (symmetric padding; grouped or depthwise too) of two DequantizeLinear results, as
    qdq_matmul: qconv2d of the int8 values, then f32(acc) * (x_scale * w_scale[o]).
    With a DequantizeLinear'd int32 `bias` at exactly that scale, the bias is added to
    the i32 accumulator first (ORT's QLinearConv arithmetic): f32(acc + b) * scale.
    Returns (result, whether the bias is in it), or None."""
    dx, dw = _dequantized(x), _dequantized(w)
    if dx is None or dw is None or dx.scale.size != 1 or dw.zero != 0:
        return None
    if dw.scale.size > 1 and dw.axis % 4 != 0:
        return None
    conv_attrs = {"a_zero": dx.zero, "stride": attrs["stride"], "padding": attrs["padding"]}
    if attrs.get("groups", 1) != 1:
        conv_attrs["groups"] = attrs["groups"]
    acc = cx.emit("qconv2d", [dx.q8, dw.q8], conv_attrs, onnx_type=I32)
    scale = np.float32(dx.scale[0]) * dw.scale
    channels = cx.shape(w)[0]
    b32 = _integer_bias(bias, scale, channels.coef) if channels.is_int else None
    if b32 is not None:
        b = reshape(cx, b32, [channels, SymDim(1), SymDim(1)])
        acc = cx.emit("add", [acc, b], onnx_type=I32)
    return _rescaled(cx, acc, scale, 1), b32 is not None


@op("QuantizeLinear", since=10)
def quantize_linear(cx: Cx) -> list[Value]:
    x = cx.input(0)
    axis = _axis(cx, x)
    qt = _qtype(cx, cx.opt(2))
    scale, zero = _blocks(cx, x, cx.input(1), axis), _blocks(cx, x, cx.opt(2), axis)
    return [quantize_values(cx, x, scale, zero, qt, axis)]


@op("DequantizeLinear", since=10)
def dequantize_linear(cx: Cx) -> list[Value]:
    x = cx.input(0)
    axis = _axis(cx, x)
    scale, zero = _blocks(cx, x, cx.input(1), axis), _blocks(cx, x, cx.opt(2), axis)
    return [dequantize_values(cx, x, scale, zero, axis)]


@op("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(cx: Cx) -> list[Value]:
    """uint8 with scale = (max(x, 0) - min(x, 0)) / 255 and zero point
    round(saturate(-min / scale)), as the ONNX spec and ORT compute them."""
    x = cx.input(0)
    all_axes = list(range(cx.rank(x)))
    hi = cx.emit("reduce_max", [x], {"axes": all_axes})
    hi = cx.emit("maximum", [hi, _f32(0.0)])
    # -min(min(x), 0) = max(max(-x), 0): with it, (hi - lo) is (hi + a) and -lo / scale
    # is a / scale, the same f32 values (negation is exact) in two scalar kernels fewer
    a = cx.emit("reduce_max", [cx.emit("neg", [x])], {"axes": all_axes})
    a = cx.emit("maximum", [a, _f32(0.0)])
    scale = cx.emit("div", [cx.emit("add", [hi, a]), _f32(255.0)])
    zero_f = cx.emit("div", [a, scale])
    zero_f = cx.emit("clip", [zero_f], {"min": 0.0, "max": 255.0})
    zero = cx.emit("cast", [zero_f], {"dtype": "i32"}, TensorProto.UINT8)
    # The i8 form (y - 128) directly: saturate(round(x / scale) + zero) - 128 ==
    # saturate_i8(round(x / scale) + (zero - 128)), cast rounding half to even and
    # saturating (i32, then i8), so the integer kernels read it without a conversion.
    rounded = cx.emit("cast", [cx.emit("div", [x, scale])], {"dtype": "i32"}, I32)
    zero8 = cx.emit("sub", [zero, _i32(OFFSET[TensorProto.UINT8])], onnx_type=I32)
    q8 = cx.emit(
        "cast", [cx.emit("add", [rounded, zero8], onnx_type=I32)], {"dtype": "i8"}, TensorProto.INT8
    )
    return [_from_i8(cx, q8, TensorProto.UINT8), scale, zero]


# ------------------------------------------------------------ integer products


def _zero_parts(v: Value | None, off: int, what: str) -> tuple[int, Value | None]:
    """(static zero point in the i8 form, run-time zero point or None)."""
    z = _uniform(v)
    if z is not None:
        return int(z) - off, None
    one = len(v.shape) == 0 or (
        len(v.shape) == 1 and SymDim.of(v.shape[0]).is_int and SymDim.of(v.shape[0]).coef == 1
    )
    require(
        isinstance(v, Tensor) and one,
        f"{what}: per-row or per-column zero points are only supported on constant weights",
    )
    return -off, v


def _fold_zero(w: Known, zero: Value | None, axis: int) -> Known | None:
    """A constant int8/uint8 weight minus its (per-axis) zero point, as int8 if it fits."""
    if not isinstance(zero, Known):
        return None
    z = np.asarray(zero.value).astype(np.int32)
    if z.ndim == 1:
        shape = [1] * w.value.ndim
        shape[axis] = z.shape[0]
        z = z.reshape(shape)
    diff = np.asarray(w.value).astype(np.int32) - z
    if diff.min(initial=0) < -128 or diff.max(initial=0) > 127:
        return None
    return Known(diff.astype(np.int8), TensorProto.INT8, True, w.name)


def integer_matmul(cx: Cx, a: Value, b: Value, a_zero: Value | None, b_zero: Value | None):
    """(a - a_zero) @ (b - b_zero) in i32 (MatMulInteger), a and b int8 or uint8."""
    require(cx.rank(a) >= 2 and cx.rank(b) >= 2, "integer matmul of 1-D operands")
    folded = _fold_zero(b, b_zero, cx.rank(b) - 1) if isinstance(b, Known) else None
    if folded is not None:
        b8, b_static, b_dyn = folded, 0, None
    else:
        b8, b_off = as_i8(cx, b)
        b_static, b_dyn = _zero_parts(b_zero, b_off, "MatMulInteger")
    a8, a_off = as_i8(cx, a)
    a_static, a_dyn = _zero_parts(a_zero, a_off, "MatMulInteger")
    acc = cx.emit("qmatmul", [a8, b8], {"a_zero": a_static, "b_zero": b_static}, onnx_type=I32)
    # Run-time zero points: (A - za)(B - zb) = AB - za*colsum(B) - zb*rowsum(A) + K za zb
    # with A = a8 - a_static and B = b8 - b_static (exact in i32, wrapping as ORT's).
    if a_dyn is None and b_dyn is None:
        return acc
    a_real = cx.emit("sub", [cx.emit("cast", [a8], {"dtype": "i32"}, I32), _i32(a_static)])
    b_real = cx.emit("sub", [cx.emit("cast", [b8], {"dtype": "i32"}, I32), _i32(b_static)])
    if a_dyn is not None and b_dyn is None and cx.rank(b) == 2:
        # acc + (-colsum(B)) * za: an i32 bias of the product ([N], the negated column
        # sums of a constant B prepared at load time), which rules/quant.rules
        # (qmatmul-bias-dequant) puts in the int8 kernel's epilogue
        za = _scalar_i32(cx, a_dyn)
        colsum = cx.emit("reduce_sum", [b_real], {"axes": [0], "keepdims": False})
        correction = cx.emit("mul", [cx.emit("neg", [colsum]), za])
        return cx.emit("add", [acc, correction], onnx_type=I32)
    if a_dyn is not None:
        za = _scalar_i32(cx, a_dyn)
        colsum = cx.emit("reduce_sum", [b_real], {"axes": [-2], "keepdims": True})
        acc = cx.emit("sub", [acc, cx.emit("mul", [colsum, za])])
    if b_dyn is not None:
        zb = _scalar_i32(cx, b_dyn)
        rowsum = cx.emit("reduce_sum", [a_real], {"axes": [-1], "keepdims": True})
        acc = cx.emit("sub", [acc, cx.emit("mul", [rowsum, zb])])
    if a_dyn is not None and b_dyn is not None:
        k = cx.shape(b)[-2].coef
        both = cx.emit("mul", [cx.emit("mul", [za, zb]), _i32(k)])
        acc = cx.emit("add", [acc, both])
    return acc


def _scalar_i32(cx: Cx, v: Value) -> Value:
    v = _as_i32(cx, v)
    return reshape(cx, v, []) if cx.rank(v) else v


def integer_conv(cx: Cx, x: Value, w: Value, x_zero: Value | None, w_zero: Value | None) -> Value:
    """conv(x - x_zero, w - w_zero) in i32 (ConvInteger): NCHW, dilation 1, groups as
    qconv2d's (depthwise: groups = C), padding of x with its zero point (padded taps
    add 0). The weight is a constant."""
    require(cx.rank(x) == 4, "integer convolutions are 2-D (NCHW) only")
    group = int(cx.attr("group", 1))
    kernel = list(w.value.shape[2:])
    strides = list(cx.attr("strides", [1, 1]))
    dilations = list(cx.attr("dilations", [1, 1]))
    require(all(d == 1 for d in dilations), "dilations other than 1 are not supported")
    pads = spatial_pads(cx, x, kernel, strides, dilations)
    require(pads[:2] == pads[2:], "asymmetric padding of an integer convolution")
    wz = np.zeros(1, np.int32) if w_zero is None else np.asarray(w_zero.value).astype(np.int32)
    w_real = np.asarray(w.value).astype(np.int32) - wz.reshape(-1, 1, 1, 1)  # w - w_zero
    x8, x_off = as_i8(cx, x)
    x_static, x_dyn = _zero_parts(x_zero, x_off, "ConvInteger")
    attrs = {"a_zero": x_static, "stride": strides, "padding": pads[:2]}
    if group != 1:
        attrs["groups"] = group
    fits = w_real.min() >= -128 and w_real.max() <= 127
    require(fits or group == 1, "grouped integer convolution whose w - w_zero leaves int8")
    if fits:
        acc = cx.emit("qconv2d", [x8, _i8_weight(w_real, w)], attrs, onnx_type=I32)
    else:
        # w - w_zero does not fit int8: conv(x', w8) + (offset - w_zero) * conv(x', 1),
        # w8 = w - offset its int8 form and conv(x', 1) the window sums of x' = x - x_zero
        w8, w_off = as_i8(cx, w)
        acc = cx.emit("qconv2d", [x8, w8], attrs, onnx_type=I32)
        ones = Known(np.ones((1, *w.value.shape[1:]), np.int8), TensorProto.INT8)
        sums = cx.emit("qconv2d", [x8, ones], attrs, onnx_type=I32)
        rest = _i32(np.broadcast_to(w_off - wz, (w_real.shape[0],)).reshape(1, -1, 1, 1))
        acc = cx.emit("add", [acc, cx.emit("mul", [sums, rest])])
    if x_dyn is None:
        return acc
    # acc = conv(x) (x padded by 0); conv(x - z) with x padded by z is acc minus z times
    # the sums of w over the taps inside x (a constant, from the shapes).
    h, wd = (d.coef for d in cx.shape(x)[2:])
    ones = np.ones((1, 1, h, wd), dtype=np.float64)
    wsum = _window_sums(ones, w_real.astype(np.float64), strides, pads[:2])
    z = _scalar_i32(cx, x_dyn)
    return cx.emit("sub", [acc, cx.emit("mul", [_i32(wsum), z])])


def _i8_weight(values: np.ndarray, like: Known) -> Known:
    return Known(values.astype(np.int8), TensorProto.INT8, True, like.name)


def _window_sums(ones: np.ndarray, w: np.ndarray, strides, padding) -> np.ndarray:
    from eqsat.ops.linalg import conv2d_ref

    one_channel = w.sum(axis=1, keepdims=True)  # [O, 1, KH, KW]
    return np.rint(conv2d_ref(ones, one_channel, strides, padding)).astype(np.int32)


@op("MatMulInteger", since=10)
def matmul_integer(cx: Cx) -> list[Value]:
    return [integer_matmul(cx, cx.input(0), cx.input(1), cx.opt(2), cx.opt(3))]


@op("ConvInteger", since=10)
def conv_integer(cx: Cx) -> list[Value]:
    w = cx.known(1, "the weight of an integer convolution")
    w_zero = cx.known_opt(3, "the weight zero point of an integer convolution")
    return [integer_conv(cx, cx.input(0), w, cx.opt(2), w_zero)]


# ------------------------------------------------------------ requantization


def _scales_known(cx: Cx, i: int, scales: tuple[int, ...]) -> Value | None:
    """Input i, which must be known at import when it is one of `scales` (scales, and
    the output's and the weight's zero points: they fold into the kernel)."""
    if i in scales and cx.opt(i) is not None:
        return cx.known(i, "a scale or zero point of a QLinear op")
    return cx.opt(i)


def _multiplier(a_scale: Value, b_scale: Value, y_scale: Value | None, alpha: float = 1.0):
    """a_scale * b_scale / y_scale in f32 (ORT's order), a Known scalar or vector."""
    for v in (a_scale, b_scale, y_scale):
        require(v is None or isinstance(v, Known), "QLinear scales must be constants")
    m = (
        np.float32(alpha)
        * np.asarray(a_scale.value, np.float32)
        * np.asarray(b_scale.value, np.float32)
    )
    if y_scale is not None:
        m = m / np.asarray(y_scale.value, np.float32)
    return np.asarray(m, dtype=np.float32)


def requantize_values(
    cx: Cx, acc: Value, multiplier: np.ndarray, zero: Value | None, qt: int, axis: int
) -> Value:
    """saturate(round(f32(acc) * multiplier) + zero): ORT's MlasRequantizeOutput.
    `multiplier` is one value or one per channel along `axis`."""
    scaled = _rescaled(cx, acc, np.asarray(multiplier, np.float32).reshape(-1), axis)
    return quantize_values(cx, scaled, _f32(1.0), zero, qt)


@op("QLinearMatMul", since=10)
def qlinear_matmul(cx: Cx) -> list[Value]:
    a, a_s, a_z, b, b_s, b_z, y_s, y_z = (_scales_known(cx, i, (1, 4, 6)) for i in range(8))
    require(_uniform(a_s, None) is not None, "QLinearMatMul with per-row a_scale")
    acc = integer_matmul(cx, a, b, a_z, b_z)
    m = _multiplier(a_s, b_s, y_s)
    return [requantize_values(cx, acc, m, y_z, _qtype(cx, y_z), cx.rank(acc) - 1)]


@op("QLinearConv", since=10)
def qlinear_conv(cx: Cx) -> list[Value]:
    x, x_s, x_z, w, w_s, w_z, y_s, y_z, bias = (
        _scales_known(cx, i, (1, 3, 4, 5, 6, 7)) for i in range(9)
    )
    acc = integer_conv(cx, x, w, x_z, w_z)
    if bias is not None:
        channels = cx.shape(acc)[1]
        acc = cx.emit(
            "add", [acc, reshape(cx, _as_i32(cx, bias), [channels, SymDim(1), SymDim(1)])]
        )
    m = _multiplier(x_s, w_s, y_s)
    return [requantize_values(cx, acc, m, y_z, _qtype(cx, y_z), 1)]


@op("QGemm", domain=MS)
def qgemm(cx: Cx) -> list[Value]:
    """alpha * (A - za)(B - zb) + C (C an i32 bias at scale a_s * b_s), to uint8/int8
    when y_scale is given, else f32."""
    a, a_s, a_z, b, b_s, b_z, c, y_s, y_z = (cx.opt(i) for i in range(9))
    if cx.attr("transA", 0):
        a = swap_last_axes(cx, a)
    if cx.attr("transB", 0):  # b [N, K]: per-row zero points of b become per-column
        b = swap_last_axes(cx, b)
    acc = integer_matmul(cx, a, b, a_z, b_z)
    if c is not None:
        acc = cx.emit("add", [acc, _as_i32(cx, c)])
    alpha = float(cx.attr("alpha", 1.0))
    m = _multiplier(a_s, b_s, y_s, alpha)
    if y_s is None:
        real = cx.emit("cast", [acc], {"dtype": "f32"}, F32)
        return [cx.emit("mul", [real, _f32(m.reshape(-1) if m.ndim else m)])]
    return [requantize_values(cx, acc, m, y_z, _qtype(cx, y_z), 1)]


def _dq(cx: Cx, x: Value, s: Value, z: Value | None) -> Value:
    return dequantize_values(cx, x, s, z)


def _qlinear_params(cx: Cx) -> tuple[float, int, float, int, float, int, int]:
    """(a_scale, a_zero, b_scale, b_zero, c_scale, c_zero, quantized type) of a
    QLinearAdd/QLinearMul: one known value each (ORT's kernels take scalars)."""
    found = []
    for i in (1, 2, 4, 5, 6, 7):
        v = cx.opt(i)
        value = 0 if v is None else _uniform(cx.known(i, "a scale or zero point of a QLinear op"))
        require(value is not None, f"{cx.op_type}: per-axis scales and zero points")
        found.append(value)
    sa, za, sb, zb, sc, zc = found
    return float(sa), int(za), float(sb), int(zb), float(sc), int(zc), _qtype(cx, cx.opt(7))


def _raw_f32(cx: Cx, x: Value) -> Value:
    """An int8/uint8 tensor's values in f32 (exact), from its i8 form."""
    x8, off = as_i8(cx, x)
    real = cx.emit("cast", [x8], {"dtype": "f32"}, F32)
    return cx.emit("add", [real, _f32(off)])  # 0 too: one form for qlinear-add to match


def _span_is_scalar(cx: Cx, v: Value, other: Value) -> bool:
    """Whether ONNX Runtime's broadcast loop hands `v` to the kernel as one scalar per
    call: one element, or a trailing axis of 1 where the other operand's is longer."""
    shape, theirs = cx.shape(v), cx.shape(other)
    if all(d is not None and d.is_int and d.coef == 1 for d in shape):
        return True
    last, other_last = (shape[-1] if shape else None), (theirs[-1] if theirs else None)
    one = last is not None and last.is_int and last.coef == 1
    longer = other_last is not None and not (other_last.is_int and other_last.coef == 1)
    return one and longer


def _requantized_i8(cx: Cx, real: Value, qt: int) -> Value:
    """saturate(round(real)) of type qt (real holds the result's value, zero point
    included), as the ONNX value; computed in the i8 form: round(real) - offset."""
    off = OFFSET[qt]
    q8 = cx.emit("quantize", [real], {"scale": 1.0, "zero_point": -off, "dtype": "i8"})
    return _from_i8(cx, q8, qt)


@op("QLinearAdd", domain=MS)
def qlinear_add(cx: Cx) -> list[Value]:
    """ONNX Runtime's QLinearAdd (MlasQLinearAdd, x86 with FMA) exactly: with
    r_a = a_scale / c_scale and r_b = b_scale / c_scale in f32 and the fixed part
    F = c_zero - fma(r_a, a_zero, r_b * b_zero), c = saturate(round(fma(a, r_a,
    fma(b, r_b, F)))) on the stored values a and b (no zero point subtracted): not
    quantize(dequantize(a) + dequantize(b)), which rounds the other way at some ties.
    A scalar operand (one element per broadcast step) joins the fixed part instead:
    fma(a, r_a, F + b * r_b), the other operand then being `a`."""
    sa, za, sb, zb, sc, zc, qt = _qlinear_params(cx)
    a, b = cx.input(0), cx.input(3)
    require(
        qt in EIGHT_BIT and a.onnx_type == qt and b.onnx_type == qt, "QLinearAdd of int8 or uint8"
    )
    if _span_is_scalar(cx, a, b) and not _span_is_scalar(cx, b, a):
        a, b, sa, za, sb, zb = b, a, sb, zb, sa, za  # ORT passes the vector first
    from hwsim.vecmath import fma

    ra, rb = np.float32(sa) / np.float32(sc), np.float32(sb) / np.float32(sc)
    fixed = np.float32(zc) - fma(ra, np.float32(za), rb * np.float32(zb))
    if _span_is_scalar(cx, b, a):
        part = cx.emit("add", [cx.emit("mul", [_raw_f32(cx, b), _f32(rb)]), _f32(fixed)])
    else:
        part = cx.emit("fma", [_raw_f32(cx, b), _f32(rb), _f32(fixed)])
    real = cx.emit("fma", [_raw_f32(cx, a), _f32(ra), part])
    return [_requantized_i8(cx, real, qt)]


@op("QLinearMul", domain=MS)
def qlinear_mul(cx: Cx) -> list[Value]:
    """ONNX Runtime's QLinearMul exactly: the integer product (a - a_zero)(b - b_zero)
    (exact in i32 and in f32), times m = a_scale * b_scale / c_scale (in f32, that
    order), plus c_zero in f32, rounded and saturated."""
    sa, za, sb, zb, sc, zc, qt = _qlinear_params(cx)
    a, b = cx.input(0), cx.input(3)
    require(
        qt in EIGHT_BIT and a.onnx_type == qt and b.onnx_type == qt, "QLinearMul of int8 or uint8"
    )
    m = np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sc)

    def centered(x: Value, z: int) -> Value:
        x8, off = as_i8(cx, x)
        wide = cx.emit("cast", [x8], {"dtype": "i32"}, I32)
        return cx.emit("sub", [wide, _i32(z - off)], onnx_type=I32)  # one form, 0 too

    prod = cx.emit("mul", [centered(a, za), centered(b, zb)], onnx_type=I32)
    real = cx.emit("mul", [cx.emit("cast", [prod], {"dtype": "f32"}, F32), _f32(m)])
    real = cx.emit("add", [real, _f32(np.float32(zc))])
    return [_requantized_i8(cx, real, qt)]


def _through_float(cx: Cx, fn) -> list[Value]:
    """quantize(fn(dequantize(x))) of a QLinear op of one operand (x, x_scale, x_zero,
    y_scale, y_zero)."""
    x, x_s, x_z, y_s, y_z = (cx.opt(i) for i in range(5))
    y = fn(_dq(cx, x, x_s, x_z))
    return [quantize_values(cx, y, y_s, y_z, _qtype(cx, y_z))]


@op("QLinearSoftmax", domain=MS)
def qlinear_softmax(cx: Cx) -> list[Value]:
    """quantize(softmax(dequantize(x))) (ORT: through a 256-entry exp table)."""
    require(int(cx.attr("opset", 13)) >= 13, "QLinearSoftmax of opset < 13 (2-D coercion)")
    axis = int(cx.attr("axis", -1))
    return _through_float(cx, lambda v: cx.emit("softmax", [v], {"axis": axis}))


@op("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(cx: Cx) -> list[Value]:
    require(not cx.attr("channels_last", 0), "QLinearGlobalAveragePool with channels_last")
    axes = list(range(2, cx.rank(cx.opt(0))))
    return _through_float(
        cx, lambda v: cx.emit("reduce_mean", [v], {"axes": axes, "keepdims": True})
    )


@op("QLinearSigmoid", domain=MS)
def qlinear_sigmoid(cx: Cx) -> list[Value]:
    """A squeeze-excitation gate's sigmoid on int8 values (EfficientNet, RegNetY); ONNX
    Runtime evaluates it in f32 on each of the 256 values into a table."""
    return _through_float(cx, lambda v: cx.emit("sigmoid", [v]))


@op("QLinearLeakyRelu", domain=MS)
def qlinear_leaky_relu(cx: Cx) -> list[Value]:
    alpha = float(cx.attr("alpha", 0.01))
    return _through_float(cx, lambda v: leaky_relu_of(cx, v, alpha))


@op("QLinearConcat", domain=MS)
def qlinear_concat(cx: Cx) -> list[Value]:
    """Inputs (y_scale, y_zero, then x, x_scale, x_zero per piece): each piece moved to
    the result's scale as ONNX Runtime's table does, quantize(dequantize(x)) (a piece
    already at that scale comes out unchanged), then one concatenation of int8 values."""
    y_s, y_z = cx.opt(0), cx.opt(1)
    qt = _qtype(cx, y_z)
    require(qt in EIGHT_BIT, "QLinearConcat of int8 or uint8")
    require(len(cx.inputs) >= 5 and (len(cx.inputs) - 2) % 3 == 0, "QLinearConcat's inputs")
    pieces = []
    for k in range(2, len(cx.inputs), 3):
        x, x_s, x_z = cx.opt(k), cx.opt(k + 1), cx.opt(k + 2)
        moved = quantize_values(cx, _dq(cx, x, x_s, x_z), y_s, y_z, qt)
        pieces.append(as_i8(cx, moved)[0])
    axis = int(cx.attr("axis"))
    q8 = pieces[0] if len(pieces) == 1 else cx.emit("concat", pieces, {"axis": axis})
    return [_from_i8(cx, q8, qt)]


__all__ = ["as_i8", "dequantize_values", "integer_conv", "integer_matmul", "quantize_values"]
