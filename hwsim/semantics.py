"""What each compute instruction does to whole tiles of values, with numpy.

Values are f32 arrays for f32/bf16 tiles (bf16 rounding happens when a tile is
stored) and int64 arrays for integer tiles, so integer arithmetic never wraps before
it is saturated into the destination. Exceptions to saturation: the matmul
accumulator wraps modulo 2**32 like a hardware i32 adder.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import vecmath

F32 = np.float32
_SQRT_2_OVER_PI = F32(np.sqrt(2.0 / np.pi))


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    inner = _SQRT_2_OVER_PI * (x + F32(0.044715) * x * x * x)
    return F32(0.5) * x * (F32(1.0) + np.tanh(inner))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), split by sign so exp never overflows: e / (1 + e) with
    e = exp(-|x|) below zero (the reference's arithmetic, bit for bit)."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, F32(1.0) / (F32(1.0) + e), e / (F32(1.0) + e)).astype(x.dtype)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda x: x,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)),
    "gelu": _gelu,
    "exp": np.exp,
    "neg": np.negative,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: F32(1.0) / np.sqrt(x),
    "reciprocal": lambda x: F32(1.0) / x,
    "sigmoid": lambda x: _sigmoid(x),
    "tanh": np.tanh,
    **vecmath.UNARY,  # abs, erf, gelu_erf, log, sin, cos, floor, ceil, trunc, not, isnan
}

BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": vecmath.divide,  # integers truncate toward zero, x / 0 = 0
    "max": np.maximum,
    "min": np.minimum,
    **vecmath.BINARY,  # pow, eq lt le gt ge, and or xor
}

REDUCE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sum": lambda x: x.sum(axis=1, keepdims=True, dtype=x.dtype),
    "max": lambda x: x.max(axis=1, keepdims=True),
}


def unary(op: str, x: np.ndarray, imm: float | None = None) -> np.ndarray:
    """Elementwise unary op; `scale` multiplies by the immediate (in f32)."""
    with np.errstate(all="ignore"):
        if op == "scale":
            return x * F32(imm)
        return UNARY[op](x)


def binary(op: str, a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """Elementwise binary op; b broadcasts (row 1 x c, column r x 1, or a scalar)."""
    if not isinstance(b, np.ndarray):
        b = a.dtype.type(b)
    with np.errstate(all="ignore"):
        return BINARY[op](a, b)


# dst = a where cond != 0 else b: values are picked, never computed on (exact for inf/nan)
select = vecmath.select
# dst = a * b + c rounded once to f32 (numpy broadcasting; exact: vecmath.fma)
fma = vecmath.fma


def reduce_rows(op: str, x: np.ndarray) -> np.ndarray:
    """Reduce each row to one value: r x c -> r x 1."""
    return REDUCE[op](x)


def wrap_i32(x: np.ndarray) -> np.ndarray:
    """int64 values wrapped to the i32 range (two's complement overflow)."""
    return ((x + 2**31) % 2**32) - 2**31


def matmul(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None, integer: bool) -> np.ndarray:
    """a @ b (+ acc). Integer products are exact: i8*i8 sums fit f64 for K < 2**37."""
    if integer:
        prod = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
        return wrap_i32(prod if acc is None else prod + acc)
    prod = a.astype(F32, copy=False) @ b.astype(F32, copy=False)
    return prod if acc is None else acc + prod


def requantize(
    x: np.ndarray,
    multiplier: int,
    shift: int,
    zero_point: int,
    rounding: str,
    lo: int = -128,
    hi: int = 127,
) -> np.ndarray:
    """round(x * multiplier / 2**shift) + zero_point, saturated to [lo, hi] (the
    destination's range: i8 by default, or i32).

    Exact in int64 (|x * multiplier| < 2**62). `away` rounds halves away from zero,
    `even` rounds halves to the even neighbour. eqsat.quant.fixedpoint is the same
    arithmetic (tests/quant/test_int_semantics.py checks them against each other).
    """
    p = x.astype(np.int64) * np.int64(multiplier)
    if shift == 0:
        q = p
    elif rounding == "away":
        half = np.int64(1) << np.int64(shift - 1)
        q = np.sign(p) * ((np.abs(p) + half) >> np.int64(shift))
    else:
        q = p >> np.int64(shift)  # floor
        rem = p - (q << np.int64(shift))
        half = np.int64(1) << np.int64(shift - 1)
        q = q + ((rem > half) | ((rem == half) & (q & 1 == 1)))
    return np.clip(q + zero_point, lo, hi)
