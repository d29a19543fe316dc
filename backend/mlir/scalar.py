"""Scalar semantics of the elementwise ops, written into linalg.generic bodies.

One table, registry op name -> writer. A writer gets the body, its operands as
(ssa, element type) and the op's attributes, and returns (ssa, element type) of its
result. Floating-point ops compute in f32 (the reference interpreter widens bf16 to
f32 too); the caller narrows to the node's dtype. Integer ops have the interpreter's
and hwsim's semantics (eqsat/quant/fixedpoint.py): computed exactly in i64 and
saturated to their type (division by zero is 0); only an integer matrix product's i32
accumulator wraps (linalg.quantized_matmul)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from eqsat.ir.types import DType
from eqsat.ops.elementwise import GELU_C, SQRT_HALF
from eqsat.ops.mathfn import HARD_SWISH_ALPHA, HARD_SWISH_BETA, clip_bounds

from .core import INT_RANGE, Body, MlirEmitError, f32, is_float
from .qscalar import QUANT_SCALAR

Scalar = tuple[str, str]  # (ssa name, element type)
Writer = Callable[[Body, list[Scalar], Mapping], Scalar]


WIDE = "i64"  # integer results are computed exactly in it, then saturated


def narrow(b: Body, v: Scalar, dtype: str) -> str:
    """A computed scalar as `dtype` (the node's element type); a wider integer
    saturates into a narrower one."""
    value, have = v
    if have == dtype:
        return value
    if is_float(have) and is_float(dtype):
        return b.to_float(value, have, dtype)
    if not is_float(have) and not is_float(dtype):
        if _bits(have) < _bits(dtype):
            return b.op(f"arith.extsi {value} : {have} to {dtype}")
        return saturate(b, value, have, dtype)
    raise MlirEmitError(f"internal: cannot narrow {have} to {dtype}")


def saturate(b: Body, value: str, have: str, dtype: str) -> str:
    """An integer of type `have` clamped to `dtype`'s range and truncated to it."""
    lo, hi = INT_RANGE[dtype]
    c = b.op(f"arith.maxsi {value}, {b.const(lo, have)} : {have}")
    c = b.op(f"arith.minsi {c}, {b.const(hi, have)} : {have}")
    return b.op(f"arith.trunci {c} : {have} to {dtype}")


def widen(b: Body, value: str, have: str) -> str:
    return value if have == WIDE else b.op(f"arith.extsi {value} : {have} to {WIDE}")


def _bits(dtype: str) -> int:
    return int(dtype[1:])


def _float_binary(op: str, int_op: str | None, exact: bool = False) -> Writer:
    """`exact`: the integer op can leave the type's range (add, sub, mul): computed in
    i64 and saturated."""

    def write(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
        (a, ta), (c, tc) = xs
        if is_float(ta):
            return b.op(f"arith.{op} {f32(b, xs[0])}, {f32(b, xs[1])} : f32"), "f32"
        if int_op is None:
            raise MlirEmitError(f"integer operands of arith.{op}")
        if not exact:
            return b.op(f"arith.{int_op} {a}, {c} : {ta}"), ta
        wide = b.op(f"arith.{int_op} {widen(b, a, ta)}, {widen(b, c, tc)} : {WIDE}")
        return saturate(b, wide, WIDE, ta), ta

    return write


def _div(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    (a, t), (c, _) = xs
    if is_float(t):
        return b.op(f"arith.divf {f32(b, xs[0])}, {f32(b, xs[1])} : f32"), "f32"
    # truncated toward zero in i64 (where min / -1 does not overflow), x / 0 = 0,
    # saturated to the type
    w = WIDE
    wa, wc = widen(b, a, t), widen(b, c, xs[1][1])
    zero = b.const(0, w)
    is_zero = b.op(f"arith.cmpi eq, {wc}, {zero} : {w}")
    safe = b.op(f"arith.select {is_zero}, {b.const(1, w)}, {wc} : {w}")
    q = b.op(f"arith.divsi {wa}, {safe} : {w}")
    q = b.op(f"arith.select {is_zero}, {zero}, {q} : {w}")
    return saturate(b, q, w, t), t


def _unary_math(op: str, int_op: str | None = None) -> Writer:
    def write(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
        x, t = xs[0]
        if not is_float(t):
            if int_op is None:
                raise MlirEmitError(f"integer operand of {op}")
            # |min| leaves the type: computed in i64, saturated
            return saturate(b, b.op(f"{int_op} {widen(b, x, t)} : {WIDE}"), WIDE, t), t
        return b.op(f"{op} {f32(b, xs[0])} : f32"), "f32"

    return write


def _neg(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x, t = xs[0]
    if is_float(t):
        return b.op(f"arith.negf {f32(b, xs[0])} : f32"), "f32"
    negated = b.op(f"arith.subi {b.const(0, WIDE)}, {widen(b, x, t)} : {WIDE}")
    return saturate(b, negated, WIDE, t), t


def _relu(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x, t = xs[0]
    if is_float(t):
        return b.op(f"arith.maximumf {f32(b, xs[0])}, {b.const(0.0, 'f32')} : f32"), "f32"
    return b.op(f"arith.maxsi {x}, {b.const(0, t)} : {t}"), t


def _sigmoid_f(b: Body, x: str) -> str:
    neg = b.op(f"arith.negf {x} : f32")
    e = b.op(f"math.exp {neg} : f32")
    den = b.op(f"arith.addf {b.const(1.0, 'f32')}, {e} : f32")
    return b.op(f"arith.divf {b.const(1.0, 'f32')}, {den} : f32")


def _sigmoid(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return _sigmoid_f(b, f32(b, xs[0])), "f32"


def _reciprocal(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return b.op(f"arith.divf {b.const(1.0, 'f32')}, {f32(b, xs[0])} : f32"), "f32"


def _rsqrt(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    root = b.op(f"math.sqrt {f32(b, xs[0])} : f32")
    return b.op(f"arith.divf {b.const(1.0, 'f32')}, {root} : f32"), "f32"


def gelu_f(b: Body, x: str, approximate: str) -> str:
    half = b.op(f"arith.mulf {x}, {b.const(0.5, 'f32')} : f32")
    one = b.const(1.0, "f32")
    if approximate == "tanh":
        x2 = b.op(f"arith.mulf {x}, {x} : f32")
        x3 = b.op(f"arith.mulf {x2}, {x} : f32")
        cube = b.op(f"arith.mulf {x3}, {b.const(0.044715, 'f32')} : f32")
        inner = b.op(f"arith.addf {x}, {cube} : f32")
        scaled = b.op(f"arith.mulf {inner}, {b.const(GELU_C, 'f32')} : f32")
        t = b.op(f"math.tanh {scaled} : f32")
    else:
        scaled = b.op(f"arith.mulf {x}, {b.const(SQRT_HALF, 'f32')} : f32")
        t = b.op(f"math.erf {scaled} : f32")
    s = b.op(f"arith.addf {one}, {t} : f32")
    return b.op(f"arith.mulf {half}, {s} : f32")


def _gelu(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return gelu_f(b, f32(b, xs[0]), str(attrs.get("approximate", "tanh"))), "f32"


def _clip(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x, t = xs[0]
    lo, hi = clip_bounds(DType.parse(t), attrs)
    if is_float(t):
        v = f32(b, xs[0])
        if lo is not None:
            v = b.op(f"arith.maximumf {v}, {b.const(float(lo), 'f32')} : f32")
        if hi is not None:
            v = b.op(f"arith.minimumf {v}, {b.const(float(hi), 'f32')} : f32")
        return v, "f32"
    v = x
    if lo is not None:
        v = b.op(f"arith.maxsi {v}, {b.const(lo, t)} : {t}")
    if hi is not None:
        v = b.op(f"arith.minsi {v}, {b.const(hi, t)} : {t}")
    return v, t


def hard_sigmoid_f(b: Body, x: str, alpha: float, beta: float) -> str:
    y = b.op(f"arith.mulf {x}, {b.const(alpha, 'f32')} : f32")
    y = b.op(f"arith.addf {y}, {b.const(beta, 'f32')} : f32")
    y = b.op(f"arith.maximumf {y}, {b.const(0.0, 'f32')} : f32")
    return b.op(f"arith.minimumf {y}, {b.const(1.0, 'f32')} : f32")


def _hard_sigmoid(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return hard_sigmoid_f(b, f32(b, xs[0]), float(attrs["alpha"]), float(attrs["beta"])), "f32"


def _hard_swish(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x = f32(b, xs[0])
    h = hard_sigmoid_f(b, x, HARD_SWISH_ALPHA, HARD_SWISH_BETA)
    return b.op(f"arith.mulf {x}, {h} : f32"), "f32"


def _pow(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    if not is_float(xs[0][1]):
        return _int_pow(b, xs), xs[0][1]
    # numpy's a ** b: a negative base takes integer exponents (its sign from their
    # parity) and gives nan for others; math.powf alone is exp(b * log(a))
    a, e = f32(b, xs[0]), f32(b, xs[1])
    p = b.op(f"math.powf {b.op(f'math.absf {a} : f32')}, {e} : f32")
    whole = b.op(f"arith.cmpf oeq, {b.op(f'math.floor {e} : f32')}, {e} : f32")
    half = b.op(f"arith.mulf {e}, {b.const(0.5, 'f32')} : f32")
    odd = b.op(f"arith.cmpf one, {b.op(f'math.floor {half} : f32')}, {half} : f32")
    signed = b.op(f"arith.select {odd}, {b.op(f'arith.negf {p} : f32')}, {p} : f32")
    nan = b.const(float("nan"), "f32")
    negative = b.op(f"arith.select {whole}, {signed}, {nan} : f32")
    below = b.op(f"arith.cmpf olt, {a}, {b.const(0.0, 'f32')} : f32")
    return b.op(f"arith.select {below}, {negative}, {p} : f32"), "f32"


def _int_pow(b: Body, xs: list[Scalar]) -> str:
    """a ** b saturated to the type (square and multiply over every bit of b >= 0, in
    i64 with each product clamped to +-(2^31 + 1): a clamped value is already beyond
    every integer type's range, keeps its sign, and two of them multiply within i64;
    a product that ends in range never passed through a clamp). b < 0: 1 for a == 1,
    +-1 for a == -1 by b's parity, else 0 (eqsat.ops.mathfn.int_pow)."""
    (a, t), (e, _) = xs
    w = WIDE
    zero, one = b.const(0, t), b.const(1, t)
    bound_hi, bound_lo = b.const(2**31 + 1, w), b.const(-(2**31) - 1, w)

    def clamped_product(x: str, y: str) -> str:
        p = b.op(f"arith.muli {x}, {y} : {w}")
        p = b.op(f"arith.maxsi {p}, {bound_lo} : {w}")
        return b.op(f"arith.minsi {p}, {bound_hi} : {w}")

    exp = b.op(f"arith.maxsi {e}, {zero} : {t}")
    result, base = b.const(1, w), widen(b, a, t)
    for bit in range(int(t[1:]) - 1):
        shifted = b.op(f"arith.shrsi {exp}, {b.const(bit, t)} : {t}")
        set_ = b.op(f"arith.cmpi ne, {b.op(f'arith.andi {shifted}, {one} : {t}')}, {zero} : {t}")
        result = b.op(f"arith.select {set_}, {clamped_product(result, base)}, {result} : {w}")
        base = clamped_product(base, base)
    power = saturate(b, result, w, t)
    minus = b.const(-1, t)
    odd = b.op(f"arith.cmpi ne, {b.op(f'arith.andi {e}, {one} : {t}')}, {zero} : {t}")
    sign = b.op(f"arith.select {odd}, {minus}, {one} : {t}")
    is_one = b.op(f"arith.cmpi eq, {a}, {one} : {t}")
    is_minus = b.op(f"arith.cmpi eq, {a}, {minus} : {t}")
    inverse = b.op(f"arith.select {is_minus}, {sign}, {zero} : {t}")
    inverse = b.op(f"arith.select {is_one}, {one}, {inverse} : {t}")
    negative = b.op(f"arith.cmpi slt, {e}, {zero} : {t}")
    return b.op(f"arith.select {negative}, {inverse}, {power} : {t}")


def _mask(b: Body, flag: str) -> Scalar:
    return b.op(f"arith.extui {flag} : i1 to i8"), "i8"


def _compare(fpred: str, ipred: str) -> Writer:
    def write(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
        (a, t), (c, _) = xs
        if is_float(t):
            flag = b.op(f"arith.cmpf {fpred}, {f32(b, xs[0])}, {f32(b, xs[1])} : f32")
        else:
            flag = b.op(f"arith.cmpi {ipred}, {a}, {c} : {t}")
        return _mask(b, flag)

    return write


def _nonzero(b: Body, v: Scalar) -> str:
    x, t = v
    return b.op(f"arith.cmpi ne, {x}, {b.const(0, t)} : {t}")


def _logical(op: str) -> Writer:
    def write(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
        flag = b.op(f"arith.{op} {_nonzero(b, xs[0])}, {_nonzero(b, xs[1])} : i1")
        return _mask(b, flag)

    return write


def _logical_not(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x, t = xs[0]
    return _mask(b, b.op(f"arith.cmpi eq, {x}, {b.const(0, t)} : {t}"))


def _isnan(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    x = f32(b, xs[0])
    return _mask(b, b.op(f"arith.cmpf uno, {x}, {x} : f32"))


def _where(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    flag = _nonzero(b, xs[0])
    (a, ta), (c, _) = xs[1], xs[2]
    if is_float(ta):
        a, c, ta = f32(b, xs[1]), f32(b, xs[2]), "f32"
    return b.op(f"arith.select {flag}, {a}, {c} : {ta}"), ta


def _fma(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    """a * b + c rounded once (math.fma: LLVM's fused multiply-add, as hwsim's fma)."""
    a, m, c = (f32(b, x) for x in xs)
    return b.op(f"math.fma {a}, {m}, {c} : f32"), "f32"


def cast_scalar(b: Body, v: Scalar, dtype: str) -> Scalar:
    """cast: floats round to nearest even and saturate (NaN -> 0) into integers;
    integers saturate into narrower ones."""
    x, t = v
    if is_float(dtype):
        return (f32(b, v), "f32")
    lo, hi = INT_RANGE[dtype]
    if is_float(t):
        r = b.op(f"math.roundeven {f32(b, v)} : f32")
        r = b.op(f"arith.maximumf {r}, {b.const(float(lo), 'f32')} : f32")
        r = b.op(f"arith.minimumf {r}, {b.const(float(hi), 'f32')} : f32")
        nan = b.op(f"arith.cmpf uno, {r}, {r} : f32")
        r = b.op(f"arith.select {nan}, {b.const(0.0, 'f32')}, {r} : f32")
        return b.op(f"arith.fptosi {r} : f32 to {dtype}"), dtype
    if _bits(t) <= _bits(dtype):
        return narrow(b, v, dtype), dtype
    c = b.op(f"arith.maxsi {x}, {b.const(lo, t)} : {t}")
    c = b.op(f"arith.minsi {c}, {b.const(hi, t)} : {t}")
    return b.op(f"arith.trunci {c} : {t} to {dtype}"), dtype


def _cast(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return cast_scalar(b, xs[0], str(attrs["dtype"]))


def _identity(b: Body, xs: list[Scalar], attrs: Mapping) -> Scalar:
    return xs[0]


SCALAR: dict[str, Writer] = {
    "add": _float_binary("addf", "addi", exact=True),
    "sub": _float_binary("subf", "subi", exact=True),
    "mul": _float_binary("mulf", "muli", exact=True),
    "div": _div,
    "maximum": _float_binary("maximumf", "maxsi"),
    "minimum": _float_binary("minimumf", "minsi"),
    "neg": _neg,
    "relu": _relu,
    "sigmoid": _sigmoid,
    "tanh": _unary_math("math.tanh"),
    "exp": _unary_math("math.exp"),
    "sqrt": _unary_math("math.sqrt"),
    "rsqrt": _rsqrt,
    "reciprocal": _reciprocal,
    "gelu": _gelu,
    "abs": _unary_math("math.absf", "math.absi"),
    "log": _unary_math("math.log"),
    "sin": _unary_math("math.sin"),
    "cos": _unary_math("math.cos"),
    "floor": _unary_math("math.floor"),
    "ceil": _unary_math("math.ceil"),
    "trunc": _unary_math("math.trunc"),
    "erf": _unary_math("math.erf"),
    "clip": _clip,
    "hard_sigmoid": _hard_sigmoid,
    "hard_swish": _hard_swish,
    "pow": _pow,
    "equal": _compare("oeq", "eq"),
    "less": _compare("olt", "slt"),
    "less_equal": _compare("ole", "sle"),
    "greater": _compare("ogt", "sgt"),
    "greater_equal": _compare("oge", "sge"),
    "logical_and": _logical("andi"),
    "logical_or": _logical("ori"),
    "logical_xor": _logical("xori"),
    "logical_not": _logical_not,
    "isnan": _isnan,
    "where": _where,
    "fma": _fma,
    "cast": _cast,
    "observe": _identity,
    **QUANT_SCALAR,
}
