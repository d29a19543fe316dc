"""Tile expressions of the elementwise math and mask ops (eqsat/ops/mathfn.py,
eqsat/ops/masks.py) and of gelu's two forms; ewise_ops.EXPR includes them.

Builder signature as in ewise_ops.py: builder(args, attrs, in_dtypes, out_dtype).
Comparisons and logic compute 0/1 in their operands' kind (f32 or i32) and the
kernel's store turns that into the i8 mask. clip and the hard activations are
max/min/mul/add with f32 immediates, in the reference's order, so they are exact.
"""

from __future__ import annotations

import numpy as np

from eqsat.ir.types import DType
from eqsat.ops.mathfn import HARD_SWISH_ALPHA, HARD_SWISH_BETA, clip_bounds
from hwsim.dtypes import is_float

from .expr import Bin, Expr, Sel, Un
from .views import Imm


def _f32(x: float) -> Imm:
    return Imm(float(np.float32(x)), "f32")


def _unary(op: str):
    return lambda args, attrs, dts, out: Un(op, args[0])


def _binary(op: str):
    return lambda args, attrs, dts, out: Bin(op, args[0], args[1])


def gelu(args, attrs, dts, out) -> Expr:
    exact = attrs.get("approximate", "tanh") == "none"
    return Un("gelu_erf" if exact else "gelu", args[0])


def clip(args, attrs, dts, out) -> Expr:
    """max with the lower bound, then min with the upper; a bound that cannot bind is
    left out (out is x's dtype, or its compute kind inside a fused body)."""
    float_x = is_float(out)
    lo, hi = clip_bounds(DType.F32 if float_x else DType(out), attrs)
    kind = "f32" if float_x else "i32"
    e = args[0]
    if lo is not None:
        e = Bin("max", e, Imm(float(lo), kind))
    if hi is not None:
        e = Bin("min", e, Imm(float(hi), kind))
    return e


def hard_sigmoid_expr(x: Expr, alpha: float, beta: float) -> Expr:
    """min(max(x * alpha + beta, 0), 1) with f32 immediates."""
    t = Bin("add", Bin("mul", x, _f32(alpha)), _f32(beta))
    return Bin("min", Bin("max", t, _f32(0.0)), _f32(1.0))


def hard_sigmoid(args, attrs, dts, out) -> Expr:
    return hard_sigmoid_expr(args[0], float(attrs["alpha"]), float(attrs["beta"]))


def hard_swish(args, attrs, dts, out) -> Expr:
    return Bin("mul", args[0], hard_sigmoid_expr(args[0], HARD_SWISH_ALPHA, HARD_SWISH_BETA))


MASK_EXPR = {
    "gelu": gelu,
    "erf": _unary("erf"),
    "abs": _unary("abs"),
    "log": _unary("log"),
    "sin": _unary("sin"),
    "cos": _unary("cos"),
    "floor": _unary("floor"),
    "ceil": _unary("ceil"),
    "trunc": _unary("trunc"),
    "pow": _binary("pow"),
    "clip": clip,
    "hard_sigmoid": hard_sigmoid,
    "hard_swish": hard_swish,
    "equal": _binary("eq"),
    "less": _binary("lt"),
    "less_equal": _binary("le"),
    "greater": _binary("gt"),
    "greater_equal": _binary("ge"),
    "logical_and": _binary("and"),
    "logical_or": _binary("or"),
    "logical_xor": _binary("xor"),
    "logical_not": _unary("not"),
    "isnan": _unary("isnan"),
    "where": lambda args, attrs, dts, out: Sel(args[0], args[1], args[2]),
}
