"""Normalizations the accelerator runs as single kernels: softmax and layernorm."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import TensorType
from eqsat.ops.base import (
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    normalize_axis,
    require_float,
    same_dtype,
)
from eqsat.ops.registry import register


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def _softmax_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    require_float("softmax", ts[0])
    normalize_axis("softmax", attrs["axis"], ts[0].rank)
    return ts[0]


register(
    OpDef(
        name="softmax",
        kind=OpKind.NORMALIZE,
        operands=("x",),
        attrs=(AttrSpec("axis", AttrType.INT, -1),),
        infer=_softmax_infer,
        normalize=lambda ts, attrs: {"axis": normalize_axis("softmax", attrs["axis"], ts[0].rank)},
        ref=lambda xs, attrs: softmax(xs[0], attrs["axis"]),
        flops=lambda ts, out, attrs: 5 * out.numel,
        doc="exp(x - max(x)) / sum(exp(x - max(x))) along an axis",
    )
)


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=-1, keepdims=True)
    # times each row's reciprocal deviation, as the row kernel (eqsat/row_plan.py) and
    # ONNX Runtime's kernel compute it: simulated results equal the interpreter's
    return centered * np.reciprocal(np.sqrt(var + np.float32(eps))) * gamma + beta


def _layernorm_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, gamma, beta = ts
    same_dtype("layernorm", ts)
    require_float("layernorm", x)
    if x.rank < 1:
        raise OpTypeError(f"'layernorm' needs an operand of rank >= 1, got {x}")
    d = x.shape[-1]
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t.shape != (d,):
            raise OpTypeError(f"'layernorm': {name} must have shape [{d}] to match {x}, got {t}")
    if attrs["eps"] <= 0:
        raise OpTypeError(f"'layernorm': eps must be positive, got {attrs['eps']}")
    return x


register(
    OpDef(
        name="layernorm",
        kind=OpKind.NORMALIZE,
        operands=("x", "gamma", "beta"),
        attrs=(AttrSpec("eps", AttrType.FLOAT, 1e-5),),
        infer=_layernorm_infer,
        ref=lambda xs, attrs: layernorm(xs[0], xs[1], xs[2], attrs["eps"]),
        flops=lambda ts, out, attrs: 8 * out.numel,
        doc="(x - mean) / sqrt(var + eps) * gamma + beta over the last axis",
    )
)


def rmsnorm(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    mean_square = np.mean(x * x, axis=-1, keepdims=True)
    return x * (np.float32(1.0) / np.sqrt(mean_square + np.float32(eps))) * gamma


def _rmsnorm_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, gamma = ts
    same_dtype("rmsnorm", ts)
    require_float("rmsnorm", x)
    if x.rank < 1:
        raise OpTypeError(f"'rmsnorm' needs an operand of rank >= 1, got {x}")
    d = x.shape[-1]
    if gamma.shape != (d,):
        raise OpTypeError(f"'rmsnorm': gamma must have shape [{d}] to match {x}, got {gamma}")
    if attrs["eps"] <= 0:
        raise OpTypeError(f"'rmsnorm': eps must be positive, got {attrs['eps']}")
    return x


register(
    OpDef(
        name="rmsnorm",
        kind=OpKind.NORMALIZE,
        operands=("x", "gamma"),
        attrs=(AttrSpec("eps", AttrType.FLOAT, 1e-6),),
        infer=_rmsnorm_infer,
        ref=lambda xs, attrs: rmsnorm(xs[0], xs[1], attrs["eps"]),
        flops=lambda ts, out, attrs: 5 * out.numel,
        doc="x * rsqrt(mean(x*x) + eps) * gamma over the last axis (no centering, no beta)",
    )
)
