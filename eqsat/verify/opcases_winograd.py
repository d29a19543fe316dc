"""Generators of the Winograd ops (eqsat/ops/winograd.py) for verify-rules: a first
operand drawn (or taken) with the shape the op needs, attributes that fit it. The ops
compute in f32 only (their type rule refuses bf16), so every operand is f32."""

from __future__ import annotations

from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpDef
from eqsat.ops.winograd import CONV_EPILOGUES, TILE_SIZES, input_out_hw, tiles
from eqsat.verify.cases import Family, OpCase
from eqsat.verify.space import NoCase, Space, choice, ints


def _draw_output(draw, op: OpDef, first, space: Space) -> OpCase:
    """t [a*a, N*th*tw, O] with m and size [HO, WO] whose tiles divide N*th*tw."""
    if first is not None:
        if first.rank != 3:
            raise NoCase(f"{op.name} takes [a*a, tiles, O], not {first}")
        m = next((m for m in TILE_SIZES if (m + 2) ** 2 == first.shape[0]), None)
        if m is None:
            raise NoCase(f"{op.name}: {first.shape[0]} is no (m + 2)^2")
        t = first.shape[1]
        ho = draw(ints(1, m))  # one tile row: the tiles are images x tile columns
        wo_tiles = [d for d in range(1, t + 1) if t % d == 0]
        tw = draw(choice(tuple(wo_tiles)))
        wo = draw(ints(m * (tw - 1) + 1, m * tw))
        return OpCase(op.name, (first,), {"m": m, "size": (ho, wo)})
    m = draw(choice(TILE_SIZES))
    ho, wo = draw(ints(1, 6)), draw(ints(1, 6))
    th, tw = tiles((ho, wo), m)
    n, o = draw(space.sides(2)), draw(space.sides(4))
    t = TensorType(DType.F32, ((m + 2) ** 2, n * th * tw, o))
    return OpCase(op.name, (t,), {"m": m, "size": (ho, wo)})


def _accepts_output(op: OpDef, t: TensorType) -> bool:
    return (
        t.rank == 3 and t.dtype is DType.F32 and any((m + 2) ** 2 == t.shape[0] for m in TILE_SIZES)
    )


def _draw_input(draw, op: OpDef, first, space: Space) -> OpCase:
    x = first or TensorType(
        DType.F32,
        (draw(space.sides(2)), draw(space.sides(4)), draw(ints(3, 9)), draw(ints(3, 9))),
    )
    pad = (draw(ints(0, 1)), draw(ints(0, 1)))
    if x.shape[2] + 2 * pad[0] < 3 or x.shape[3] + 2 * pad[1] < 3:
        raise NoCase(f"{op.name}: {x} is smaller than a 3x3 kernel")
    return OpCase(op.name, (x,), {"m": draw(choice(TILE_SIZES)), "padding": pad})


def _draw_weight(draw, op: OpDef, first, space: Space) -> OpCase:
    w = first or TensorType(DType.F32, (draw(space.sides(4)), draw(space.sides(4)), 3, 3))
    if w.shape[2:] != (3, 3):
        raise NoCase(f"{op.name} takes [O, C, 3, 3], not {w}")
    return OpCase(op.name, (w,), {"m": draw(choice(TILE_SIZES))})


def _draw_epilogue(draw, op: OpDef, first, space: Space) -> OpCase:
    """The output transform's epilogue kernels: t as winograd_output takes it, a bias
    of one value per output channel [O, 1, 1] and, with a residual, r of the output's
    shape."""
    base = _draw_output(draw, op, first, space)
    (t,) = base.in_types
    m, (ho, wo) = base.attrs["m"], base.attrs["size"]
    th, tw = tiles((ho, wo), m)
    o = t.shape[2]
    types = [t, TensorType(DType.F32, (o, 1, 1))]
    if "r" in op.operands:
        types.append(TensorType(DType.F32, (t.shape[1] // (th * tw), o, ho, wo)))
    return OpCase(op.name, tuple(types), base.attrs)


def _draw_conv(draw, op: OpDef, first, space: Space) -> OpCase:
    """The fused convolution: x as winograd_input takes it, u = winograd_weight's
    [a*a, C, O], a bias of one value per output channel and a residual of the output's
    shape where the op takes them."""
    base = _draw_input(draw, op, first, space)
    (x,) = base.in_types
    m, pad = base.attrs["m"], base.attrs["padding"]
    o = draw(space.sides(4))
    ho, wo = input_out_hw(x, pad)
    types = [x, TensorType(DType.F32, ((m + 2) ** 2, x.shape[1], o))]
    if "b" in op.operands:
        types.append(TensorType(DType.F32, (o, 1, 1)))
    if "r" in op.operands:
        types.append(TensorType(DType.F32, (x.shape[0], o, ho, wo)))
    return OpCase(op.name, tuple(types), {"m": m, "padding": pad, "size": (ho, wo)})


# The fused epilogue kernels take a per-channel bias, which the generic generator of
# fused kernels (drawing any bias the body's broadcasting allows) rarely draws.
WINOGRAD_EPILOGUE_GENERATORS = {
    name: Family(_accepts_output, _draw_epilogue)
    for name in (
        "winograd_output_bias",
        "winograd_output_bias_relu",
        "winograd_output_bias_add_relu",
    )
}
WINOGRAD_EPILOGUE_GENERATORS.update(
    {
        name: Family(lambda op, t: t.rank == 4 and t.dtype is DType.F32, _draw_conv)
        for name in CONV_EPILOGUES
    }
)
WINOGRAD_GENERATORS = {
    "winograd_output": Family(_accepts_output, _draw_output),
    "winograd_input": Family(lambda op, t: t.rank == 4 and t.dtype is DType.F32, _draw_input),
    "winograd_weight": Family(
        lambda op, t: t.rank == 4 and t.dtype is DType.F32 and t.shape[2:] == (3, 3), _draw_weight
    ),
}
