"""Matrix products and convolutions: MatMul, Gemm, Conv."""

from __future__ import annotations

import numpy as np

from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.spatial import as_2d, back_to_1d, pads_1d, spatial_pads
from frontend.onnx.convert.tensor import reshape, swap_last_axes, unsqueeze
from frontend.onnx.symdim import SymDim
from frontend.onnx.values import Known, Value


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
        a = swap_last_axes(cx, a)
    from frontend.onnx.convert.quant import qdq_matmul  # QDQ: an integer kernel

    integer = qdq_matmul(cx, a, b, transpose_b=bool(cx.attr("transB", 0)))
    if integer is not None:
        out = integer
    elif cx.attr("transB", 0):
        if isinstance(b, Known):  # a weight: store it as the product reads it
            out = cx.emit("matmul", [a, swap_last_axes(cx, b)])
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
        else pads_1d(cx, x, kernel, strides)
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


__all__ = ["matmul", "scale"]
