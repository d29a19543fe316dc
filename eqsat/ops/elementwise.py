"""Elementwise ops with numpy broadcasting."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eqsat.ir.types import TensorType
from eqsat.ops.base import (
    Attrs,
    OpDef,
    OpKind,
    broadcast_shapes,
    require_float,
    same_dtype,
)
from eqsat.ops.registry import register

GELU_C = float(np.sqrt(2.0 / np.pi))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (as BERT and most accelerators compute it)."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Split by sign so that exp never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _binary_type(name: str, float_only: bool):
    def infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        dtype = same_dtype(name, in_types)
        if float_only:
            require_float(name, in_types[0])
        return TensorType(dtype, broadcast_shapes(*(t.shape for t in in_types)))

    return infer


def _unary_type(name: str, float_only: bool):
    def infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        if float_only:
            require_float(name, in_types[0])
        return in_types[0]

    return infer


def _per_element(cost: int):
    def flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
        return cost * out.numel

    return flops


BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], bool, str]] = {
    "add": (np.add, False, "a + b"),
    "sub": (np.subtract, False, "a - b"),
    "mul": (np.multiply, False, "a * b"),
    "div": (np.divide, True, "a / b"),
    "maximum": (np.maximum, False, "max(a, b)"),
    "minimum": (np.minimum, False, "min(a, b)"),
}

# name -> (function, float only, FLOPs per element, doc)
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, int, str]] = {
    "neg": (np.negative, False, 1, "-x"),
    "relu": (lambda x: np.maximum(x, 0), False, 1, "max(x, 0)"),
    "gelu": (gelu, True, 8, "GELU (tanh approximation)"),
    "sigmoid": (_sigmoid, True, 4, "1 / (1 + exp(-x))"),
    "tanh": (np.tanh, True, 4, "tanh(x)"),
    "exp": (np.exp, True, 4, "exp(x)"),
    "sqrt": (np.sqrt, True, 4, "sqrt(x)"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), True, 4, "1 / sqrt(x)"),
    "reciprocal": (lambda x: 1.0 / x, True, 1, "1 / x"),
}


def _binary_ref(fn):
    def ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(inputs[0], inputs[1])

    return ref


def _unary_ref(fn):
    def ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(inputs[0])

    return ref


for _name, (_fn, _float_only, _doc) in BINARY.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.ELEMENTWISE,
            operands=("a", "b"),
            infer=_binary_type(_name, _float_only),
            ref=_binary_ref(_fn),
            flops=_per_element(1),
            doc=_doc + " (numpy broadcasting)",
            egg_shape="(Bcast {a} {b})",
        )
    )

for _name, (_fn, _float_only, _cost, _doc) in UNARY.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.ELEMENTWISE,
            operands=("x",),
            infer=_unary_type(_name, _float_only),
            ref=_unary_ref(_fn),
            flops=_per_element(_cost),
            doc=_doc,
        )
    )
