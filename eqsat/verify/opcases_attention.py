"""Op-case generators of the attention kernels (see opcases.py for the contract:
draw(draw, op, first, space) -> OpCase). `ATTENTION_GENERATORS` maps op name -> Family.

q is [..., S, d] (f32, rank >= 2); kt [..., d, T] and v [..., T, dv] take q's leading
axes or broadcast against them (one head of k/v shared, as grouped-query attention
writes it); the mask is a key row broadcast over the queries or a full S x T block.
The scale is drawn as exporters write it: 1 / sqrt(d), 1, or any float.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpDef
from eqsat.verify.cases import Family, OpCase, first_operand, maybe
from eqsat.verify.space import BOOLS, Space, ints

F32 = DType.F32


def _lead(draw, lead: tuple[int, ...]) -> tuple[int, ...]:
    """q's leading axes, or a copy with some axes 1 (broadcast), or fewer axes."""
    pick = draw(ints(0, 2))
    if pick == 0:
        return lead
    if pick == 1:
        return tuple(1 if draw(BOOLS) else n for n in lead)
    return lead[draw(ints(0, len(lead))) :]


def draw_attention(draw, op: OpDef, first, space: Space) -> OpCase:
    q = first_operand(draw, op, first, space, [F32], min_rank=2)
    *lead, s, d = q.shape
    t, dv = draw(ints(1, space.max_side)), draw(ints(1, space.max_side))
    kt = TensorType(F32, (*_lead(draw, tuple(lead)), d, t))
    v = TensorType(F32, (*_lead(draw, tuple(lead)), t, dv))
    ins = [q, kt, v]
    if op.name == "attention_masked":
        rows = 1 if draw(BOOLS) else s
        mlead = _lead(draw, tuple(lead))
        ins.append(TensorType(F32, (*mlead, rows, t)))
    scale = draw(st.sampled_from([1.0 / math.sqrt(d), 1.0, 0.5]) | st.floats(-4, 4, width=32))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "scale", float(scale), 1.0)
    return OpCase(op.name, tuple(ins), attrs)


def _accepts(op: OpDef, t: TensorType) -> bool:
    return t.rank >= 2 and t.dtype is F32


ATTENTION_GENERATORS: dict[str, Family] = {
    name: Family(_accepts, draw_attention) for name in ("attention", "attention_masked")
}
