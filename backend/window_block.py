"""The row-block window kernel: each block of padded image rows loaded once, every
tap a vector instruction on a strided SRAM view of it (eqsat/window_plan.py plans
the tiling and prices exactly this loop).

Space: [N, HO*WO, C] over the NHWC output, rows along output pixels (ht whole output
rows a tile), columns along channels. A step loads the block of the padded NHWC image
(conv_prep.nhwc_image) its rows' windows read, a depthwise convolution's taps x ct
weights and the epilogue's operands; per output row, tap (a, b) is the block's view
from pixel (r*sh + a)*Wp + b with rows sw*ct elements apart. The taps combine into the
sums (a 4-byte tile, or the output slot itself when nothing follows and it is f32 or
i32): a float depthwise convolution by fma (the first adds +0: the reference sums from
+0, so a -0 product gives +0), an integer one by mul and add through an i32 row, max
and average pooling by max and add. Without an epilogue the last tap writes the
output slot; with one, TileExpr computes it over the sums (Leaf 0) and its operands.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eqsat.ops.spatial import Window2d
from eqsat.window_plan import BlockWindow, block_strides, block_tiling, block_window
from hwsim.dtypes import ITEMSIZE
from hwsim.isa import Binary, Fma, Instr, Tile, Unary

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .expr import Expr
from .space import Operand, Space, dram
from .tileexpr import TileExpr
from .views import View

if TYPE_CHECKING:
    from eqsat.ir.types import TensorType

    from .compiler import Compiler


def _space(bw: BlockWindow) -> Space:
    return Space((bw.n, bw.out_hw[0] * bw.out_hw[1], bw.ch), 1, 2)


def _operand(v: View, bw: BlockWindow) -> Operand:
    st = block_strides(v.strides, *bw.out_hw)
    assert st is not None, "block_window takes only operands whose pixels merge"
    return Operand(v.buf, v.offset, st)


def sums_dtype(bw: BlockWindow) -> str:
    return "i32" if bw.integer else "f32"


def plan_block(
    c: Compiler,
    x: TensorType,
    g: Window2d,
    kind: str,
    out_type: TensorType,
    epi: Expr | None,
    leaves: list[View],
) -> BlockWindow | None:
    """The row-block kernel of a window op whose epilogue `epi` (None: the sums as
    they are) reads `leaves` (views over the [N, C, HO, WO] output), or None when it
    does not run (eqsat/window_plan.py block_window) or no tile fits SRAM."""
    extra = [(v.strides, ITEMSIZE[v.dtype]) for v in leaves]
    bw = block_window(x, g, kind, out_type.dtype.itemsize, 1, extra, epi is not None)
    if bw is None:
        return None
    if epi is not None:  # its intermediate tiles, as TileExpr allocates them
        probe = KernelBuilder(c.hw, "probe", "probe.")
        ops = [_operand(v, bw) for v in leaves]
        dtypes = {0: sums_dtype(bw)}
        out = out_type.dtype.value
        tx = TileExpr(probe, _space(bw), epi, [None, *ops], dtypes, out, 2, 2, None)
        bw = dataclasses.replace(bw, inter=len(tx.node_tile), zeros=len(tx.zero_kinds))
    return bw if block_tiling(c.hw, bw) != (0, 0) else None


def add_block_kernel(
    c: Compiler,
    i: int,
    bw: BlockWindow,
    g: Window2d,
    image: View,
    weights: View | None,
    out: View,
    epi: Expr | None,
    leaves: list[View],
) -> None:
    """Node i's main kernel: the row-block loop writing `out` (the NHWC output as an
    [N, C, HO, WO] view) from the padded NHWC `image` and, for a depthwise
    convolution, `weights` packed [taps, C] with channels contiguous."""
    reads = [image, *([weights] if weights is not None else []), *leaves]

    def emit(kb: KernelBuilder) -> None:
        emit_block_window(kb, bw, g, image, weights, out, epi, leaves, c.zero())

    c.add_kernel(c.kernel_name(i), i, "main", emit, reads, [out])


def emit_block_window(
    kb: KernelBuilder,
    bw: BlockWindow,
    g: Window2d,
    image: View,
    weights: View | None,
    out: View,
    epi: Expr | None,
    leaves: list[View],
    zero: Operand,
) -> None:
    ht, ct = block_tiling(kb.hw, bw)
    wo, (hp, wp), sh = bw.out_hw[1], bw.rows_cols, bw.stride[0]
    ch, taps = bw.ch, bw.taps
    space, rt = _space(bw), ht * wo
    blocks = kb.alloc2(bw.block_rows(ht) * wp, ct, image.dtype)
    wtiles = kb.alloc2(taps, ct, weights.dtype) if weights is not None else None
    ops = [_operand(v, bw) for v in leaves]
    tx = None
    if epi is not None:
        tx = TileExpr(kb, space, epi, [None, *ops], {0: sums_dtype(bw)}, out.dtype, rt, ct, zero)
    acc = kb.alloc(rt, ct, sums_dtype(bw)) if bw.acc else None
    prod = kb.alloc(wo, ct, "i32") if bw.kind == "dw" and bw.integer else None
    outs = kb.alloc2(rt, ct, out.dtype)
    pipe = Pipeline(kb, "w")
    if tx is not None:
        tx.prologue(pipe)
    out_op = _operand(out, bw)
    img_op = Operand(image.buf, image.offset, (0,))
    img, row = hp * wp * ch, wp * ch
    for pos in space.positions(rt, ct):
        n, p0, c0 = pos.index
        hn, cn = pos.rows // wo, pos.cols
        slot = pipe.slot("x")
        rows = bw.block_rows(hn) * wp
        block = sub(blocks[slot], rows, cn)
        start = image.offset + n * img + (p0 // wo) * sh * row + c0
        loads: list = [(block, dram(img_op, start, rows, cn, ch))]
        wt = None
        if weights is not None and wtiles is not None:
            wt = sub(wtiles[slot], taps, cn)
            w_op = Operand(weights.buf, weights.offset, (0,))
            loads.append((wt, dram(w_op, weights.offset + c0, taps, cn, weights.strides[0])))
        if tx is not None:
            loads += tx.loads(pos, slot)
        gen, _ = pipe.load("x", loads)
        pipe.begin_out()
        o = sub(outs[pipe.out_slot()], pos.rows, cn)
        sums = sub(acc, pos.rows, cn) if acc is not None else o
        instrs: list[Instr] = []
        for r in range(hn):
            dst = offset_tile(sums, r * wo, 0, wo, cn)
            last = offset_tile(o, r * wo, 0, wo, cn) if tx is None else dst
            views = [_tap(block, bw, g, r, a, b, cn) for a, b in g.tap_offsets()]
            p = sub(prod, wo, cn) if prod is not None else None
            instrs += _combine(bw, views, wt, dst, last, p)
        if tx is not None:
            instrs += tx.compute(pos, slot, o, {0: sums})
        pipe.compute(instrs)
        pipe.release(gen)
        pipe.store([(dram(out_op, pos.offset(out_op), pos.rows, cn, out_op.strides[1]), o)])


def _tap(block: Tile, bw: BlockWindow, g: Window2d, r: int, a: int, b: int, cn: int) -> Tile:
    """Tap (a, b) of output row r of the block: WO pixels sw apart, cn channels."""
    pixel = (r * bw.stride[0] + a) * bw.rows_cols[1] + b
    addr = block.addr + pixel * cn * block.itemsize
    return Tile(block.space, addr, bw.out_hw[1], cn, block.dtype, bw.stride[1] * cn)


def _combine(
    bw: BlockWindow, views: list[Tile], wt: Tile | None, dst: Tile, last: Tile, prod: Tile | None
) -> list[Instr]:
    """One output row's taps combined into dst, the last instruction writing `last`
    (eqsat/window_plan.py BlockWindow.tap_ops prices the same list)."""
    t = len(views)
    into = [last if k == t - 1 else dst for k in range(t)]
    if bw.kind == "dw":
        assert wt is not None
        cn = views[0].cols
        w = [offset_tile(wt, k, 0, 1, cn) for k in range(t)]
        if not bw.integer:
            first = Fma(dst=into[0], a=views[0], b=w[0], imm_c=0.0)
            return [first] + [Fma(dst=into[k], a=views[k], b=w[k], c=dst) for k in range(1, t)]
        assert prod is not None
        out: list[Instr] = [Binary(op="mul", dst=into[0], a=views[0], b=w[0], bcast="row")]
        for k in range(1, t):
            out.append(Binary(op="mul", dst=prod, a=views[k], b=w[k], bcast="row"))
            out.append(Binary(op="add", dst=into[k], a=dst, b=prod))
        return out
    if t == 1:
        return [Unary(op="copy", dst=last, src=views[0])]
    op = "max" if bw.kind == "max" else "add"
    out = [Binary(op=op, dst=into[1], a=views[0], b=views[1])]
    return out + [Binary(op=op, dst=into[k], a=dst, b=views[k]) for k in range(2, t)]
