"""Spatial and indexing ops of CNNs and embeddings: gather, pad, max_pool2d, avg_pool2d.

Pooling follows ONNX (opset 19+) and PyTorch: NCHW, padding [top, left, bottom, right],
output size per axis floor or ceil((H + pt + pb - ((K - 1) * d + 1)) / s) + 1, and in
ceil mode a last window that would start beyond H + pt (inside the end padding) is
dropped. `Window2d` holds that geometry once, for the reference semantics here, the
cost model and the backend. Where nothing else defines it: a max window with no tap
on the input (possible with large padding or dilation) is -inf (the integer minimum),
an average window with none divides 0 by 0 (NaN), and with count_include_pad a tap
counts when it lies inside [-pad_begin, size + pad_end), dilated taps included.

gather follows XLA: a negative index counts from the end once (i + n), then every
index is clamped into [0, n - 1], so no index faults. pad converts its value to x's
dtype as `cast` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    normalize_axis,
    require_float,
)
from eqsat.ops.registry import register


def _fmt(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def fill_value(value: float, dtype: DType) -> np.generic:
    """A float attribute as an element of `dtype`'s compute type: f32 for floats (bf16
    rounds when the result is stored), and for integers rounded to nearest (ties to
    even) and saturated, as `cast` converts (NaN becomes 0)."""
    if dtype.is_float:
        return np.float32(value)
    info = np.iinfo(dtype.np_dtype)
    rounded = np.rint(np.nan_to_num(np.float64(value), nan=0.0, posinf=info.max, neginf=info.min))
    return dtype.np_dtype.type(np.clip(rounded, info.min, info.max))


def lowest(dtype: DType) -> np.generic:
    """The element no other element is smaller than: -inf, or the integer minimum."""
    if dtype.is_float:
        return np.float32(-np.inf)
    return dtype.np_dtype.type(np.iinfo(dtype.np_dtype).min)


# --------------------------------------------------------------------- gather


def gather_indices(indices: np.ndarray, n: int) -> np.ndarray:
    """Negative indices count from the end (i + n); then clamped to [0, n - 1]."""
    i = indices.astype(np.int64)
    return np.clip(np.where(i < 0, i + n, i), 0, n - 1)


def _gather_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, idx = ts
    if idx.dtype is not DType.I32:
        raise OpTypeError(f"'gather': indices must be i32, got {idx}")
    if x.rank < 1:
        raise OpTypeError(f"'gather' needs a table of rank >= 1, got {x}")
    axis = normalize_axis("gather", attrs["axis"], x.rank)
    return x.with_shape((*x.shape[:axis], *idx.shape, *x.shape[axis + 1 :]))


def _gather_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, idx = xs
    axis = int(attrs["axis"]) % x.ndim
    return np.take(x, gather_indices(idx, x.shape[axis]), axis=axis)


def gather_bytes_read(ts: Sequence[TensorType], attrs: Attrs) -> int:
    """The indices plus only the rows they select, not the whole table."""
    x, idx = ts
    axis = int(attrs["axis"]) % x.rank
    rows = math.prod(x.shape[:axis]) * idx.numel
    return idx.nbytes + rows * math.prod(x.shape[axis + 1 :]) * x.dtype.itemsize


register(
    OpDef(
        name="gather",
        kind=OpKind.LAYOUT,
        operands=("x", "indices"),
        attrs=(AttrSpec("axis", AttrType.INT, 0, "the axis the indices select along"),),
        infer=_gather_infer,
        normalize=lambda ts, attrs: {"axis": normalize_axis("gather", attrs["axis"], ts[0].rank)},
        ref=_gather_ref,
        read_bytes=gather_bytes_read,
        doc="entries of x along an axis picked by i32 indices (embeddings): shape "
        "x[:axis] + indices + x[axis+1:]; a negative index counts from the end, then "
        "indices are clamped to [0, n-1] (XLA's semantics: out of range never faults)",
        egg_shape="(Append (Take {x} {axis}) (Append {indices} (Drop {x} (+ {axis} 1))))",
    )
)

# ------------------------------------------------------------------------ pad


def pad_widths(op: str, x: TensorType, pads: Sequence[int]) -> list[tuple[int, int]]:
    """ONNX's pads [b0, b1, ..., e0, e1, ...] as (begin, end) per axis."""
    if len(pads) != 2 * x.rank or any(p < 0 for p in pads):
        raise OpTypeError(
            f"'{op}': pads must be {2 * x.rank} non-negative integers for {x} (all begins, "
            f"then all ends), got {_fmt(pads)}"
        )
    return [(int(pads[a]), int(pads[a + x.rank])) for a in range(x.rank)]


def _pad_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = ts[0]
    widths = pad_widths("pad", x, attrs["pads"])
    return x.with_shape(tuple(d + b + e for d, (b, e) in zip(x.shape, widths, strict=True)))


def _compute_type(x: np.ndarray) -> DType:
    """The dtype an op's reference computes x in: f32 for floats, i8 for int8, and i32
    for other integers (callers may widen integers to check for overflow)."""
    if np.issubdtype(x.dtype, np.floating):
        return DType.F32
    return DType.I8 if x.dtype == np.int8 else DType.I32


def _pad_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    dtype = _compute_type(x)
    widths = pad_widths("pad", TensorType(dtype, x.shape), attrs["pads"])
    if not widths:  # a scalar has nothing to pad
        return x.copy()
    return np.pad(x, widths, constant_values=fill_value(attrs["value"], dtype))


register(
    OpDef(
        name="pad",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(
            AttrSpec(
                "pads", AttrType.INTS, doc="[b0, b1, ..., e0, e1, ...]: all begins, then ends"
            ),
            AttrSpec("value", AttrType.FLOAT, 0.0, "the fill, converted to x's dtype"),
        ),
        infer=_pad_infer,
        ref=_pad_ref,
        doc="constant padding (ONNX pads layout, non-negative); the value is converted "
        "to x's dtype as cast converts it (integers: rounded, saturated)",
        egg_shape="(PadShape {x} {pads})",
    )
)

# -------------------------------------------------------------------- pooling


@dataclass(frozen=True)
class Window2d:
    """Where the KH x KW windows of a 2-D pooling (or depthwise convolution) fall.

    Coordinates are those of the padded image: input row r is padded row r + top.
    `rows`/`cols` are the padded rows and columns the windows touch: at least the
    input and its padding in ceil mode (the last window may overhang the end
    padding), fewer where floor mode leaves trailing rows unused.
    """

    in_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    out_hw: tuple[int, int]

    @property
    def extent(self) -> tuple[int, int]:
        """Rows and columns one window spans: (K - 1) * d + 1."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilation, strict=True))

    @property
    def rows(self) -> int:
        return (self.out_hw[0] - 1) * self.stride[0] + self.extent[0]

    @property
    def cols(self) -> int:
        return (self.out_hw[1] - 1) * self.stride[1] + self.extent[1]

    @property
    def taps(self) -> int:
        return self.kernel[0] * self.kernel[1]

    def tap_offsets(self) -> list[tuple[int, int]]:
        """(row, col) of each tap inside the window, row-major over the kernel."""
        (kh, kw), (dh, dw) = self.kernel, self.dilation
        return [(i * dh, j * dw) for i in range(kh) for j in range(kw)]

    def axis_counts(self, axis: int, include_pad: bool) -> np.ndarray:
        """Per output position along axis 0 (rows) or 1 (cols): how many taps fall on
        the input (or, with include_pad, inside the padded extent)."""
        n_out, s, k, d = (
            self.out_hw[axis],
            self.stride[axis],
            self.kernel[axis],
            self.dilation[axis],
        )
        begin, end = self.pads[axis], self.pads[axis + 2]
        size = self.in_hw[axis]
        pos = np.arange(n_out)[:, None] * s + np.arange(k)[None, :] * d
        lo, hi = (0, size + begin + end) if include_pad else (begin, begin + size)
        return ((pos >= lo) & (pos < hi)).sum(axis=1)

    def counts(self, include_pad: bool) -> np.ndarray:
        """[HO, WO] divisors of an average pool: taps counted per output position."""
        return np.outer(self.axis_counts(0, include_pad), self.axis_counts(1, include_pad))


def _pair(op: str, name: str, value: Sequence[int], minimum: int, n: int = 2) -> tuple[int, ...]:
    if len(value) != n or any(v < minimum for v in value):
        raise OpTypeError(f"'{op}': {name} must be {n} integers >= {minimum}, got {_fmt(value)}")
    return tuple(int(v) for v in value)


def _out_size(size: int, begin: int, end: int, extent: int, stride: int, ceil: bool) -> int:
    span = size + begin + end - extent
    if span < 0:
        return 0
    if not ceil:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + begin:  # the last window would start in the end padding
        out -= 1
    return out


def window2d(op: str, x: TensorType, attrs: Attrs) -> Window2d:
    """The geometry of a pooling op on x, or OpTypeError."""
    if x.rank != 4:
        raise OpTypeError(f"'{op}' needs x: [N, C, H, W], got {x}")
    kernel = _pair(op, "kernel", attrs["kernel"], 1)
    stride = _pair(op, "stride", attrs["stride"], 1)
    dilation = _pair(op, "dilation", attrs["dilation"], 1)
    pads = _pair(op, "padding", attrs["padding"], 0, 4)
    ceil = bool(attrs["ceil_mode"])
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True)]
    out = tuple(
        _out_size(x.shape[2 + a], pads[a], pads[a + 2], extent[a], stride[a], ceil)
        for a in range(2)
    )
    if min(out) < 1:
        raise OpTypeError(
            f"'{op}': a window of {extent[0]}x{extent[1]} (kernel {_fmt(kernel)}, dilation "
            f"{_fmt(dilation)}) is larger than the padded input {x} (padding {_fmt(pads)})"
        )
    return Window2d(x.shape[2:], kernel, stride, dilation, pads, out)  # type: ignore[arg-type]


def windows(x: np.ndarray, g: Window2d, fill: np.generic) -> np.ndarray:
    """[N, C, HO, WO, KH, KW]: the taps of every window, `fill` where they are padding."""
    n, c, h, w = x.shape
    top, left = g.pads[0], g.pads[1]
    xp = np.full((n, c, g.rows, g.cols), fill, dtype=x.dtype)
    hh, ww = min(h, max(0, g.rows - top)), min(w, max(0, g.cols - left))
    xp[:, :, top : top + hh, left : left + ww] = x[:, :, :hh, :ww]
    view = np.lib.stride_tricks.sliding_window_view(xp, g.extent, axis=(2, 3))
    (sh, sw), (dh, dw) = g.stride, g.dilation
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def _pool_attrs(avg: bool) -> tuple[AttrSpec, ...]:
    specs = (
        AttrSpec("kernel", AttrType.INTS, doc="[KH, KW]"),
        AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
        AttrSpec("padding", AttrType.INTS, (0, 0, 0, 0), "[top, left, bottom, right]"),
        AttrSpec("dilation", AttrType.INTS, (1, 1), "[DH, DW]"),
        AttrSpec("ceil_mode", AttrType.BOOL, False, "round the output size up"),
    )
    if avg:
        specs += (
            AttrSpec(
                "count_include_pad", AttrType.BOOL, False, "divide by the taps in the padded extent"
            ),
        )
    return specs


def _pool_infer(op: str, float_only: bool):
    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        x = ts[0]
        if float_only:
            require_float(op, x)
        g = window2d(op, x, attrs)
        return x.with_shape((*x.shape[:2], *g.out_hw))

    return infer


def _max_pool_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    dtype = _compute_type(x)
    g = window2d("max_pool2d", TensorType(dtype, x.shape), attrs)
    return windows(x, g, lowest(dtype)).max(axis=(-2, -1))


def _avg_pool_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0].astype(np.float32, copy=False)
    g = window2d("avg_pool2d", TensorType(DType.F32, x.shape), attrs)
    total = windows(x, g, np.float32(0)).sum(axis=(-2, -1), dtype=np.float32)
    with np.errstate(all="ignore"):
        return total / g.counts(bool(attrs["count_include_pad"])).astype(np.float32)


def _pool_flops(extra: int):
    def flops(ts: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
        kh, kw = attrs["kernel"]
        return out.numel * (kh * kw + extra)

    return flops


_POOL_SHAPE = "(PoolShape {x} {kernel} {stride} {padding} {dilation} {ceil_mode})"

register(
    OpDef(
        name="max_pool2d",
        kind=OpKind.REDUCE,
        operands=("x",),
        attrs=_pool_attrs(avg=False),
        infer=_pool_infer("max_pool2d", float_only=False),
        ref=_max_pool_ref,
        flops=_pool_flops(0),
        doc="max over KH x KW windows of NCHW x (ONNX/PyTorch sizes, ceil mode drops a "
        "window starting in the end padding); padding never wins (-inf, or the integer "
        "minimum), any dtype",
        egg_shape=_POOL_SHAPE,
    )
)

register(
    OpDef(
        name="avg_pool2d",
        kind=OpKind.REDUCE,
        operands=("x",),
        attrs=_pool_attrs(avg=True),
        infer=_pool_infer("avg_pool2d", float_only=True),
        ref=_avg_pool_ref,
        flops=_pool_flops(1),
        doc="mean over KH x KW windows of NCHW x: the sum over the window divided by its "
        "taps on the input, or (count_include_pad) those inside the padded extent",
        egg_shape=_POOL_SHAPE,
    )
)
