"""Matrix products and convolutions: MatMul, Gemm, Conv."""

from __future__ import annotations

import numpy as np

from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.spatial import (
    as_2d,
    back_to_1d,
    pad_or_crop,
    pads_1d,
    spatial_pads,
    spread_kernel,
)
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
    pads = (
        spatial_pads(cx, x, kernel, strides, dilations)
        if not was_1d
        else pads_1d(cx, x, kernel, strides)
    )
    top, left, bottom, right = pads[0], pads[1], pads[2], pads[3]
    if any(d != 1 for d in dilations):
        require(
            all(s == 1 for s in strides), "Conv with both dilations and strides is not supported"
        )
        y = dilated_conv(cx, x, w, dilations, pads, int(cx.attr("group", 1)))
        if bias is not None:
            y = cx.emit("add", [y, reshape(cx, bias, [cx.shape(w)[0], SymDim(1), SymDim(1)])])
        return [back_to_1d(cx, y, was_1d)]
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


def dilated_conv(cx: Cx, x: Value, w: Value, dilations, pads, group: int) -> Value:
    """A stride-1 convolution with dilations (dh, dw): DeepLab's atrous convolutions,
    WaveNet's and TCNs' dilated 1-D ones. Kernel taps that read only padding for every
    output are dropped first (exact: they multiply zeros; at DeepLab's rates on a small
    map only the centre tap is left, a 1 x 1 convolution). What stays dilated runs as
    TensorFlow's space-to-batch (_phases): no multiply by an inserted zero."""
    top, left, bottom, right = pads
    kh, kw = (int(d.coef) for d in cx.shape(w)[2:])  # type: ignore[union-attr]
    _, _, h, wd = cx.shape(x)
    require(
        h is not None and h.is_int and wd is not None and wd.is_int,
        "a dilated Conv of a symbolic size",
    )
    rows, cols = h.coef, wd.coef  # type: ignore[union-attr]
    oh = rows + top + bottom - (kh - 1) * dilations[0]
    ow = cols + left + right - (kw - 1) * dilations[1]
    require(oh > 0 and ow > 0, "a dilated Conv larger than its input")
    spans = []  # per axis: (first tap, last tap, dilation, padding before) of what stays
    for k, d, before, size, out in (
        (kh, dilations[0], top, rows, oh),
        (kw, dilations[1], left, cols, ow),
    ):
        live = [a for a in range(k) if a * d - before <= size - 1 and a * d - before + out - 1 >= 0]
        first, last = (live[0], live[-1]) if live else (k // 2, k // 2)
        spans.append((first, last, d if last > first else 1, before - first * d))
    (fh, lh, dh, th), (fw, lw, dw, tw) = spans
    if (fh, lh, fw, lw) != (0, kh - 1, 0, kw - 1) and isinstance(w, Known):
        w = Known(w.value[:, :, fh : lh + 1, fw : lw + 1], w.onnx_type, w.weight)
    elif (fh, lh, fw, lw) != (0, kh - 1, 0, kw - 1):
        w = cx.emit("slice", [w], {"starts": [fh, fw], "ends": [lh + 1, lw + 1], "axes": [2, 3]})
    kh, kw = lh - fh + 1, lw - fw + 1
    bh = oh + (kh - 1) * dh - rows - th  # padding after, for the same output size
    bw = ow + (kw - 1) * dw - cols - tw
    x = pad_or_crop(cx, x, [th, tw, bh, bw], "a dilated Conv")  # dropped taps: maybe a crop
    attrs: dict = {"stride": [1, 1], "padding": [0, 0]}
    if group != 1:
        attrs["groups"] = group
    if (dh, dw) == (1, 1):
        return cx.emit("conv2d", [x, w], attrs)
    taps = ((kh - 1) * dh + 1) * ((kw - 1) * dw + 1)
    if isinstance(w, Known) and taps <= SPREAD_MAX * kh * kw:
        spread = Known(spread_kernel(np.asarray(w.value), dh, dw), w.onnx_type, w.weight)
        return cx.emit("conv2d", [x, spread], attrs)
    return _phases(cx, x, w, dh, dw, oh, ow, attrs)


# A known kernel is spread with zeros (a plain convolution, dilation x more MACs) while
# that multiplies its taps by at most this; beyond, the input is split into phases,
# whose copies de-interleave single elements: far dearer than a few times the MACs of
# a 3 x 3 at rate 2 (DeepLab's backbone) or 4, cheaper than 69x at rate 12 on 3 x 3.
SPREAD_MAX = 16


def _phases(cx: Cx, x: Value, w: Value, dh: int, dw: int, oh: int, ow: int, attrs: dict) -> Value:
    """Space-to-batch: output row i = q dh + r reads input rows (q + a) dh + r, so each
    of the dh * dw phases of the (padded) input is convolved with the undilated kernel,
    the phases as one batch, and the results interleaved back. Only the phases and
    phase rows some output reads are taken."""
    kh, kw = (int(d.coef) for d in cx.shape(w)[2:])  # type: ignore[union-attr]
    n, c, h, wd = cx.shape(x)
    hp, wp = h.coef, wd.coef  # type: ignore[union-attr]
    hq, wq = -(-hp // dh), -(-wp // dw)  # phase sub-images, the last padded up
    if (hq * dh, wq * dw) != (hp, wp):
        x = cx.emit("pad", [x], {"pads": [0, 0, 0, 0, 0, 0, hq * dh - hp, wq * dw - wp]})
    cells = reshape(cx, x, [n, c, SymDim(hq), SymDim(dh), SymDim(wq), SymDim(dw)])
    phases = cx.emit("transpose", [cells], {"perm": [0, 3, 5, 1, 2, 4]})
    rh, rw = min(dh, oh), min(dw, ow)  # phases used
    qh, qw = -(-oh // dh), -(-ow // dw)  # output rows (cols) per phase
    ih, iw = qh + kh - 1, qw + kw - 1  # their input rows (cols)
    if (rh, rw, ih, iw) != (dh, dw, hq, wq):
        phases = cx.emit(
            "slice",
            [phases],
            {"starts": [0, 0, 0, 0], "ends": [rh, rw, ih, iw], "axes": [1, 2, 4, 5]},
        )
    batch = reshape(cx, phases, [n * SymDim(rh * rw), c, SymDim(ih), SymDim(iw)])  # type: ignore[operator]
    y = cx.emit("conv2d", [batch, w], attrs)
    o = cx.shape(w)[0]
    split = reshape(cx, y, [n, SymDim(rh), SymDim(rw), o, SymDim(qh), SymDim(qw)])
    woven = cx.emit("transpose", [split], {"perm": [0, 3, 4, 1, 5, 2]})
    full = reshape(cx, woven, [n, o, SymDim(qh * rh), SymDim(qw * rw)])
    if (qh * rh, qw * rw) == (oh, ow):
        return full
    return cx.emit("slice", [full], {"starts": [0, 0], "ends": [oh, ow], "axes": [2, 3]})


__all__ = ["dilated_conv", "matmul", "scale"]
