"""Registry ops that are tile expressions: each entry builds the expression of one op.

Signature: builder(args, attrs, in_dtypes, out_dtype) -> Expr, where args are the
operands' expressions. The numbers mirror the reference semantics (eqsat/ops): scales
are f32 immediates where the reference divides or multiplies in f32, and quantize
rounds half to even by storing into an i32 tile.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .ewise_masks import MASK_EXPR
from .expr import Bin, Cvt, Expr, Fmadd, Requant, Un, requant_params
from .views import Imm

Builder = Callable[[list[Expr], dict, list[str], str], Expr]


def _f32(x: float) -> Imm:
    return Imm(float(np.float32(x)), "f32")


def _binary(op: str) -> Builder:
    return lambda args, attrs, dts, out: Bin(op, args[0], args[1])


def _unary(op: str) -> Builder:
    return lambda args, attrs, dts, out: Un(op, args[0])


def _quantize(args, attrs, dts, out) -> Expr:
    q = Cvt("i32", Bin("div", args[0], _f32(attrs["scale"])))
    zp = int(attrs["zero_point"])
    return Bin("add", q, Imm(zp, "i32")) if zp else Cvt(out, q)


def _dequantize(args, attrs, dts, out) -> Expr:
    x = Cvt("f32", args[0])
    zp = int(attrs["zero_point"])
    if zp:
        x = Bin("sub", x, _f32(zp))
    return Bin("mul", x, _f32(attrs["scale"]))


def _requantize(args, attrs, dts, out) -> Expr:
    # i8 and i32 results alike: the fixed-point form, saturated to the result's range
    mult, shift = requant_params(float(attrs["scale"]))
    return Requant(args[0], mult, shift, int(attrs["zero_point"]), str(attrs["rounding"]), out)


EXPR: dict[str, Builder] = {
    "add": _binary("add"),
    "sub": _binary("sub"),
    "mul": _binary("mul"),
    "div": _binary("div"),
    "maximum": _binary("max"),
    "minimum": _binary("min"),
    "neg": _unary("neg"),
    "relu": _unary("relu"),
    "sigmoid": _unary("sigmoid"),
    "tanh": _unary("tanh"),
    "exp": _unary("exp"),
    "sqrt": _unary("sqrt"),
    "rsqrt": _unary("rsqrt"),
    "reciprocal": _unary("reciprocal"),
    "cast": lambda args, attrs, dts, out: Cvt(out, args[0]),
    "fma": lambda args, attrs, dts, out: Fmadd(args[0], args[1], args[2]),
    "quantize": _quantize,
    "dequantize": _dequantize,
    "requantize": _requantize,
    **MASK_EXPR,  # gelu (both forms), math ops, comparisons, logic, where
}
