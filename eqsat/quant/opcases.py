"""Hypothesis generators of the quantization ops (`observe`, `requantize_pc`,
`requantize_ch`), in the
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


def draw_requantize_ch(draw, op, first, space) -> OpCase:
    """x: i32 of rank >= 1; s: scales broadcasting against x - per channel of an NCHW
    accumulator ([C, 1, 1]), per last axis, or one for all - and a clamp [min, max]."""
    x = first_operand(draw, op, first, space, (DType.I32,), min_rank=1)
    axis = draw(st.integers(0, x.rank - 1))
    keep = draw(st.booleans())
    shape = tuple(d if (a == axis and keep) else 1 for a, d in enumerate(x.shape))
    s = TensorType(draw(dtypes("float")), shape[draw(st.integers(0, axis)) :])
    attrs: dict[str, Any] = {"scale": draw(SCALES)}
    maybe(draw, attrs, "zero_point", draw(st.integers(-128, 127)), 0)
    lo = draw(st.sampled_from([None, 0.0, -1.5]))
    if lo is not None:
        attrs["min"] = lo
        maybe(draw, attrs, "max", draw(st.sampled_from([6.0, 0.5, 100.0])), None)
    maybe(draw, attrs, "rounding", draw(ROUNDINGS), "even")
    attrs = {k: v for k, v in attrs.items() if v is not None}
    return OpCase(op.name, (x, s), attrs)


def draw_qconv2d(draw, op, first, space) -> OpCase:
    """qconv2d of i8 NCHW x: groups 1, C (depthwise) or a divisor of C, an input zero
    point, stride and padding (w [G * per_group, C / G, KH, KW], i8)."""
    x = first or TensorType(
        DType.I8,
        (
            draw(space.sides(2)),
            draw(space.sides(3)),
            draw(st.integers(1, 7)),
            draw(st.integers(1, 7)),
        ),
    )
    _, c, h, w = x.shape
    groups = draw(st.sampled_from(sorted({1, c, *(d for d in range(1, c + 1) if c % d == 0)})))
    ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    kh = draw(st.integers(1, min(h + 2 * ph, 4)))
    kw = draw(st.integers(1, min(w + 2 * pw, 4)))
    per_group = draw(space.sides(3)) if groups > 1 else draw(space.sides(4))
    wt = TensorType(DType.I8, (groups * per_group, c // groups, kh, kw))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "stride", (draw(st.integers(1, 3)), draw(st.integers(1, 3))), (1, 1))
    maybe(draw, attrs, "padding", (ph, pw), (0, 0))
    maybe(draw, attrs, "groups", groups, 1)
    maybe(draw, attrs, "a_zero", draw(st.integers(-128, 127)), 0)
    return OpCase(op.name, (x, wt), attrs)


QUANT_GENERATORS: dict[str, Family] = {
    "qconv2d": Family(lambda op, t: t.rank == 4 and t.dtype is DType.I8, draw_qconv2d),
    "requantize_ch": Family(lambda op, t: t.dtype is DType.I32 and t.rank >= 1, draw_requantize_ch),
    "observe": Family(lambda op, t: t.dtype.is_float, draw_observe),
    "requantize_pc": Family(lambda op, t: t.dtype is DType.I32 and t.rank >= 1, draw_requantize_pc),
}

from eqsat.quant.weight_only_cases import WEIGHT_ONLY_GENERATORS  # noqa: E402

QUANT_GENERATORS.update(WEIGHT_ONLY_GENERATORS)
