"""The row-block window kernel: each block of image rows read once, every tap a vector
instruction on a strided SRAM view of it (eqsat/window_plan.py plans the tiling and
prices exactly this loop).

Space: [N, HO*WO, C] over the NHWC output, rows along output pixels (ht whole output
rows a tile), columns along channels. A step loads the rows of x its output rows'
windows read (one [cn, rows*W] DMA; the transposes turn them into the padded NHWC
block, pixels ct apart, whose border the prologue filled and whose padding rows are
copied from fill rows) - or, when x's planes are not row-major, the block of the
padded NHWC image a prep kernel wrote (conv_prep.nhwc_image) - plus a depthwise
convolution's taps x ct weights and the epilogue's operands. Per output row, tap
(a, b) is the block's view from pixel (r*sh + a)*Wp + b with rows sw pixels apart. The
taps combine into the sums (a 4-byte tile, or the output slot itself when nothing
follows and it is f32 or i32): a float depthwise convolution by fma (the first adds
+0: the reference sums from +0, so a -0 product gives +0), an int8 one read directly
by fma in f32 (its rows and weights cast by the transposes and a copy; exact) and
cast to i32 sums, else by mul and add through an i32 row; max and average pooling by
max and add. Without an epilogue the last tap writes the output slot; with one,
TileExpr computes it over the sums (Leaf 0) and its operands.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eqsat.ops.spatial import Window2d
from eqsat.window_plan import BlockWindow, block_strides, block_tiling, block_window
from hwsim.dtypes import ITEMSIZE
from hwsim.isa import Binary, Fma, Instr, Tile, Transpose, Unary

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
    direct: bool,
    fill: float,
    mult: int = 1,
) -> BlockWindow | None:
    """The row-block kernel of a window op whose epilogue `epi` (None: the sums as
    they are) reads `leaves` (views over the [N, C, HO, WO] output), or None when it
    does not run (eqsat/window_plan.py block_window) or no tile fits SRAM. `direct`:
    it may read x itself (row_planes); `fill`: the padding's value; `mult`: a depthwise
    convolution's channel multiplier."""
    extra = [(v.strides, ITEMSIZE[v.dtype]) for v in leaves]
    out_isz = out_type.dtype.itemsize
    bw = block_window(x, g, kind, out_isz, mult, extra, epi is not None, 0, direct, fill != 0)
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


def row_planes(x: View) -> bool:
    """Are x's channel planes row-major (a block of its rows is one DMA per channel)?"""
    _, _, h, w = x.shape
    return (w == 1 or x.strides[3] == 1) and (h == 1 or x.strides[2] == w)


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
    fill: float,
) -> None:
    """Node i's main kernel: the row-block loop writing `out` (the NHWC output as an
    [N, C, HO, WO] view) from `image` (x itself if bw.direct, else the padded NHWC
    image) and, for a depthwise convolution, `weights` packed [taps, C] with channels
    contiguous; `fill`: the padding's value."""
    reads = [image, *([weights] if weights is not None else []), *leaves]

    def emit(kb: KernelBuilder) -> None:
        emit_block_window(kb, bw, g, image, weights, out, epi, leaves, c.zero(), fill)

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
    fill: float,
) -> None:
    ht, ct = block_tiling(kb.hw, bw)
    wo, (hp, wp), sh = bw.out_hw[1], bw.rows_cols, bw.stride[0]
    ch, taps, isz = bw.ch, bw.taps, ITEMSIZE[image.dtype]
    space, rt = _space(bw), ht * wo
    img_op = Operand(image.buf, image.offset, (0,))
    raws = blocks = None
    if bw.direct:  # x's rows land in `raws`, are turned into NHWC rows of `whole`
        raw = bw.raw_rows(ht)
        raws = kb.alloc2(ct, raw * bw.in_hw[1], image.dtype) if raw else None
        block_dtype = "f32" if bw.float_taps else image.dtype
        whole = kb.alloc(bw.whole_rows(ht), ct, block_dtype)
        block_addr = whole.addr + ct * whole.itemsize
        fill_addr = block_addr + bw.block_rows(ht) * wp * ct * whole.itemsize
    else:
        blocks = kb.alloc2(bw.block_rows(ht) * wp, ct, image.dtype)
    wtiles = kb.alloc2(taps, ct, weights.dtype) if weights is not None else None
    wfloat = kb.alloc(taps, ct, "f32") if bw.float_taps else None
    ops = [_operand(v, bw) for v in leaves]
    tx = None
    if epi is not None:
        tx = TileExpr(kb, space, epi, [None, *ops], {0: sums_dtype(bw)}, out.dtype, rt, ct, zero)
    facc = kb.alloc(rt, ct, "f32") if bw.float_taps else None
    acc = kb.alloc(rt, ct, sums_dtype(bw)) if bw.acc else None
    prod = kb.alloc(wo, ct, "i32") if bw.kind == "dw" and bw.integer and not bw.float_taps else None
    outs = kb.alloc2(rt, ct, out.dtype)
    pipe = Pipeline(kb, "w")
    if bw.direct:  # zeros everywhere but the spare first element, then the fill
        spare = Tile(whole.space, whole.addr, whole.rows * whole.itemsize // isz, ct, image.dtype)
        pipe.load("z", [(spare, dram(img_op, image.offset, 1, 1, 1))])
        if fill:
            rest = offset_tile(whole, 1, 0, whole.rows - 1, ct)
            pipe.compute([Binary(op="add", dst=rest, a=rest, imm=fill)])
    if tx is not None:
        tx.prologue(pipe)
    out_op = _operand(out, bw)
    img, row = hp * wp * ch, wp * ch
    for pos in space.positions(rt, ct):
        n, p0, c0 = pos.index
        h0, hn, cn = p0 // wo, pos.rows // wo, pos.cols
        slot = pipe.slot("x")
        loads: list = []
        instrs: list[Instr] = []
        if bw.direct:
            rows = bw.block_rows(hn) * wp
            block, pitch = Tile("sram", block_addr, rows, cn, whole.dtype, ct), ct
            instrs += _direct_rows(bw, image, raws, slot, loads, block, fill_addr, h0, hn, n, c0)
        else:
            rows = bw.block_rows(hn) * wp
            block, pitch = sub(blocks[slot], rows, cn), cn  # type: ignore[index]
            start = image.offset + n * img + h0 * sh * row + c0
            loads.append((block, dram(img_op, start, rows, cn, ch)))
        wt = None
        if weights is not None and wtiles is not None:
            wt = sub(wtiles[slot], taps, cn)
            w_op = Operand(weights.buf, weights.offset, (0,))
            loads.append((wt, dram(w_op, weights.offset + c0, taps, cn, weights.strides[0])))
            if wfloat is not None:  # the integer weights as f32 for the fma
                instrs.append(Unary(op="copy", dst=sub(wfloat, taps, cn), src=wt))
                wt = sub(wfloat, taps, cn)
        if tx is not None:
            loads += tx.loads(pos, slot)
        gen, _ = pipe.load("x", loads)
        pipe.begin_out()
        o = sub(outs[pipe.out_slot()], pos.rows, cn)
        sums = sub(acc, pos.rows, cn) if acc is not None else o
        taps_into = sub(facc, pos.rows, cn) if facc is not None else sums
        for r in range(hn):
            dst = offset_tile(taps_into, r * wo, 0, wo, cn)
            last = offset_tile(o, r * wo, 0, wo, cn) if tx is None and facc is None else dst
            views = [_tap(block, bw, r, a, b, cn, pitch) for a, b in g.tap_offsets()]
            p = sub(prod, wo, cn) if prod is not None else None
            instrs += _combine(bw, views, wt, dst, last, p)
        if facc is not None:  # the exact f32 sums as i32
            instrs.append(Unary(op="copy", dst=sums, src=sub(facc, pos.rows, cn)))
        if tx is not None:
            instrs += tx.compute(pos, slot, o, {0: sums})
        pipe.compute(instrs)
        pipe.release(gen)
        pipe.store([(dram(out_op, pos.offset(out_op), pos.rows, cn, out_op.strides[1]), o)])


def _direct_rows(
    bw: BlockWindow,
    image: View,
    raws: tuple[Tile, Tile] | None,
    slot: int,
    loads: list,
    block: Tile,
    fill_addr: int,
    h0: int,
    hn: int,
    n: int,
    c0: int,
) -> list[Instr]:
    """A direct step's rows of x: one DMA of cn channel planes' rows (appended to
    `loads`), one transpose per row into the block (pixels ct apart, between the
    border columns the prologue filled), the padding rows copied from the fill rows."""
    xa, nrx, above, below = bw.block_parts(h0, hn)
    w, left, width = bw.in_hw[1], bw.top_left[1], bw.inner[1]
    wp, cn, ct = bw.rows_cols[1], block.cols, block.row_stride
    isz, sram = block.itemsize, block.space
    out: list[Instr] = []
    if nrx:
        assert raws is not None
        raw = sub(raws[slot], cn, nrx * w)
        sn, sc, m = image.strides[0], image.strides[1], bw.mult
        start = image.offset + n * sn + c0 // m * sc + xa * w
        src_op = Operand(image.buf, image.offset, (0,))
        for k in range(m):  # output channel j reads input channel j // m: rows k, k+m, ...
            rows = Tile(
                sram,
                raw.addr + k * nrx * w * raw.itemsize,
                cn // m,
                nrx * w,
                raw.dtype,
                m * nrx * w,
            )
            loads.append((rows, dram(src_op, start, cn // m, nrx * w, sc)))
        for r in range(nrx):
            dst = Tile(
                sram, block.addr + ((above + r) * wp + left) * ct * isz, width, cn, block.dtype, ct
            )
            src = Tile(sram, raw.addr + r * w * raw.itemsize, cn, width, raw.dtype, nrx * w)
            out.append(Transpose(dst=dst, src=src))
    for first, count in ((0, above), (above + nrx, below)):
        if count:
            dst = Tile(sram, block.addr + first * wp * ct * isz, count * wp, cn, block.dtype, ct)
            src = Tile(sram, fill_addr, count * wp, cn, block.dtype, ct)
            out.append(Unary(op="copy", dst=dst, src=src))
    return out


def _tap(block: Tile, bw: BlockWindow, r: int, a: int, b: int, cn: int, pitch: int) -> Tile:
    """Tap (a, b) of output row r of the block (pixels `pitch` elements apart): WO
    pixels sw apart, cn channels."""
    pixel = (r * bw.stride[0] + a) * bw.rows_cols[1] + b
    addr = block.addr + pixel * pitch * block.itemsize
    return Tile(block.space, addr, bw.out_hw[1], cn, block.dtype, bw.stride[1] * pitch)


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
        if not bw.integer or bw.float_taps:
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
