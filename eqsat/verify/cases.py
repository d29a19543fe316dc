"""What an op-case generator returns and the helpers every generator shares."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpDef, OpTypeError
from eqsat.verify.space import ALL_DTYPES, BOOLS, PLAIN, Space, choice, ints


@dataclass(frozen=True)
class OpCase:
    """A valid application of one op: operand types and the attributes as written
    (raw: negative axes, -1 in reshape, defaults possibly left out)."""

    op: str
    in_types: tuple[TensorType, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def opdef(self) -> OpDef:
        return REGISTRY[self.op]

    def bound_attrs(self) -> dict[str, Any]:
        return self.opdef.bind_attrs(self.attrs)

    def out_type(self) -> TensorType:
        return self.opdef.type_of(self.in_types, self.bound_attrs())


@dataclass(frozen=True)
class Family:
    """accepts(op, t): may t be the op's first operand; draw(draw, op, first, space):
    an OpCase whose first operand is `first` (or any, when None)."""

    accepts: Callable[[OpDef, TensorType], bool]
    draw: Callable[..., OpCase]


_PROBE_ATTRS = {
    "scale": 1.0,
    "x_scale": 1.0,  # fused int8 kernels: the scales of their operand and steps
    "e_scale": 1.0,
    "shape": (2, 2),
    "dtype": "f32",
    "starts": (0,),
    "ends": (1,),
    "value": 0,
    "name": "x",
    "block": 2,  # hadamard: a power of two dividing the probe's last axis
    "kernel": (1, 1),  # pooling windows
    "size": (1, 1),  # a Winograd output
}


def _dtype_ok(op: OpDef, dtype: DType) -> bool:
    """Probe the registry: does `op` take operands of `dtype` (shape [2, 2] each)?"""
    t = TensorType(dtype, (2, 2))
    given = {s.name: _PROBE_ATTRS[s.name] for s in op.attrs if s.required}
    try:
        op.type_of([t] * len(op.operands), op.bind_attrs(given))
    except OpTypeError:
        return False
    return True


@functools.cache
def ok_dtypes(op: OpDef) -> tuple[DType, ...]:
    return tuple(d for d in ALL_DTYPES if _dtype_ok(op, d))


def first_operand(draw, op: OpDef, first, space: Space, dtypes_=None, min_rank=0, max_side=None):
    if first is not None:
        return first
    return draw(space.tensor_types(dtypes_ or ok_dtypes(op), min_rank, None, max_side))


def maybe(draw, attrs: dict, key: str, value: Any, default: Any = None, always: bool = False):
    """Write `key=value` unless it equals the default and we draw to leave it out."""
    if always or value != default or draw(BOOLS):
        attrs[key] = value


def broadcast_partner(draw, shape: tuple[int, ...], space: Space = PLAIN) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (possibly of another rank, possibly growing
    it); a quarter of the time `shape` itself, the commonest case in models."""
    if draw(ints(0, 3)) == 0:
        return tuple(shape)
    rank = draw(ints(0, space.max_rank))
    out = []
    for i in range(rank):
        j = len(shape) - rank + i
        if j < 0 or shape[j] == 1:
            out.append(draw(space.sides()))
        else:
            out.append(draw(choice((shape[j], 1))))
    return tuple(out)


def accepts_dtype(op: OpDef, t: TensorType) -> bool:
    return t.dtype in ok_dtypes(op)
