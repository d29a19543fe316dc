"""Vector-unit work of the elementwise kernels whose instructions are known exactly.

For the math, mask and number-format ops (eqsat/ops/mathfn.py, masks.py, quant.py)
this maps the registry op to the vector instructions its kernel runs on every
element - the ones the backend's tile expression emits (backend/ewise_masks.py,
backend/ewise_ops.py) - and prices them with
hwsim's lane passes (hwsim.timing.OP_PASSES). The cost model uses that instead of
the op's FLOP count, so that the estimate and the simulator count the same lane work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eqsat.ir.types import TensorType
from eqsat.ops import AttrValue
from eqsat.ops.mathfn import clip_bounds
from hwsim.timing import OP_PASSES

_HARD_SIGMOID = ("mul", "add", "max", "min")

LANE_OPS: dict[str, tuple[str, ...]] = {
    **{op: (op,) for op in ("abs", "erf", "log", "sin", "cos", "floor", "ceil", "trunc")},
    "pow": ("pow",),
    "equal": ("eq",),
    "less": ("lt",),
    "less_equal": ("le",),
    "greater": ("gt",),
    "greater_equal": ("ge",),
    "logical_and": ("and",),
    "logical_or": ("or",),
    "logical_xor": ("xor",),
    "logical_not": ("not",),
    "isnan": ("isnan",),
    "where": ("select",),
    "fma": ("fma",),
    "hard_sigmoid": _HARD_SIGMOID,
    "hard_swish": (*_HARD_SIGMOID, "mul"),
}


def _conversion_ops(op_name: str, attrs: Mapping[str, AttrValue], out_dtype: str) -> tuple:
    """quantize: divide by the scale, round into i32, add the zero point or narrow;
    dequantize: widen to f32, subtract the zero point, scale; requantize: one
    requantize instruction into i8, else through f32 (backend/ewise_ops.py)."""
    zp = bool(attrs.get("zero_point", 0))
    if op_name == "quantize":
        return ("div", "copy", *(("add",) if zp else (("copy",) if out_dtype != "i32" else ())))
    if op_name == "dequantize":
        return ("copy", *(("sub",) if zp else ()), "mul")
    if out_dtype == "i8":
        return ("requantize",)
    return ("copy", "mul", "copy", *(("add",) if zp else ()))


def lane_ops(
    op_name: str,
    in_types: Sequence[TensorType],
    attrs: Mapping[str, AttrValue],
    out_dtype: str = "f32",
) -> tuple[str, ...] | None:
    """The vector instructions per element of the op's kernel, or None if not known."""
    if op_name in ("quantize", "dequantize", "requantize"):
        return _conversion_ops(op_name, attrs, out_dtype)
    if op_name == "clip":
        lo, hi = clip_bounds(in_types[0].dtype, attrs)
        binding = tuple(op for op, bound in (("max", lo), ("min", hi)) if bound is not None)
        return binding or ("copy",)
    return LANE_OPS.get(op_name)


def vector_passes(
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> int | None:
    """Lane passes of the op's kernel over its whole output, or None if not known."""
    ops = lane_ops(op_name, in_types, attrs, out.dtype.value)
    if ops is None:
        return None
    return out.numel * sum(OP_PASSES[op] for op in ops)
