"""ConvTranspose (1-D and 2-D): the learned upsampling of UNet decoders, FCN and pose
heads, GAN and VAE generators.

A transposed convolution scatters each input pixel times the kernel into the output
at stride s. Two forms, both registry ops only:
- kernel == stride, no padding, dilation 1, one group (UNet's `ConvTranspose2d(k=2,
  s=2)`): the output blocks do not overlap, so it is one product per pixel, x [N, H, W,
  C] @ w [C, M * s * s], whose [N, H, W, M, s, s] result is a transpose ([N, M, H, s, W,
  s], the last axis kept: the product writes it so) merged into [N, M, H s, W s];
- otherwise the equivalent convolution: x with s - 1 zeros inserted between its
  pixels, padded by (k - 1) d - pads (cropped where negative) and output_padding, then
  conv2d with the kernel flipped and its in/out channels swapped per group (a dilated
  kernel is spread with zeros at import: conv2d has no dilation).
The kernel must be known at import (an initializer, or computed from them).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.spatial import as_2d, back_to_1d, pad_or_crop, spread_kernel
from frontend.onnx.convert.tensor import reshape
from frontend.onnx.symdim import NotRepresentable, SymDim
from frontend.onnx.values import Known, Value


@op("ConvTranspose")
def conv_transpose(cx: Cx) -> list[Value]:
    x, bias = cx.input(0), cx.opt(2)
    w = cx.known(1, "ConvTranspose's kernel")
    spatial = cx.rank(x) - 2
    require(spatial in (1, 2), f"ConvTranspose over {spatial} spatial axes is not supported")
    weights = np.asarray(w.value, dtype=np.float32)
    strides = list(cx.attr("strides", [1] * spatial))
    dilations = list(cx.attr("dilations", [1] * spatial))
    out_pad = list(cx.attr("output_padding", [0] * spatial))
    group = int(cx.attr("group", 1))
    kernel = list(weights.shape[2:])
    sizes = [cx.shape(x)[2 + i] for i in range(spatial)]
    for d in sizes:
        if d is None or not d.is_int:  # the importer fixes the dimension and tries again
            raise NotRepresentable(
                frozenset(d.names if d is not None else ()), "a ConvTranspose of it"
            )
    lengths = [d.coef for d in sizes]  # type: ignore[union-attr]
    pads = _pads(cx, lengths, kernel, strides, dilations, out_pad)
    x, was_1d = as_2d(cx, x)
    if was_1d:
        weights = weights[:, :, None, :]
        strides, dilations, out_pad = [1, *strides], [1, *dilations], [0, *out_pad]
        kernel, lengths = [1, *kernel], [1, *lengths]
        pads = [0, pads[0], 0, pads[1]]
    plain = pads == [0, 0, 0, 0] and out_pad == [0, 0] and dilations == [1, 1]
    if plain and group == 1 and kernel == strides:
        y = _per_pixel(cx, x, weights)
    else:
        y = _as_convolution(cx, x, weights, lengths, strides, dilations, pads, out_pad, group)
    if bias is not None:
        channels = cx.shape(y)[1]
        y = cx.emit("add", [y, reshape(cx, bias, [channels, SymDim(1), SymDim(1)])])
    return [back_to_1d(cx, y, was_1d)]


def _pads(cx: Cx, lengths, kernel, strides, dilations, out_pad) -> list[int]:
    """[begins..., ends...], from `pads`, or from `output_shape` / auto_pad (ONNX: the
    total split with the larger half at the end for SAME_UPPER, else at the start)."""
    n = len(lengths)
    full = [
        s * (length - 1) + op_ + (k - 1) * d + 1
        for length, k, s, d, op_ in zip(lengths, kernel, strides, dilations, out_pad, strict=True)
    ]
    shape = cx.attr("output_shape")
    auto = cx.attr("auto_pad", "NOTSET")
    if shape is None and auto in ("NOTSET", "VALID"):
        pads = list(cx.attr("pads", [0] * (2 * n))) if auto == "NOTSET" else [0] * (2 * n)
        require(len(pads) == 2 * n, f"pads must have {2 * n} values")
        return pads
    targets = (
        list(shape)[-n:]
        if shape is not None
        else [s * length for s, length in zip(strides, lengths, strict=True)]
    )
    totals = [f - t for f, t in zip(full, targets, strict=True)]
    # a negative total pads the output: positions no input reaches (the bias alone)
    begins = [t // 2 for t in totals] if auto == "SAME_UPPER" else [t - t // 2 for t in totals]
    return begins + [t - b for t, b in zip(totals, begins, strict=True)]


def _per_pixel(cx: Cx, x: Value, weights: np.ndarray) -> Value:
    """Non-overlapping blocks: x [N, H, W, C] @ w [C, M * s * s], blocks put in place."""
    c, m, sh, sw = weights.shape
    n, _, h, w = cx.shape(x)
    pixels = cx.emit("transpose", [x], {"perm": [0, 2, 3, 1]})
    flat = Known(weights.reshape(c, m * sh * sw), TensorProto.FLOAT, weight=True)
    blocks = reshape(
        cx, cx.emit("matmul", [pixels, flat]), [n, h, w, SymDim(m), SymDim(sh), SymDim(sw)]
    )
    placed = cx.emit("transpose", [blocks], {"perm": [0, 3, 1, 4, 2, 5]})
    return reshape(cx, placed, [n, SymDim(m), SymDim(h.coef * sh), SymDim(w.coef * sw)])  # type: ignore[union-attr]


def _as_convolution(cx: Cx, x, weights, lengths, strides, dilations, pads, out_pad, group):
    """The equivalent stride-1 convolution of the zero-inserted, padded input."""
    c = weights.shape[0]
    require(c % group == 0, f"ConvTranspose's {c} input channels do not split into {group} groups")
    per = c // group
    # [C, M/g, kh, kw] -> per group [M/g, C/g, kh, kw], flipped in space; groups stacked
    parts = [
        weights[g * per : (g + 1) * per].transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
        for g in range(group)
    ]
    flipped = np.concatenate(parts, axis=0)
    dh, dw = dilations
    if (dh, dw) != (1, 1):  # conv2d has no dilation: spread the kernel with zeros
        flipped = spread_kernel(flipped, dh, dw)
    keh, kew = flipped.shape[2:]
    sh, sw = strides
    n, _, h, w = cx.shape(x)
    if (sh, sw) != (1, 1):  # s - 1 zeros after every pixel, the trailing ones dropped
        cells = reshape(cx, x, [n, SymDim(c), h, SymDim(1), w, SymDim(1)])
        zeros = cx.emit("pad", [cells], {"pads": [0, 0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1]})
        wide = reshape(cx, zeros, [n, SymDim(c), SymDim(h.coef * sh), SymDim(w.coef * sw)])  # type: ignore[union-attr]
        x = cx.emit(
            "slice",
            [wide],
            {
                "starts": [0, 0],
                "ends": [(lengths[0] - 1) * sh + 1, (lengths[1] - 1) * sw + 1],
                "axes": [2, 3],
            },
        )
    top, left, bottom, right = pads
    x = pad_or_crop(
        cx,
        x,
        [
            keh - 1 - top,
            kew - 1 - left,
            keh - 1 - bottom + out_pad[0],
            kew - 1 - right + out_pad[1],
        ],
        "ConvTranspose",
    )
    attrs: dict = {"stride": [1, 1], "padding": [0, 0]}
    if group != 1:
        attrs["groups"] = group
    kernel = Known(np.ascontiguousarray(flipped), TensorProto.FLOAT, weight=True)
    return cx.emit("conv2d", [x, kernel], attrs)
