"""Resize and Upsample (opsets 7 to 19): nearest, linear and cubic interpolation, as
UNets, FPNs, YOLO necks and segmentation heads write their upsampling.

Every mode is separable and linear in the input, so each resized axis is a linear map
computed at import, with the source coordinate of every output index taken from the
sizes or scales and the coordinate transformation exactly as the operator defines
them (half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
asymmetric, tf_crop_and_resize with its roi), the taps and weights of the mode (cubic
with `cubic_coeff_a` and `exclude_outside`, `antialias` widening the filter when
downsampling), the edges clamped as the operator pads them:
- nearest: the picked source indices. Repeating each index k times (an integer
  upsample, `scale_factor=2`) is a view per axis, the innermost first (the axis split
  into [n, 1], broadcast to [n, k] and merged; its reader copies it); any other
  picking is a gather with constant indices.
- linear and cubic: a product with the [out, in] weight matrix, `matmul(x, A^T)` for
  the last axis, `matmul(A, x)` for the one before it, other axes moved there first;
  tf_crop_and_resize's extrapolated outputs get the extrapolation value added.
The output sizes follow `keep_aspect_ratio_policy` where sizes are given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.tensor import reshape
from frontend.onnx.symdim import NotRepresentable, SymDim
from frontend.onnx.values import Known, Value

TRANSFORMS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MODES = ("nearest", "linear", "cubic")


@dataclass(frozen=True)
class Interpolation:
    """How one Resize node interpolates (its attributes, as the operator defines them)."""

    mode: str = "nearest"
    transform: str = "half_pixel"
    nearest: str = "round_prefer_floor"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation: float = 0.0


@op("Resize", since=10)
def resize(cx: Cx) -> list[Value]:
    x = cx.input(0)
    roi = None
    if cx.since < 11:  # Resize-10: X, scales; asymmetric coordinates, nearest by floor
        scales = _floats(cx, 1, "Resize's scales")
        sizes = None
        how = Interpolation(cx.attr("mode", "nearest"), "asymmetric", "floor")
    else:
        roi = _floats(cx, 1, "Resize's roi") if _given(cx, 1) else None
        scales = _floats(cx, 2, "Resize's scales") if _given(cx, 2) else None
        sizes = (
            [int(v) for v in cx.known(3, "Resize's sizes").concrete_ints("sizes")]
            if _given(cx, 3)
            else None
        )
        how = Interpolation(
            cx.attr("mode", "nearest"),
            cx.attr("coordinate_transformation_mode", "half_pixel"),
            cx.attr("nearest_mode", "round_prefer_floor"),
            float(cx.attr("cubic_coeff_a", -0.75)),
            bool(cx.attr("exclude_outside", 0)),
            bool(cx.attr("antialias", 0)),
            float(cx.attr("extrapolation_value", 0.0)),
        )
    policy = cx.attr("keep_aspect_ratio_policy", "stretch")
    return [_resize(cx, x, scales, sizes, roi, cx.attr("axes"), policy, how)]


@op("Upsample", since=7)
def upsample(cx: Cx) -> list[Value]:
    """Upsample-7 (scales an attribute) and -9 (an input): Resize with asymmetric
    coordinates, nearest by floor."""
    x = cx.input(0)
    scales = list(cx.attr("scales")) if cx.since < 9 else _floats(cx, 1, "Upsample's scales")
    how = Interpolation(cx.attr("mode", "nearest"), "asymmetric", "floor")
    return [_resize(cx, x, scales, None, None, None, "stretch", how)]


def _given(cx: Cx, i: int) -> bool:
    """Is optional input i present and not empty (ONNX writes '' or a 0-size tensor)?"""
    v = cx.opt(i)
    return v is not None and not (isinstance(v, Known) and v.value.size == 0)


def _floats(cx: Cx, i: int, what: str) -> list[float]:
    return [float(v) for v in np.asarray(cx.known(i, what).value, dtype=np.float64).reshape(-1)]


def _resize(
    cx: Cx,
    x: Value,
    scales: list[float] | None,
    sizes: list[int] | None,
    roi: list[float] | None,
    axes: list[int] | None,
    policy: str,
    how: Interpolation,
) -> Value:
    rank = cx.rank(x)
    axes = [a % rank for a in axes] if axes else list(range(rank))
    given = sizes if sizes is not None else scales
    require(given is not None, "Resize needs scales or sizes")
    require(
        len(given) == len(axes), f"Resize has {len(given)} scales or sizes for {len(axes)} axes"
    )
    require(how.mode in MODES, f"Resize mode '{how.mode}' is not supported ({', '.join(MODES)})")
    require(
        how.transform in TRANSFORMS,
        f"coordinate_transformation_mode '{how.transform}' is not supported",
    )
    require(how.nearest in NEAREST_MODES, f"nearest_mode '{how.nearest}' is not supported")
    require(how.mode == "nearest" or cx.is_float(x), f"{how.mode} Resize of a non-float tensor")
    require(
        policy in ("stretch", "not_larger", "not_smaller"),
        f"keep_aspect_ratio_policy '{policy}' is not supported",
    )
    require(
        how.transform != "tf_crop_and_resize" or roi is not None, "tf_crop_and_resize needs a roi"
    )
    shape = cx.shape(x)
    todo = [
        (k, a)
        for k, a in enumerate(axes)
        if sizes is not None or scales[k] != 1.0 or how.transform == "tf_crop_and_resize"  # type: ignore[index]
    ]
    lengths = {}
    for _, a in todo:
        d = shape[a]
        if d is None or not d.is_int:  # the importer fixes the dimension and tries again
            raise NotRepresentable(frozenset(d.names if d is not None else ()), "a Resize of it")
        lengths[a] = d.coef
    factors = {a: (sizes[k] / lengths[a] if sizes is not None else scales[k]) for k, a in todo}  # type: ignore[index]
    outs = {a: math.floor(lengths[a] * f) for a, f in factors.items()}
    if sizes is not None:
        outs = {a: sizes[k] for k, a in todo}
        if policy != "stretch" and factors:
            scale = (min if policy == "not_larger" else max)(factors.values())
            factors = dict.fromkeys(factors, scale)
            outs = {a: int(scale * lengths[a] + 0.5) for a in factors}
    out = x
    repeats: dict[int, int] = {}  # axis -> k: each index repeated k times (one view below)
    for k, a in todo:
        n, m, scale = lengths[a], outs[a], factors[a]
        require(scale > 0 and m > 0, "Resize to an empty axis")
        box = (roi[k], roi[len(axes) + k]) if roi is not None else (0.0, 1.0)
        if m == n and scale == 1.0 and how.transform != "tf_crop_and_resize":
            continue
        source = _source_coordinates(n, m, scale, how.transform, box)
        weights, outside = _weights(source, n, scale, how)
        if how.mode == "nearest" and not outside.any():
            index = weights.argmax(axis=1)
            if m % n == 0 and np.array_equal(index, np.repeat(np.arange(n), m // n)):
                repeats[a] = m // n
            else:
                out = cx.emit(
                    "gather",
                    [out, Known(index, TensorProto.INT64)],
                    {"axis": a},
                    onnx_type=x.onnx_type,
                )
        else:
            out = _interpolate(cx, out, a, weights)
            if outside.any() and how.extrapolation != 0.0:
                fill = np.where(outside, how.extrapolation, 0.0).astype(np.float32)
                bias = fill.reshape([m if i == a else 1 for i in range(rank)])
                out = cx.emit("add", [out, Known(bias, TensorProto.FLOAT)])
    return _repeat(cx, out, repeats) if repeats else out


def _source_coordinates(
    n: int, m: int, scale: float, transform: str, box: tuple[float, float]
) -> np.ndarray:
    """The input coordinate of each output index (ONNX's coordinate transformations,
    with the output length the float scale * n where the operator says so)."""
    x = np.arange(m, dtype=np.float64)
    width = scale * n
    if transform == "align_corners":
        return np.zeros(m) if width == 1 else x * (n - 1) / (width - 1)
    if transform == "asymmetric":
        return x / scale
    if transform == "pytorch_half_pixel":
        return np.full(m, -0.5) if width == 1 else (x + 0.5) / scale - 0.5
    if transform == "half_pixel_symmetric":
        offset = n / 2 * (1 - m / width)
        return offset + (x + 0.5) / scale - 0.5
    if transform == "tf_crop_and_resize":
        lo, hi = box
        if width == 1:
            return np.full(m, (hi - lo) * (n - 1) / 2 + lo * (n - 1))
        return x * (hi - lo) * (n - 1) / (width - 1) + lo * (n - 1)
    return (x + 0.5) / scale - 0.5  # half_pixel


def _weights(source: np.ndarray, n: int, scale: float, how: Interpolation):
    """([out, in] interpolation weights, the outputs whose source lies outside the
    input (tf_crop_and_resize extrapolates them: no weights)). Each output mixes the
    taps nearest its source coordinate x, the left one preferred: with base = ceil(x)
    - 1 and r = x - base in (0, 1], taps base - t/2 + 1 ... base + t/2, indices clamped
    to the axis (the operator pads with the edge values)."""
    base = np.ceil(source) - 1
    r = source - base
    coeffs = _coefficients(r, scale, how)  # [out, taps]
    taps = coeffs.shape[1]
    index = base[:, None] + np.arange(taps)[None, :] - (taps // 2 - 1)
    if how.exclude_outside:
        coeffs = np.where((index < 0) | (index >= n), 0.0, coeffs)
        coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
    outside = np.zeros(source.size, dtype=bool)
    if how.transform == "tf_crop_and_resize":
        outside = (source < 0) | (source > n - 1)
        coeffs = np.where(outside[:, None], 0.0, coeffs)
    a = np.zeros((source.size, n), dtype=np.float64)
    rows = np.repeat(np.arange(source.size), taps)
    np.add.at(a, (rows, np.clip(index, 0, n - 1).astype(np.int64).reshape(-1)), coeffs.reshape(-1))
    return a, outside


def _coefficients(r: np.ndarray, scale: float, how: Interpolation) -> np.ndarray:
    """[out, taps] the weights of each output's taps, r its position in (0, 1]."""
    r = r[:, None]
    if how.mode == "nearest":
        left = {
            "round_prefer_floor": r <= 0.5,
            "round_prefer_ceil": r < 0.5,
            "floor": np.ones_like(r, dtype=bool),
            "ceil": np.zeros_like(r, dtype=bool),
        }[how.nearest] & (r != 1.0)
        return np.concatenate([left, ~left], axis=1).astype(np.float64)
    if how.antialias and scale < 1.0:  # a wider filter when downsampling
        if how.mode == "linear":
            start = math.floor(-1 / scale) + 1
            taps = np.arange(start, 2 - start)[None, :]
            w = np.clip(1 - np.abs((taps - r) * scale), 0, 1)
        else:
            start = math.floor(-2 / scale) + 1
            taps = np.arange(start, 2 - start)[None, :]
            w = _cubic_kernel(np.abs((taps - r) * scale), how.cubic_a)
        return w / w.sum(axis=1, keepdims=True)
    if how.mode == "linear":
        return np.concatenate([1 - r, r], axis=1)
    distances = np.concatenate([1 + r, r, 1 - r, 2 - r], axis=1)
    return _cubic_kernel(distances, how.cubic_a)


def _cubic_kernel(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel of parameter a at distances d >= 0."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _repeat(cx: Cx, x: Value, repeats: dict[int, int]) -> Value:
    """Each index of axis a repeated repeats[a] times (an integer nearest upsample), the
    innermost axis first: each a view (the axis split into [n, 1], broadcast to [n, k],
    merged) that its reader copies. The innermost repeat interleaves single elements,
    so it is done while the tensor is smallest; the outer ones copy whole rows."""
    for a in sorted(repeats, reverse=True):
        shape = list(cx.shape(x))
        k = repeats[a]
        split = [*shape[: a + 1], SymDim(1), *shape[a + 1 :]]
        wide = [*shape[: a + 1], SymDim(k), *shape[a + 1 :]]
        spread = cx.emit(
            "broadcast", [reshape(cx, x, split)], {"shape": wide}, onnx_type=x.onnx_type
        )
        x = reshape(cx, spread, [*shape[:a], SymDim(shape[a].coef * k), *shape[a + 1 :]])  # type: ignore[union-attr]
    return x


def _interpolate(cx: Cx, x: Value, axis: int, a: np.ndarray) -> Value:
    """The product of axis `axis` of x with the interpolation matrix `a` [out, in]."""
    rank = cx.rank(x)
    weights = a.astype(np.float32)
    if axis == rank - 1:
        return cx.emit("matmul", [x, Known(weights.T.copy(), TensorProto.FLOAT)])
    if axis == rank - 2:
        return cx.emit("matmul", [Known(weights, TensorProto.FLOAT), x])
    perm = [*(i for i in range(rank) if i != axis), axis]
    moved = cx.emit("transpose", [x], {"perm": perm})
    product = cx.emit("matmul", [moved, Known(weights.T.copy(), TensorProto.FLOAT)])
    back = [perm.index(i) for i in range(rank)]
    return cx.emit("transpose", [product], {"perm": back})
