"""Op-case generators of the rotations: hadamard (see opcases.py for the contract:
draw(draw, op, first, space) -> OpCase). `ROTATION_GENERATORS` maps op name -> Family.

The block is a power of two >= 2 dividing the last axis; without a given first
operand the last axis is drawn as block * m, so small spaces still reach blocks
of 2 to 16.
"""

from __future__ import annotations

from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpDef
from eqsat.verify.cases import Family, OpCase
from eqsat.verify.space import NoCase, Space, choice, ints

BLOCKS = (2, 4, 8, 16)


def _accepts(op: OpDef, t: TensorType) -> bool:
    return t.dtype is DType.F32 and t.rank >= 1 and t.shape[-1] % 2 == 0


def draw_hadamard(draw, op: OpDef, first, space: Space) -> OpCase:
    """x f32 of rank >= 1, a power-of-two block dividing its last axis."""
    if first is not None:
        blocks = [b for b in BLOCKS if first.shape[-1] % b == 0]
        if not first.rank or first.dtype is not DType.F32 or not blocks:
            raise NoCase
        return OpCase(op.name, (first,), {"block": draw(choice(tuple(blocks)))})
    block = draw(choice(BLOCKS))
    lead = draw(space.shapes(0, max(0, space.max_rank - 1)))
    x = TensorType(DType.F32, (*lead, block * draw(ints(1, 3))))
    return OpCase(op.name, (x,), {"block": block})


ROTATION_GENERATORS: dict[str, Family] = {
    "hadamard": Family(_accepts, draw_hadamard),
}
