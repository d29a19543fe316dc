"""Elementwise math beyond arithmetic: erf, pow, clip, abs, log, sin, cos, floor, ceil,
trunc, and the piecewise-linear activations hard_sigmoid and hard_swish.

Floats compute in f32 and float attributes are rounded to f32 first, as the
accelerator's immediates are. Integer results wrap in their type like the other
integer ops of the reference (the accelerator saturates instead: the two agree where
nothing overflows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    broadcast_shapes,
    require_float,
    same_dtype,
)
from eqsat.ops.registry import register
from eqsat.ops.unary import per_element, register_unary, unary_ref, unary_type

F32 = np.float32


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function, in the dtype of x (scipy's, correctly rounded to f32)."""
    from scipy.special import erf as _erf  # imported on first use: scipy.special is slow

    return _erf(x)


def fused_multiply_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once (the machine's fma, hwsim.vecmath.fma), in numpy's
    broadcasting."""
    from hwsim.vecmath import fma

    return fma(*np.broadcast_arrays(a, b, c))


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b for integer arrays: the exact power saturated to a's type, as every
    integer result of the machine (hwsim.vecmath.power, eqsat/quant/fixedpoint.py).

    A negative exponent gives 1 / a**-b truncated toward zero (C's integer division):
    1 for a == 1, +-1 for a == -1 (the sign of (-1)**b), and 0 for every other a,
    0 included (where 1 / 0 would be undefined, the result is 0 as for integer div).
    """
    from hwsim.vecmath import power

    info = np.iinfo(a.dtype)
    with np.errstate(over="ignore"):  # |a| ** b beyond float64 only marks saturation
        p = power(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return np.asarray(np.clip(p, info.min, info.max), dtype=a.dtype)


def _pow_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = xs
    if np.issubdtype(a.dtype, np.floating):
        with np.errstate(all="ignore"):
            return np.power(a, b)
    return int_pow(a, b)


def _pow_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = same_dtype("pow", ts)
    return TensorType(dtype, broadcast_shapes(*(t.shape for t in ts)))


register(
    OpDef(
        name="pow",
        kind=OpKind.ELEMENTWISE,
        operands=("a", "b"),
        infer=_pow_infer,
        ref=_pow_ref,
        flops=lambda ts, out, attrs: 8 * out.numel,
        doc="a ** b (numpy broadcasting); integers: exact powers saturated to the type, "
        "b < 0 gives 1/a**-b truncated (1 for a == 1, +-1 for a == -1, else 0)",
        egg_shape="(Bcast {a} {b})",
    )
)


# ------------------------------------------------------------------------- fma


def _fma_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = same_dtype("fma", ts)
    if dtype is not DType.F32:
        raise OpTypeError(f"'fma' computes in f32, got {ts[0]}")
    return TensorType(dtype, broadcast_shapes(*(t.shape for t in ts)))


register(
    OpDef(
        name="fma",
        kind=OpKind.ELEMENTWISE,
        operands=("a", "b", "c"),
        infer=_fma_infer,
        ref=lambda xs, attrs: fused_multiply_add(xs[0], xs[1], xs[2]),
        flops=lambda ts, out, attrs: 2 * out.numel,
        doc="a * b + c rounded once to f32 (IEEE fused multiply-add; numpy broadcasting): "
        "ONNX Runtime's int8 elementwise kernels are written with it",
        egg_shape="(Bcast {a} (Bcast {b} {c}))",
    )
)


# ------------------------------------------------------------------------ clip


Bounds = tuple[float | int | None, float | int | None]


def clip_bounds(dtype: DType, attrs: Attrs) -> Bounds:
    """(lower, upper) bounds clip applies to a tensor of `dtype`; None where the bound
    cannot change any value of the type (an infinite float bound, an integer bound
    beyond the type's range). Floats: the bounds rounded to f32. Integers: ceil(min)
    and floor(max), saturated to the type's range."""
    return _bounds(None if dtype.is_float else np.iinfo(dtype.np_dtype), attrs)


def _bounds(info: np.iinfo | None, attrs: Attrs) -> Bounds:
    """clip_bounds for floats (info None) or the integer type `info` describes."""
    lo, hi = float(attrs["min"]), float(attrs["max"])
    if info is None:
        with np.errstate(over="ignore"):
            flo, fhi = F32(lo), F32(hi)
        return (None if flo == -np.inf else flo), (None if fhi == np.inf else fhi)
    bottom, top = int(info.min), int(info.max)
    ilo = bottom if lo <= bottom else top if lo >= top else math.ceil(lo)
    ihi = top if hi >= top else bottom if hi <= bottom else math.floor(hi)
    return (None if ilo == bottom else ilo), (None if ihi == top else ihi)


def _clip_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    for key in ("min", "max"):
        if math.isnan(attrs[key]):
            raise OpTypeError(f"'clip': {key} must be a number or +-inf, not nan")
    return ts[0]


def _clip_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    integer = np.issubdtype(x.dtype, np.integer)
    lo, hi = _bounds(np.iinfo(x.dtype) if integer else None, attrs)
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, dtype=x.dtype))
    return x


def _clip_flops(ts: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return sum(b is not None for b in clip_bounds(out.dtype, attrs)) * out.numel


register(
    OpDef(
        name="clip",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        attrs=(
            AttrSpec("min", AttrType.FLOAT, -math.inf, "lower bound"),
            AttrSpec("max", AttrType.FLOAT, math.inf, "upper bound"),
        ),
        infer=_clip_infer,
        ref=_clip_ref,
        flops=_clip_flops,
        doc="min(max(x, min), max) (min > max gives max, as ONNX); integers: "
        "ceil(min) and floor(max) saturated to the type",
    )
)


# ------------------------------------------------------------------ unary math


# name -> (function, float only, FLOPs per element, doc)
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, int, str]] = {
    "abs": (np.abs, False, 1, "|x| (integers saturate: abs of the type's minimum is its maximum)"),
    "erf": (erf, True, 4, "erf(x), the Gauss error function"),
    "log": (np.log, True, 4, "natural logarithm (nan below 0, -inf at 0)"),
    "sin": (np.sin, True, 4, "sin(x)"),
    "cos": (np.cos, True, 4, "cos(x)"),
    "floor": (np.floor, True, 1, "the largest integer <= x"),
    "ceil": (np.ceil, True, 1, "the smallest integer >= x"),
    "trunc": (
        np.trunc,
        True,
        1,
        "x rounded toward zero (ONNX Cast float -> int; cast rounds to nearest even)",
    ),
}

register_unary(UNARY)


# ------------------------------------------------- piecewise-linear activations


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """min(max(alpha * x + beta, 0), 1) in f32 (alpha, beta rounded to f32)."""
    return np.minimum(np.maximum(x * F32(alpha) + F32(beta), F32(0.0)), F32(1.0))


HARD_SWISH_ALPHA = 1.0 / 6.0
HARD_SWISH_BETA = 0.5


def _hard_sigmoid_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    require_float("hard_sigmoid", ts[0])
    for key in ("alpha", "beta"):
        value = attrs[key]
        if not math.isfinite(value) or abs(value) > float(np.finfo(F32).max):
            raise OpTypeError(f"'hard_sigmoid': {key} must be a finite f32 number, got {value}")
    return ts[0]


def _hard_sigmoid_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    with np.errstate(all="ignore"):
        return hard_sigmoid(xs[0], attrs["alpha"], attrs["beta"])


register(
    OpDef(
        name="hard_sigmoid",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        attrs=(
            AttrSpec("alpha", AttrType.FLOAT, 0.2, "slope"),
            AttrSpec("beta", AttrType.FLOAT, 0.5, "offset"),
        ),
        infer=_hard_sigmoid_infer,
        ref=_hard_sigmoid_ref,
        flops=per_element(4),
        doc="clip(alpha * x + beta, 0, 1)",
    )
)

register(
    OpDef(
        name="hard_swish",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        infer=unary_type("hard_swish", True),
        ref=unary_ref(lambda x: x * hard_sigmoid(x, HARD_SWISH_ALPHA, HARD_SWISH_BETA)),
        flops=per_element(5),
        doc="x * hard_sigmoid(x, alpha=1/6, beta=0.5)",
    )
)
