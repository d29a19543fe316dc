"""The vector unit's math beyond + - * max min: transcendental and rounding functions,
integer division and powers, comparisons, logic and selection, on whole tiles.

Values are as in semantics.py: f32 arrays for float tiles, int64 arrays for integer
tiles. Comparisons and logic produce 0/1 in the kind of their first operand (f32 or
integer); logic counts nonzero (nan included) as true. Integer results stay exact
until they are stored, where they saturate like every integer result: division
truncates toward zero (x / 0 = 0) and a power too large for int64 saturates at
+-2**62 first.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
_SQRT_HALF = F32(np.sqrt(0.5))
_POWER_LIMIT = 2**62


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function in f32 (scipy's, imported on first use)."""
    from scipy.special import erf as _erf

    return _erf(x.astype(F32, copy=False))


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """Exact GELU: x/2 * (1 + erf(x * sqrt(1/2))), in f32."""
    return F32(0.5) * x * (F32(1.0) + erf(x * _SQRT_HALF))


def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu"


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integers truncate toward zero and x / 0 is 0."""
    if not _is_int(a):
        return np.divide(a, b)
    nonzero = b != 0
    q = np.abs(a) // np.where(nonzero, np.abs(b), 1)
    return np.where(nonzero, np.where((a < 0) != (b < 0), -q, q), 0)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b. Integers: exact, saturating at +-2**62; b < 0 gives 1 / a**-b truncated
    (1 for a == 1, +-1 for a == -1, 0 otherwise)."""
    if not _is_int(a):
        return np.power(a, b)
    a, b = np.broadcast_arrays(a, np.asarray(b, dtype=np.int64))
    e = np.maximum(b, 0)
    big = np.abs(a).astype(np.float64) ** e.astype(np.float64) >= float(_POWER_LIMIT)
    exact = np.power(np.where(big, 0, a), np.where(big, 0, e))
    negative_result = (a < 0) & (e % 2 == 1)
    p = np.where(big, np.where(negative_result, -_POWER_LIMIT, _POWER_LIMIT), exact)
    inverse = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 1, -1, 1), 0))
    return np.where(b < 0, inverse, p)


def _flag(fn):
    """A 0/1 result in the kind of the first operand."""
    return lambda a, b: fn(a, b).astype(a.dtype)


COMPARE = {
    "eq": _flag(np.equal),
    "lt": _flag(np.less),
    "le": _flag(np.less_equal),
    "gt": _flag(np.greater),
    "ge": _flag(np.greater_equal),
}

LOGIC = {
    "and": _flag(lambda a, b: (a != 0) & (b != 0)),
    "or": _flag(lambda a, b: (a != 0) | (b != 0)),
    "xor": _flag(lambda a, b: (a != 0) ^ (b != 0)),
}

UNARY = {
    "abs": np.abs,
    "erf": erf,
    "gelu_erf": gelu_erf,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "not": lambda x: (x == 0).astype(x.dtype),
    "isnan": lambda x: np.isnan(x).astype(x.dtype),
}

BINARY = {"pow": power, **COMPARE, **LOGIC}


def select(
    cond: np.ndarray,
    a: np.ndarray | float,
    b: np.ndarray | float,
    integer: bool,
    shape: tuple[int, int],
) -> np.ndarray:
    """a where cond != 0, else b, broadcast to `shape`: the values are picked, never
    computed on, so inf and nan pass unchanged. Immediates take the integer or f32 kind."""

    def value(v: np.ndarray | float) -> np.ndarray:
        if isinstance(v, np.ndarray):
            return v
        return np.asarray(np.int64(v) if integer else F32(v))

    return np.broadcast_to(np.where(cond != 0, value(a), value(b)), shape)


def fma(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """a * b + c rounded once to f32 (IEEE fused multiply-add, ties to even), as x86's
    vfmadd and ONNX Runtime's kernels built on it compute it.

    The product of two f32 values is exact in f64 (48 significant bits); the sum is
    rounded to f64 to odd (the f64 neighbour of the exact sum whose last bit is 1 when
    the sum is inexact: TwoSum gives the exact error), and an f64 rounded to odd
    rounds to f32 exactly as the exact sum would (53 >= 24 + 2 bits)."""
    a64 = np.asarray(a, dtype=F32).astype(np.float64)
    c64 = np.asarray(c, dtype=F32).astype(np.float64)
    with np.errstate(all="ignore"):  # inf * 0 is nan, as the machine's
        p = a64 * np.asarray(b, dtype=F32).astype(np.float64)
        s = p + c64
        back = s - p
        err = (p - (s - back)) + (c64 - back)  # exact: p + c64 == s + err
        even = (s.view(np.int64) & 1) == 0
        odd = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
        s = np.where((err != 0) & even & np.isfinite(s), odd, s)
        return s.astype(F32)
