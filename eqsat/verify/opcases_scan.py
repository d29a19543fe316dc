"""Op-case generators of the scans: cumsum (see opcases.py for the contract:
draw(draw, op, first, space) -> OpCase). `SCAN_GENERATORS` maps op name -> Family.

The axis is written as users and importers write it (negative half of the time);
exclusive and reverse are drawn independently, each sometimes left at its default.
"""

from __future__ import annotations

from typing import Any

from eqsat.ops import OpDef
from eqsat.verify.cases import Family, OpCase, first_operand, maybe
from eqsat.verify.space import ALL_DTYPES, BOOLS, Space, ints


def draw_cumsum(draw, op: OpDef, first, space: Space) -> OpCase:
    """x of any dtype and rank >= 1, any axis of it."""
    x = first_operand(draw, op, first, space, ALL_DTYPES, min_rank=1)
    axis = draw(ints(0, x.rank - 1))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "axis", axis - x.rank if draw(BOOLS) else axis, x.rank - 1)
    maybe(draw, attrs, "exclusive", draw(BOOLS), False)
    maybe(draw, attrs, "reverse", draw(BOOLS), False)
    return OpCase(op.name, (x,), attrs)


SCAN_GENERATORS: dict[str, Family] = {
    "cumsum": Family(lambda op, t: t.rank >= 1, draw_cumsum),
}
