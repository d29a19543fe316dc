"""Matrix products and convolutions: MatMul, Gemm, Conv."""

from __future__ import annotations

import math

import numpy as np

from frontend.onnx.convert import Cx, op, require
from frontend.onnx.convert.tensor import reshape, unsqueeze
from frontend.onnx.symdim import SymDim
from frontend.onnx.values import Known, Value


def _transposed(cx: Cx, v: Value) -> Value:
    """The last two axes swapped (folded at import for known weights)."""
    rank = cx.rank(v)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    if isinstance(v, Known):
        return Known(np.ascontiguousarray(np.transpose(v.value, perm)), v.onnx_type, v.weight)
    return cx.emit("transpose", [v], {"perm": perm})


def matmul(cx: Cx, a: Value, b: Value, hint: str | None = None) -> Value:
    """numpy matmul semantics, 1-D operands included."""
    squeeze_first = cx.rank(a) == 1
    squeeze_last = cx.rank(b) == 1
    if squeeze_first:
        a = unsqueeze(cx, a, [0])
    if squeeze_last:
        b = unsqueeze(cx, b, [-1])
    out = cx.emit("matmul", [a, b], hint=hint)
    if squeeze_first or squeeze_last:
        rank = len(out.shape)
        drop = {rank - 1} if squeeze_last else set()
        if squeeze_first:
            drop.add(rank - 2)
        return reshape(cx, out, [d for i, d in enumerate(out.shape) if i not in drop])
    return out


@op("MatMul")
def matmul_(cx: Cx) -> list[Value]:
    from frontend.onnx.convert.quant import qdq_matmul  # QDQ: an integer kernel

    a, b = cx.input(0), cx.input(1)
    integer = qdq_matmul(cx, a, b)
    return [integer if integer is not None else matmul(cx, a, b)]


def scale(cx: Cx, x: Value, factor: float) -> Value:
    if factor == 1.0:
        return x
    return cx.emit("mul", [x, cx.scalar(factor, x)])


@op("Gemm", since=7)
def gemm(cx: Cx) -> list[Value]:
    a, b, c = cx.input(0), cx.input(1), cx.opt(2)
    alpha, beta = float(cx.attr("alpha", 1.0)), float(cx.attr("beta", 1.0))
    if cx.attr("transA", 0):
        a = _transposed(cx, a)
    from frontend.onnx.convert.quant import qdq_matmul  # QDQ: an integer kernel

    integer = qdq_matmul(cx, a, b, transpose_b=bool(cx.attr("transB", 0)))
    if integer is not None:
        out = integer
    elif cx.attr("transB", 0):
        if isinstance(b, Known):  # a weight: store it as the product reads it
            out = cx.emit("matmul", [a, _transposed(cx, b)])
        else:
            out = cx.emit("matmul_nt", [a, b])
    else:
        out = cx.emit("matmul", [a, b])
    out = scale(cx, out, alpha)
    if c is not None and beta != 0.0:
        if isinstance(c, Known):
            c = Known((np.asarray(c.value) * beta).astype(c.value.dtype), c.onnx_type, c.weight)
        else:
            c = scale(cx, c, beta)
        out = cx.emit("add", [out, c])
    return [out]


# ------------------------------------------------------------ convolution


def spatial_pads(
    cx: Cx, x: Value, kernel: list[int], strides: list[int], dilations: list[int]
) -> list[int]:
    """ONNX pads [begins..., ends...] for the spatial axes, auto_pad resolved."""
    n = len(kernel)
    auto = cx.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID"):
        pads = list(cx.attr("pads", [0] * (2 * n))) if auto == "NOTSET" else [0] * (2 * n)
        require(len(pads) == 2 * n, f"pads must have {2 * n} values")
        return pads
    require(auto in ("SAME_UPPER", "SAME_LOWER"), f"auto_pad '{auto}' is not supported")
    shape = cx.shape(x)[2:]
    begins, ends = [], []
    for d, k, s, dl in zip(shape, kernel, strides, dilations, strict=True):
        require(d is not None and d.is_int, "auto_pad over a symbolic spatial size")
        size = d.coef
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * dl + 1 - size, 0)
        small = total // 2
        begins.append(small if auto == "SAME_UPPER" else total - small)
        ends.append(total - begins[-1])
    return begins + ends


def as_2d(cx: Cx, x: Value) -> tuple[Value, bool]:
    """A 1-D (NCL) operand as NC1L; returns (value, was 1-D)."""
    if cx.rank(x) == 3:
        return unsqueeze(cx, x, [2]), True
    require(cx.rank(x) == 4, f"only 1-D and 2-D spatial ops are supported (rank {cx.rank(x)})")
    return x, False


def back_to_1d(cx: Cx, y: Value, was_1d: bool) -> Value:
    if not was_1d:
        return y
    shape = list(cx.shape(y))
    return reshape(cx, y, [shape[0], shape[1], shape[3]])


@op("Conv")
def conv(cx: Cx) -> list[Value]:
    x, w, bias = cx.input(0), cx.input(1), cx.opt(2)
    spatial = cx.rank(x) - 2
    strides = list(cx.attr("strides", [1] * spatial))
    dilations = list(cx.attr("dilations", [1] * spatial))
    x, was_1d = as_2d(cx, x)
    if was_1d:
        w = unsqueeze(cx, w, [2])
        strides, dilations = [1, *strides], [1, *dilations]
    kernel = [int(d.coef) for d in cx.shape(w)[2:]]
    require(all(d == 1 for d in dilations), "Conv with dilations other than 1 is not supported")
    pads = (
        spatial_pads(cx, x, kernel, strides, dilations)
        if not was_1d
        else _pads_1d(cx, x, kernel, strides)
    )
    top, left, bottom, right = pads[0], pads[1], pads[2], pads[3]
    if (top, left) != (bottom, right):
        # Asymmetric padding: an explicit pad, then the convolution without.
        x = cx.emit("pad", [x], {"pads": [0, 0, top, left, 0, 0, bottom, right]})
        top = left = 0
    attrs = {"stride": strides, "padding": [top, left]}
    group = int(cx.attr("group", 1))
    if group != 1:
        attrs["groups"] = group
    from frontend.onnx.convert.quant import qdq_conv  # QDQ: an integer kernel

    integer = qdq_conv(cx, x, w, attrs, bias)  # None unless x and w are dequantized int8
    y, with_bias = integer if integer is not None else (cx.emit("conv2d", [x, w], attrs), False)
    if bias is not None and not with_bias:
        channels = cx.shape(w)[0]
        b = reshape(cx, bias, [channels, SymDim(1), SymDim(1)])
        y = cx.emit("add", [y, b])
    return [back_to_1d(cx, y, was_1d)]


def _pads_1d(cx: Cx, x: Value, kernel: list[int], strides: list[int]) -> list[int]:
    """The 1-D pads of a convolution or pool seen as 2-D (H = 1: no padding there)."""
    auto = cx.attr("auto_pad", "NOTSET")
    n_pads = list(cx.attr("pads", [0, 0]))
    if auto == "NOTSET":
        return [0, n_pads[0], 0, n_pads[1]]
    if auto == "VALID":
        return [0, 0, 0, 0]
    length = cx.shape(x)[3]
    require(length is not None and length.is_int, "auto_pad over a symbolic spatial size")
    size, k, s = length.coef, kernel[1], strides[1]
    total = max((math.ceil(size / s) - 1) * s + k - size, 0)
    begin = total // 2 if auto == "SAME_UPPER" else total - total // 2
    return [0, begin, 0, total - begin]


__all__ = ["as_2d", "back_to_1d", "matmul", "scale", "spatial_pads"]
