"""Tile expressions: the vector-unit program of an elementwise kernel or an epilogue.

Leaves are operands loaded tile by tile (or a tile the kernel already holds, like a
matmul accumulator); immediates are constants folded into instructions. Operators are
those of the ISA: `Un` (unary), `Bin` (binary), `Sel` (select: picks, never computes),
`Cvt` (store into another dtype: rounds and saturates), `Requant` (i32 -> i8 by a
fixed-point multiplier). Floats are computed in f32 tiles and integers in i32 tiles;
only the root writes the output dtype, which is how a fused kernel avoids rounding its
intermediates.

Subtrees without leaves fold to an `Imm` with exactly the machine's arithmetic
(hwsim.semantics), so folding never changes a result.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields, replace

import numpy as np

from eqsat.quant.fixedpoint import multiplier_shift
from hwsim import semantics
from hwsim.dtypes import INT_RANGE, is_float, to_value

from .views import Imm


@dataclass(frozen=True)
class Leaf:
    index: int


@dataclass(frozen=True)
class Un:
    op: str
    x: Expr
    imm: float | None = None


@dataclass(frozen=True)
class Bin:
    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Sel:
    """a where cond is nonzero, else b (the `select` instruction)."""

    cond: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Fmadd:
    """a * b + c rounded once (the `fma` instruction)."""

    a: Expr
    b: Expr
    c: Expr


@dataclass(frozen=True)
class Cvt:
    dtype: str
    x: Expr


@dataclass(frozen=True)
class Requant:
    x: Expr
    multiplier: int
    shift: int
    zero_point: int
    rounding: str = "even"
    dtype: str = "i8"  # the result: i8, or i32 (saturated to its range)


@dataclass(frozen=True)
class RequantCh:
    """Per-channel requantization: column c of a tile uses table[channel(c)], where the
    channel of a column is read off the access pattern of leaf `ch` (a vector with one
    entry per channel, loaded like any operand), so it works in any tile space whose
    columns - not rows - walk the channels. One `requantize` instruction per column;
    `lo` clamps below (relu in the quantized domain). A space whose rows walk the
    channels (a convolution's [N, O, pixels] epilogue) gets one per row instead; `hi`
    clamps above (ReLU6)."""

    x: Expr
    ch: Leaf
    table: tuple[tuple[int, int], ...]  # (multiplier, shift) per channel
    zero_point: int
    lo: int = -128
    rounding: str = "even"
    hi: int = 127


@dataclass(frozen=True)
class Cust:
    """The hardware's declared instruction `name` (hwsim/custom.py) of its operands:
    one `custom` instruction, which broadcasts rows and columns itself."""

    name: str
    args: tuple[Expr, ...]


Expr = Leaf | Imm | Un | Bin | Sel | Fmadd | Cvt | Requant | RequantCh | Cust
_EXPR_TYPES = (Leaf, Imm, Un, Bin, Sel, Fmadd, Cvt, Requant, RequantCh, Cust)
COMMUTATIVE = frozenset({"add", "mul", "max", "min"})
# comparisons and logic: a 0/1 result, so their operands must not be rounded to it
FLAGS = frozenset({"eq", "lt", "le", "gt", "ge", "and", "or", "xor"})
# op(a, b) == MIRRORED[op](b, a): lets a broadcast or immediate first operand go second
MIRRORED = {
    **{op: op for op in (*COMMUTATIVE, "eq", "and", "or", "xor")},
    **{"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"},
}


def compute_dtype(dtype: str) -> str:
    """The dtype intermediates of this kind are computed in."""
    return "f32" if is_float(dtype) else "i32"


def dtype_of(e: Expr, leaf_dtypes: list[str]) -> str:
    """The dtype an expression node produces (intermediates: f32 or i32)."""
    match e:
        case Leaf(index=i):
            return leaf_dtypes[i]
        case Imm(dtype=d):
            return d
        case Cvt(dtype=d):
            return d
        case Requant(dtype=d):
            return d
        case RequantCh():
            return "i8"
        case Un(x=x):
            return compute_dtype(dtype_of(x, leaf_dtypes))
        case Bin(a=a) | Sel(a=a) | Fmadd(a=a):
            return compute_dtype(dtype_of(a, leaf_dtypes))
        case Cust(args=args):
            return compute_dtype(dtype_of(args[0], leaf_dtypes))
    raise TypeError(e)


def _array(v: Imm) -> np.ndarray:
    return np.full((1, 1), v.value, dtype=np.float32 if is_float(v.dtype) else np.int64)


def fold(e: Expr) -> Expr:
    """Fold every subtree without leaves into an Imm (machine arithmetic)."""
    match e:
        case Leaf() | Imm():
            return e
        case Un(op=op, x=x, imm=imm):
            x = fold(x)
            if isinstance(x, Imm):
                d = compute_dtype(x.dtype)
                return _imm(semantics.unary(op, _array(x), imm), d)
            return Un(op, x, imm)
        case Bin(op=op, a=a, b=b):
            a, b = fold(a), fold(b)
            if isinstance(a, Imm) and isinstance(b, Imm):
                d = compute_dtype(a.dtype)
                return _imm(semantics.binary(op, _array(a), _array(b)), d)
            return Bin(op, a, b)
        case Sel(cond=c, a=a, b=b):
            c, a, b = fold(c), fold(a), fold(b)
            if isinstance(c, Imm):
                return a if c.value != 0 else b
            return Sel(c, a, b)
        case Fmadd(a=a, b=b, c=c):
            a, b, c = fold(a), fold(b), fold(c)
            if isinstance(a, Imm) and isinstance(b, Imm) and isinstance(c, Imm):
                return _imm(semantics.fma(_array(a), _array(b), _array(c)), "f32")
            return Fmadd(a, b, c)
        case Cvt(dtype=d, x=x):
            x = fold(x)
            return _imm(_array(x), d) if isinstance(x, Imm) else Cvt(d, x)
        case Requant(x=x):
            x = fold(x)
            if isinstance(x, Imm):
                lo, hi = INT_RANGE[e.dtype]
                q = semantics.requantize(
                    _array(x), e.multiplier, e.shift, e.zero_point, e.rounding, lo, hi
                )
                return _imm(q, e.dtype)
            return Requant(x, e.multiplier, e.shift, e.zero_point, e.rounding, e.dtype)
        case RequantCh(x=x):
            return RequantCh(fold(x), e.ch, e.table, e.zero_point, e.lo, e.rounding, e.hi)
        case Cust(name=name, args=args):  # its operands are leaves (lower_instruction)
            return Cust(name, tuple(fold(a) for a in args))
    raise TypeError(e)


def shared(e: Expr) -> Expr:
    """e with its structurally equal subexpressions as one object, so that a kernel
    computes each once (TileExpr evaluates an object once per tile): SiLU of a
    dequantized accumulator, mul(d, sigmoid(d)), computes d once, not once per use.
    Immediates are equal by their bits (-0.0 is not 0.0)."""
    memo: dict[tuple, Expr] = {}

    def go(x: Expr) -> tuple[Expr, tuple]:
        if isinstance(x, Imm):
            v = struct.pack("<d", x.value) if isinstance(x.value, float) else x.value
            return x, ("imm", v, x.dtype)  # (an Imm of the value -0.0 stays one)
        if isinstance(x, Leaf):
            return x, ("leaf", x.index)
        changes: dict[str, object] = {}
        key: list[object] = [type(x).__name__]
        for f in fields(x):  # type: ignore[arg-type]
            v = getattr(x, f.name)
            if isinstance(v, _EXPR_TYPES):
                changes[f.name], k = go(v)
                key.append(k)
            elif isinstance(v, tuple) and v and all(isinstance(a, _EXPR_TYPES) for a in v):
                pairs = [go(a) for a in v]
                changes[f.name] = tuple(a for a, _ in pairs)
                key.append(tuple(k for _, k in pairs))
            else:  # an attribute: a float by its bits too
                key.append(struct.pack("<d", v) if isinstance(v, float) else v)
        k = tuple(key)
        if k not in memo:
            memo[k] = replace(x, **changes)  # type: ignore[type-var]
        return memo[k], k

    return go(e)[0]


def _imm(values: np.ndarray, dtype: str) -> Imm:
    v = to_value(np.asarray(values).reshape(1, 1), dtype)
    return Imm(float(v[0, 0]), dtype)


def leaves_of(e: Expr) -> set[int]:
    match e:
        case Leaf(index=i):
            return {i}
        case Imm():
            return set()
        case Bin(a=a, b=b):
            return leaves_of(a) | leaves_of(b)
        case Sel(cond=c, a=a, b=b) | Fmadd(a=a, b=b, c=c):
            return leaves_of(c) | leaves_of(a) | leaves_of(b)
        case RequantCh(x=x, ch=ch):
            return leaves_of(x) | {ch.index}
        case Cust(args=args):
            return set().union(*(leaves_of(a) for a in args))
    return leaves_of(e.x)  # type: ignore[union-attr]


def ops_of(e: Expr) -> list[Expr]:
    """Operator nodes bottom-up (each once per occurrence)."""
    match e:
        case Leaf() | Imm():
            return []
        case Bin(a=a, b=b):
            return [*ops_of(a), *ops_of(b), e]
        case Sel(cond=c, a=a, b=b) | Fmadd(a=a, b=b, c=c):
            return [*ops_of(c), *ops_of(a), *ops_of(b), e]
        case Cust(args=args):
            return [*(o for a in args for o in ops_of(a)), e]
    return [*ops_of(e.x), e]  # type: ignore[union-attr]


def requant_params(scale: float) -> tuple[int, int]:
    """(multiplier < 2**31, shift <= 62) with multiplier / 2**shift closest to scale:
    the reference's own fixed-point form (eqsat.quant.fixedpoint)."""
    if scale <= 0:
        raise ValueError(scale)
    return multiplier_shift(scale)
