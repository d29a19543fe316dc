"""Elementwise ops with numpy broadcasting."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eqsat.ir.types import TensorType
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
from eqsat.ops.mathfn import erf
from eqsat.ops.registry import register
from eqsat.ops.unary import per_element, register_unary, saturating

GELU_C = float(np.sqrt(2.0 / np.pi))
SQRT_HALF = float(np.sqrt(0.5))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (as BERT and most accelerators compute it)."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """GELU exactly: x/2 * (1 + erf(x / sqrt(2))), with x / sqrt(2) as x * f32(sqrt(1/2))."""
    return 0.5 * x * (1.0 + erf(x * np.float32(SQRT_HALF)))


GELU_APPROXIMATIONS = ("tanh", "none")
GELU_APPROXIMATE = AttrSpec(
    "approximate",
    AttrType.STR,
    "tanh",
    "tanh (the tanh approximation) or none (exact: x/2 * (1 + erf(x / sqrt 2)))",
)


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b. Integers truncate toward zero (C and ONNX) and x / 0 is 0; the quotient
    saturates in the type like other integer results (only min / -1 overflows)."""
    if np.issubdtype(a.dtype, np.floating):
        return np.divide(a, b)
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    nonzero = wide_b != 0
    q = np.abs(wide_a) // np.where(nonzero, np.abs(wide_b), 1)
    q = np.where(nonzero, np.where((wide_a < 0) != (wide_b < 0), -q, q), 0)
    return q.astype(a.dtype)


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


BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], bool, str]] = {
    "add": (np.add, False, "a + b"),
    "sub": (np.subtract, False, "a - b"),
    "mul": (np.multiply, False, "a * b"),
    "div": (divide, False, "a / b (integers: truncated toward zero, x / 0 = 0)"),
    "maximum": (np.maximum, False, "max(a, b)"),
    "minimum": (np.minimum, False, "min(a, b)"),
}

# name -> (function, float only, FLOPs per element, doc)
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, int, str]] = {
    "neg": (np.negative, False, 1, "-x"),
    "relu": (lambda x: np.maximum(x, 0), False, 1, "max(x, 0)"),
    "sigmoid": (_sigmoid, True, 4, "1 / (1 + exp(-x))"),
    "tanh": (np.tanh, True, 4, "tanh(x)"),
    "exp": (np.exp, True, 4, "exp(x)"),
    "sqrt": (np.sqrt, True, 4, "sqrt(x)"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), True, 4, "1 / sqrt(x)"),
    "reciprocal": (lambda x: 1.0 / x, True, 1, "1 / x"),
}


def _binary_ref(fn):
    exact = saturating(fn)  # integers: exact, then saturated to the dtype (as hwsim)

    def ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return exact(inputs[0], inputs[1])

    return ref


for _name, (_fn, _float_only, _doc) in BINARY.items():
    register(
        OpDef(
            name=_name,
            kind=OpKind.ELEMENTWISE,
            operands=("a", "b"),
            infer=_binary_type(_name, _float_only),
            ref=_binary_ref(_fn),
            flops=per_element(1),
            doc=_doc + " (numpy broadcasting)",
            egg_shape="(Bcast {a} {b})",
        )
    )

register_unary(UNARY)


def _gelu_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    require_float("gelu", in_types[0])
    if attrs["approximate"] not in GELU_APPROXIMATIONS:
        raise OpTypeError(f"'gelu': approximate must be tanh or none, got '{attrs['approximate']}'")
    return in_types[0]


def _gelu_ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    with np.errstate(all="ignore"):
        return gelu(inputs[0]) if attrs["approximate"] == "tanh" else gelu_erf(inputs[0])


register(
    OpDef(
        name="gelu",
        kind=OpKind.ELEMENTWISE,
        operands=("x",),
        attrs=(GELU_APPROXIMATE,),
        infer=_gelu_infer,
        ref=_gelu_ref,
        flops=per_element(8),
        doc="GELU: tanh approximation (approximate=tanh) or exact with erf (approximate=none)",
    )
)
