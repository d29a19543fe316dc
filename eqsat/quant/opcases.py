"""Hypothesis generators of the quantization ops (`observe`, `requantize_pc`), in the
form of eqsat.verify.opcases' families: draw(draw, op, first, space) -> OpCase.

`QUANT_GENERATORS` maps op name -> Family; the test strategies (tests/strategies.py)
and rule verification merge it into their generator table. The fused int8 kernels
(qmatmul_bias_*) need no entry: they are generated from their composition.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType
from eqsat.verify.cases import Family, OpCase, first_operand, maybe
from eqsat.verify.space import FLOAT_DTYPES, dtypes

SCALES = st.sampled_from([0.001, 0.02, 0.1, 0.5, 1.0, 3, 17.25])
ROUNDINGS = st.sampled_from(["even", "away"])


def draw_observe(draw, op, first, space) -> OpCase:
    x = first_operand(draw, op, first, space, FLOAT_DTYPES)
    attrs: dict[str, Any] = {"scale": draw(SCALES)}
    maybe(draw, attrs, "zero_point", draw(st.integers(-128, 127)), 0)
    maybe(draw, attrs, "rounding", draw(ROUNDINGS), "even")
    return OpCase(op.name, (x,), attrs)


def draw_requantize_pc(draw, op, first, space) -> OpCase:
    """x: i32 [..., N]; s: one scale per channel, [N] or [1, ..., N] (or one for all)."""
    x = first_operand(draw, op, first, space, (DType.I32,), min_rank=1)
    n = draw(st.sampled_from([x.shape[-1], 1]))
    lead = draw(st.integers(0, x.rank - 1))
    s = TensorType(draw(dtypes("float")), (1,) * lead + (n,))
    attrs: dict[str, Any] = {"scale": draw(SCALES)}
    maybe(draw, attrs, "zero_point", draw(st.integers(-128, 127)), 0)
    maybe(draw, attrs, "relu", draw(st.booleans()), False)
    maybe(draw, attrs, "rounding", draw(ROUNDINGS), "even")
    return OpCase(op.name, (x, s), attrs)


QUANT_GENERATORS: dict[str, Family] = {
    "observe": Family(lambda op, t: t.dtype.is_float, draw_observe),
    "requantize_pc": Family(lambda op, t: t.dtype is DType.I32 and t.rank >= 1, draw_requantize_pc),
}

from eqsat.quant.weight_only_cases import WEIGHT_ONLY_GENERATORS  # noqa: E402

QUANT_GENERATORS.update(WEIGHT_ONLY_GENERATORS)
