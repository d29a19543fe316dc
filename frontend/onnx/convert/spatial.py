"""What the spatial ops' converters share (Conv, the pools, QLinearConv and the QDQ
convolution): ONNX padding with auto_pad resolved, and a 1-D (NCL) op seen as 2-D.
"""

from __future__ import annotations

import math

import numpy as np

from frontend.onnx.convert.registry import Cx, require
from frontend.onnx.convert.tensor import reshape, unsqueeze
from frontend.onnx.values import Value


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


def pads_1d(cx: Cx, x: Value, kernel: list[int], strides: list[int]) -> list[int]:
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


def spread_kernel(kernel: np.ndarray, dh: int, dw: int) -> np.ndarray:
    """An [O, C, kh, kw] kernel with dh - 1 (dw - 1) zero rows (columns) between its
    taps: a dilated kernel as conv2d (which has no dilation) takes it."""
    o, c, kh, kw = kernel.shape
    out = np.zeros((o, c, (kh - 1) * dh + 1, (kw - 1) * dw + 1), dtype=kernel.dtype)
    out[:, :, ::dh, ::dw] = kernel
    return out


def pad_or_crop(cx: Cx, x: Value, pads: list[int], what: str) -> Value:
    """x [N, C, H, W] padded with zeros by pads [top, left, bottom, right], cropped
    where a pad is negative (padding beyond a kernel's reach); `what` names the op in
    the error for an empty result."""
    grow = [max(v, 0) for v in pads]
    if any(grow):
        x = cx.emit("pad", [x], {"pads": [0, 0, grow[0], grow[1], 0, 0, grow[2], grow[3]]})
    if min(pads) >= 0:
        return x
    hh, ww = cx.shape(x)[2].coef, cx.shape(x)[3].coef  # type: ignore[union-attr]
    starts = [max(-pads[0], 0), max(-pads[1], 0)]
    ends = [hh - max(-pads[2], 0), ww - max(-pads[3], 0)]
    require(ends[0] > starts[0] and ends[1] > starts[1], f"{what} to an empty output")
    return cx.emit("slice", [x], {"starts": starts, "ends": ends, "axes": [2, 3]})
