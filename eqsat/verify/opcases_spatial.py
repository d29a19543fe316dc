"""Op-case generators of the spatial ops: gather, pad, max_pool2d, avg_pool2d, rmsnorm,
and conv2d with groups (grouped and depthwise). See opcases.py for the contract:
draw(draw, op, first, space) -> OpCase; `SPATIAL_GENERATORS` maps op name -> Family.

Windows are drawn to reach the edges of the ONNX/PyTorch geometry: padding on one
side only, dilation, strides larger than the kernel, and ceil mode (where a last
window that would start in the end padding is dropped).
"""

from __future__ import annotations

from typing import Any

from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpDef, OpTypeError
from eqsat.verify.cases import Family, OpCase, first_operand, maybe
from eqsat.verify.space import ALL_DTYPES, BOOLS, FLOAT_DTYPES, NoCase, Space, choice, ints

_PAD_VALUES = (0.0, 1.0, -2.5, 0.5, 1e4, -1e4, 300.0)


def _checked(case: OpCase) -> OpCase:
    try:
        case.out_type()
    except OpTypeError as err:
        raise NoCase(str(err)) from None
    return case


def draw_gather(draw, op: OpDef, first, space: Space) -> OpCase:
    """A table of any dtype and rank >= 1; i32 indices of rank 0 to 2."""
    x = first_operand(draw, op, first, space, ALL_DTYPES, min_rank=1)
    axis = draw(ints(0, x.rank - 1))
    idx_rank = draw(ints(0, 2))
    indices = TensorType(DType.I32, tuple(draw(space.sides()) for _ in range(idx_rank)))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "axis", axis - x.rank if draw(BOOLS) else axis, 0)
    return OpCase(op.name, (x, indices), attrs)


def draw_pad(draw, op: OpDef, first, space: Space) -> OpCase:
    x = first_operand(draw, op, first, space, ALL_DTYPES)
    pads = tuple(draw(ints(0, 2)) for _ in range(2 * x.rank))
    attrs: dict[str, Any] = {"pads": pads}
    maybe(draw, attrs, "value", draw(choice(_PAD_VALUES)), 0.0)
    return OpCase(op.name, (x,), attrs)


def _nchw(draw, op: OpDef, first, space: Space, dtypes=None) -> TensorType:
    if first is not None:
        return first
    return TensorType(
        draw(choice(tuple(dtypes or ALL_DTYPES))),
        (draw(space.sides(2)), draw(space.sides(3)), draw(ints(1, 7)), draw(ints(1, 7))),
    )


def draw_pool(draw, op: OpDef, first, space: Space) -> OpCase:
    """Kernels up to 3, strides up to 3, dilation up to 2, padding up to 2 per side."""
    avg = op.name == "avg_pool2d"
    x = _nchw(draw, op, first, space, FLOAT_DTYPES if avg else None)
    padding = tuple(draw(ints(0, 2)) for _ in range(4))
    dilation = (draw(ints(1, 2)), draw(ints(1, 2)))
    kernel = []
    for a in range(2):  # the window fits the padded side: (K - 1) * d + 1 <= padded
        padded = x.shape[2 + a] + padding[a] + padding[a + 2]
        kernel.append(draw(ints(1, min(3, (padded - 1) // dilation[a] + 1))))
    attrs: dict[str, Any] = {"kernel": tuple(kernel)}
    maybe(draw, attrs, "stride", (draw(ints(1, 3)), draw(ints(1, 3))), (1, 1))
    maybe(draw, attrs, "padding", padding, (0, 0, 0, 0))
    maybe(draw, attrs, "dilation", dilation, (1, 1))
    maybe(draw, attrs, "ceil_mode", draw(BOOLS), False)
    if avg:
        maybe(draw, attrs, "count_include_pad", draw(BOOLS), False)
    return _checked(OpCase(op.name, (x,), attrs))


def draw_grouped_conv(draw, op: OpDef, first, space: Space) -> OpCase:
    """conv2d with groups dividing C: 1 (plain), C (depthwise, often) or in between;
    the output channels are a multiple of the groups (a depthwise multiplier)."""
    x = _nchw(draw, op, first, space, FLOAT_DTYPES)
    _, c, h, w = x.shape
    divisors = tuple(d for d in range(1, c + 1) if c % d == 0)
    groups = draw(choice((1, c, *divisors)))
    ph, pw = draw(ints(0, 2)), draw(ints(0, 2))
    kh = draw(ints(1, min(h + 2 * ph, 4)))
    kw = draw(ints(1, min(w + 2 * pw, 4)))
    per_group = draw(space.sides(3)) if groups > 1 else draw(space.sides(4))
    wt = TensorType(x.dtype, (groups * per_group, c // groups, kh, kw))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "stride", (draw(ints(1, 3)), draw(ints(1, 3))), (1, 1))
    maybe(draw, attrs, "padding", (ph, pw), (0, 0))
    maybe(draw, attrs, "groups", groups, 1)
    return _checked(OpCase(op.name, (x, wt), attrs))


def draw_rmsnorm(draw, op: OpDef, first, space: Space) -> OpCase:
    x = first_operand(draw, op, first, space, FLOAT_DTYPES, min_rank=1)
    attrs: dict[str, Any] = {}
    if draw(BOOLS):
        attrs["eps"] = draw(choice((1e-12, 1e-6, 1e-5, 0.001, 0.5, 1.0)))
    return OpCase(op.name, (x, x.with_shape((x.shape[-1],))), attrs)


def _nchw_float(op: OpDef, t: TensorType) -> bool:
    return t.rank == 4 and t.dtype.is_float


SPATIAL_GENERATORS: dict[str, Family] = {
    "gather": Family(lambda op, t: t.rank >= 1, draw_gather),
    "pad": Family(lambda op, t: True, draw_pad),
    "max_pool2d": Family(lambda op, t: t.rank == 4, draw_pool),
    "avg_pool2d": Family(_nchw_float, draw_pool),
    "conv2d": Family(_nchw_float, draw_grouped_conv),
    "rmsnorm": Family(lambda op, t: t.rank >= 1 and t.dtype.is_float, draw_rmsnorm),
}
