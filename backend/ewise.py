"""The streaming kernel: out = expr(operands), tile by tile, double buffered.

Used for every elementwise op and fused elementwise chain, casts and quantization,
and for data movement (copy, transpose, broadcast, concat pieces, constant fill): a
copy is the expression `Leaf(0)` with a view that walks the source in another order.

Tile space: the output's axes after coalescing (axes every view walks as one merge);
columns run along the output's unit-stride axis so stores are contiguous, rows along
the axis that makes the most transposed operands loadable (else the next-innermost).
Tiles are sized like the cost model's chunks (in + out bytes <= SRAM / 4 per step)
and by the bytes per element of both slots and the intermediates, then shrunk until
every tile the kernel allocates fits what is left of SRAM (fits_sram: broadcast rows,
the zero tiles and their extra row, 64-byte alignment; eqsat/spatial_plan.py
stream_tile sizes the same tiles for the cost model).
"""

from __future__ import annotations

from eqsat.spatial_plan import largest_fitting, stream_space
from hwsim.dtypes import ITEMSIZE

from .emit import KernelBuilder, Pipeline, sub
from .errors import BackendError
from .expr import Expr
from .space import Operand, Space, dram
from .tileexpr import TileExpr, bytes_per_element, leaf_class
from .views import View

MARGIN = 1024  # SRAM bytes kept free


def make_space(out: View, leaves: list[View]) -> tuple[Space, Operand, list[Operand]]:
    """The coalesced tile space of a kernel writing `out` from `leaves` (axes, row and
    column as eqsat/spatial_plan.py stream_space chooses them for the cost model)."""
    strides = [Operand.of(v, out.shape).strides for v in leaves]
    cshape, cstr, row, col = stream_space(out.shape, out.strides, strides)
    space = Space(cshape, row, col)
    out_op = Operand(out.buf, out.offset, cstr[0])
    ops = [Operand(v.buf, v.offset, s) for v, s in zip(leaves, cstr[1:], strict=True)]
    return space, out_op, ops


def tile_shape(space: Space, elements: int, ops: list[Operand]) -> tuple[int, int]:
    ct = max(1, min(space.cols, elements))
    rt = max(1, min(space.rows, elements // ct))
    if any(leaf_class(op, space, rt, ct) is None for op in ops):
        rt = 1
    return rt, ct


def fits_sram(
    kb: KernelBuilder,
    space: Space,
    expr: Expr,
    ops: list[Operand],
    out_dtype: str,
    zero: Operand | None,
    tile: tuple[int, int],
) -> bool:
    """Do all the tiles emit_ewise allocates for `tile` (operand slots, intermediates,
    output slots, zeros) fit the SRAM kernel `kb` has left? Tried on a copy of its
    allocator."""
    probe = KernelBuilder(kb.hw, kb.name, kb.tag)
    probe.top = dict(kb.top)
    try:
        tx = TileExpr(probe, space, expr, list(ops), {}, out_dtype, *tile, zero)
        probe.alloc2(*tile, out_dtype)
        tx.alloc_zeros()
    except BackendError:
        return False
    return True


def emit_ewise(
    kb: KernelBuilder, out: View, expr: Expr, leaves: list[View], zero: Operand | None
) -> None:
    """Emit the streaming loop computing `out = expr(leaves)` into kernel `kb`."""
    space, out_op, ops = make_space(out, leaves)
    out_isz = ITEMSIZE[out.dtype]
    per_elem = bytes_per_element(expr, list(ops), space, out.dtype) + 2 * out_isz + 8
    fit = (kb.free_bytes() - MARGIN) // per_elem
    streamed = sum(ITEMSIZE[op.dtype] for op in ops) + out_isz
    model = kb.hw.sram_bytes // 4 // streamed
    elements = largest_fitting(
        max(1, min(fit, model)),
        lambda e: fits_sram(kb, space, expr, ops, out.dtype, zero, tile_shape(space, e, ops)),
    )
    if elements < 1:
        raise BackendError(f"kernel {kb.name}: not even one element fits SRAM")
    rt, ct = tile_shape(space, elements, ops)
    tx = TileExpr(kb, space, expr, list(ops), {}, out.dtype, rt, ct, zero)
    outs = kb.alloc2(rt, ct, out.dtype)
    pipe = Pipeline(kb, "e")
    tx.prologue(pipe)
    out_row = out_op.strides[space.row]
    for pos in space.positions(rt, ct):
        slot = pipe.slot("x")
        gen, _ = pipe.load("x", tx.loads(pos, slot))
        pipe.begin_out()
        o = sub(outs[pipe.out_slot()], pos.rows, pos.cols)
        pipe.compute(tx.compute(pos, slot, o, {}))
        pipe.release(gen)
        pipe.store([(dram(out_op, pos.offset(out_op), pos.rows, pos.cols, out_row), o)])
