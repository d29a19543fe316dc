"""Registering elementwise ops of one operand from a table (arithmetic and math)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eqsat.ir.types import TensorType
from eqsat.ops.base import Attrs, OpDef, OpKind, require_float
from eqsat.ops.registry import register

# name -> (function, float only, FLOPs per element, doc)
UnaryTable = dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, int, str]]


def per_element(cost: int):
    def flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
        return cost * out.numel

    return flops


def unary_type(name: str, float_only: bool):
    def infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        if float_only:
            require_float(name, in_types[0])
        return in_types[0]

    return infer


def saturating(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` with the machine's integer semantics: integer operands narrower than 64
    bits are computed on exactly in int64 and the result saturates to their dtype
    (hwsim stores every integer result saturated; only the i32 accumulator of an
    integer matrix product wraps). Floats and int64 go to `fn` as they are."""

    def apply(*xs: np.ndarray) -> np.ndarray:
        dtype = np.result_type(*xs)
        if dtype.kind not in "iu" or dtype.itemsize >= 8:
            return fn(*xs)
        info = np.iinfo(dtype)
        wide = fn(*(np.asarray(x).astype(np.int64) for x in xs))
        return np.asarray(np.clip(wide, info.min, info.max), dtype=dtype)

    return apply


def unary_ref(fn: Callable[[np.ndarray], np.ndarray]):
    exact = saturating(fn)

    def ref(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return exact(inputs[0])

    return ref


def register_unary(table: UnaryTable) -> None:
    """One elementwise op per entry of `table`."""
    for name, (fn, float_only, cost, doc) in table.items():
        register(
            OpDef(
                name=name,
                kind=OpKind.ELEMENTWISE,
                operands=("x",),
                infer=unary_type(name, float_only),
                ref=unary_ref(fn),
                flops=per_element(cost),
                doc=doc,
            )
        )
