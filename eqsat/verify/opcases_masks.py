"""Op-case generators for the elementwise math ops (eqsat/ops/mathfn.py), the mask ops
(eqsat/ops/masks.py) and gelu's `approximate` (see opcases.py for the contract:
draw(draw, op, first, space) -> OpCase). `MASK_GENERATORS` maps op name -> Family.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpDef
from eqsat.ops.base import broadcast_shapes
from eqsat.verify.cases import (
    Family,
    OpCase,
    accepts_dtype,
    broadcast_partner,
    first_operand,
    maybe,
)
from eqsat.verify.space import BOOLS, INT_DTYPES, Space, choice

# Bounds as users write them: integers and fractions, inside and outside the i8 range.
BOUNDS = st.one_of(
    st.integers(-200, 200),
    st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32),
)
SLOPES = (0.2, 1.0 / 6.0, 0.5, 1.0, -0.3, 2.5)
OFFSETS = (0.5, 0.0, 1.0, -0.25, 0.75)


def _draw_unary(draw, op: OpDef, first, space: Space) -> OpCase:
    return OpCase(op.name, (first_operand(draw, op, first, space),))


def _draw_binary(draw, op: OpDef, first, space: Space) -> OpCase:
    """b broadcasts with a; logical ops may mix i8 and i32 operands."""
    a = first_operand(draw, op, first, space)
    dtype = draw(choice(INT_DTYPES)) if op.name.startswith("logical_") else a.dtype
    b = TensorType(dtype, broadcast_partner(draw, a.shape, space))
    if first is None and draw(BOOLS):
        a, b = b, a
    return OpCase(op.name, (a, b))


def _draw_gelu(draw, op: OpDef, first, space: Space) -> OpCase:
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "approximate", draw(choice(("tanh", "none"))), "tanh")
    return OpCase(op.name, (first_operand(draw, op, first, space),), attrs)


def _draw_clip(draw, op: OpDef, first, space: Space) -> OpCase:
    """Either bound may be left out (infinite); min > max happens too."""
    attrs: dict[str, Any] = {}
    for key in ("min", "max"):
        if draw(BOOLS):
            attrs[key] = draw(BOUNDS)
    if attrs and draw(st.integers(0, 7)) == 0:  # an explicit infinite bound
        key = draw(choice(tuple(attrs)))
        attrs[key] = -math.inf if key == "min" else math.inf
    return OpCase(op.name, (first_operand(draw, op, first, space),), attrs)


def _draw_hard_sigmoid(draw, op: OpDef, first, space: Space) -> OpCase:
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "alpha", draw(choice(SLOPES)), 0.2)
    maybe(draw, attrs, "beta", draw(choice(OFFSETS)), 0.5)
    return OpCase(op.name, (first_operand(draw, op, first, space),), attrs)


def _draw_where(draw, op: OpDef, first, space: Space) -> OpCase:
    """cond (i8) first; a broadcasts with cond, b with both."""
    cond = first_operand(draw, op, first, space, (DType.I8,))
    dtype = draw(choice(tuple(DType)))
    a_shape = broadcast_partner(draw, cond.shape, space)
    b_shape = broadcast_partner(draw, broadcast_shapes(cond.shape, a_shape), space)
    return OpCase(op.name, (cond, TensorType(dtype, a_shape), TensorType(dtype, b_shape)))


def _draw_fma(draw, op: OpDef, first, space: Space) -> OpCase:
    """a (f32) first; b broadcasts with a, c with both."""
    a = first_operand(draw, op, first, space, (DType.F32,))
    b_shape = broadcast_partner(draw, a.shape, space)
    c_shape = broadcast_partner(draw, broadcast_shapes(a.shape, b_shape), space)
    return OpCase(op.name, (a, TensorType(DType.F32, b_shape), TensorType(DType.F32, c_shape)))


UNARY = Family(accepts_dtype, _draw_unary)
BINARY = Family(accepts_dtype, _draw_binary)
GELU = Family(accepts_dtype, _draw_gelu)
CLIP = Family(lambda op, t: True, _draw_clip)
HARD_SIGMOID = Family(accepts_dtype, _draw_hard_sigmoid)
WHERE = Family(lambda op, t: t.dtype is DType.I8, _draw_where)
FMA = Family(lambda op, t: t.dtype is DType.F32, _draw_fma)

FAMILY_MEMBERS: dict[Family, tuple[str, ...]] = {
    UNARY: (
        "abs",
        "erf",
        "log",
        "sin",
        "cos",
        "floor",
        "ceil",
        "trunc",
        "hard_swish",
        "logical_not",
        "isnan",
    ),
    BINARY: (
        "pow",
        "equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
    ),
    GELU: ("gelu",),
    CLIP: ("clip",),
    HARD_SIGMOID: ("hard_sigmoid",),
    WHERE: ("where",),
    FMA: ("fma",),
}

MASK_GENERATORS: dict[str, Family] = {
    name: family for family, names in FAMILY_MEMBERS.items() for name in names
}


# ONNX Runtime's QLinearAdd / QLinearMul kernels (eqsat/ops/quant_ort.py): two i8
# tensors that broadcast together (a body walk draws them apart, rarely compatible) and
# scalars (offsets, ratios, the fixed part, zero points, the multiplier).
_QLINEAR_SCALARS = {
    "qlinear_add": ("ox", "rx", "oy", "ry", "f"),
    "qlinear_add_scalar": ("ox", "rx", "p"),
    "qlinear_add_first": ("rk", "oy", "ry", "f"),
    "qlinear_mul": ("zx", "zy", "m", "zc"),
    "qlinear_mul_const": ("zx", "m", "zc"),
}
_I32_SCALARS = {"zx", "zy"}


def _draw_qlinear(draw, op: OpDef, first, space: Space) -> OpCase:
    """The first operand as given (i8, or f32 for the known operand k of
    qlinear_add_first; k i32 for qlinear_mul_const), the other tensor a broadcast
    partner of it, every other operand a scalar."""
    a = first_operand(draw, op, first, space, (_qlinear_first_dtype(op),))
    scalars = _QLINEAR_SCALARS[op.name]
    types = []
    for name in op.operands:
        if name == op.operands[0]:
            types.append(a)
        elif name in scalars:
            types.append(TensorType(DType.I32 if name in _I32_SCALARS else DType.F32, ()))
        else:  # the other tensor operand
            dtype = DType.I32 if name == "k" else DType.I8
            types.append(TensorType(dtype, broadcast_partner(draw, a.shape, space)))
    zero = draw(st.integers(-128, 127))
    return OpCase(op.name, tuple(types), {"zero_point": zero})


def _qlinear_first_dtype(op: OpDef) -> DType:
    return DType.F32 if op.name == "qlinear_add_first" else DType.I8


QLINEAR = Family(lambda op, t: t.dtype is _qlinear_first_dtype(op), _draw_qlinear)
QLINEAR_GENERATORS: dict[str, Family] = dict.fromkeys(_QLINEAR_SCALARS, QLINEAR)


# ONNX Runtime's quantized erf-GELU in one kernel (eqsat/ops/quant_ort.py): the i8
# tensor x and scalars (the divisor, QLinearAdd's and QLinearMul's parts or the QDQ
# graph's dequantized constants, the quantized 0.5 k), scales and zero points as
# attributes.
_ERF_I32 = {"zx", "zy", "kz", "gz"}


def _draw_erf_gelu(draw, op: OpDef, first, space: Space) -> OpCase:
    a = first_operand(draw, op, first, space, (DType.I8,))
    types = [a]
    for name in op.operands[1:]:
        dtype = DType.I8 if name == "k" else DType.I32 if name in _ERF_I32 else DType.F32
        types.append(TensorType(dtype, ()))
    scale = st.floats(0.002, 0.2)
    zero = st.integers(-128, 127)
    attrs = {}
    for spec in op.attrs:
        if spec.name.endswith("scale"):
            attrs[spec.name] = draw(scale)
        elif spec.name.endswith(("zero", "zero_point")):
            attrs[spec.name] = draw(zero)
    return OpCase(op.name, tuple(types), attrs)


ERF_GELU = Family(lambda op, t: t.dtype is DType.I8, _draw_erf_gelu)
QLINEAR_GENERATORS.update(
    dict.fromkeys(("qlinear_erf_gate", "qlinear_erf_gelu", "dequantize_erf_gelu"), ERF_GELU)
)
