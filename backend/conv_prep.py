"""Operands of a convolution in the layouts the implicit GEMM loads contiguously.

- x [N, C, H, W] -> xp [N, H + 2ph, W + 2pw, C]: a `prep` kernel writes the image
  with channels as the contiguous axis and the border filled with zeros (a qconv2d's:
  with its a_zero, the zero of x - a_zero), so the GEMM never loads out of bounds. It
  runs the row-block loop of eqsat/spatial_plan.py PrepPlan (blocks of rows loaded
  per channel plane, transposed on chip into whole padded rows, one store a step);
  an x whose columns are not contiguous, or with no tile fitting SRAM, goes through
  the streaming kernel instead (a transposed walk, then the border regions). With G
  groups the image is group-major, [G, N, Hp, Wp, C/G], so that each group's GEMM
  reads a dense NHWC image of its own.
- w [O, C/G, KH, KW] -> [KH*KW*C/G, O]: free when w is a param (declared in that
  layout, or in conv_transposed's [O, KH, KW, C], read transposed: layouts.py), else
  one copy kernel; group g's GEMM reads columns [g*O/G, (g+1)*O/G).

`nhwc_image` is the prep on its own (any padding on each side, any fill, rows and
columns cropped or extended to what the windows touch); pooling and depthwise
convolution (window.py) read the same layout when x's channel planes are not
row-major (else the row-block kernel builds it on chip).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from eqsat.spatial_plan import PrepPlan, prep_plan
from hwsim.dtypes import ITEMSIZE
from hwsim.isa import Binary, Tile, Transpose

from .contract import ConvGeom, matrix_mode
from .emit import KernelBuilder, Pipeline, offset_tile
from .ewise import emit_ewise
from .expr import Leaf
from .space import Operand, dram
from .views import Imm, View

if TYPE_CHECKING:
    from .compiler import Compiler

PACK = (2, 3, 1, 0)


def conv_inputs(
    c: Compiler,
    i: int,
    x: View,
    w: View,
    stride: tuple,
    padding: tuple,
    out_hw: tuple,
    pad_value: int = 0,
    groups: int = 1,
) -> tuple[View, View, ConvGeom]:
    """(padded image, packed weights, geometry of one group's GEMM). With groups the
    image is [G, N, Hp, Wp, C/G]; group g's image starts at g * N*Hp*Wp*C/G."""
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw) = stride, padding
    hp, wp = h + 2 * ph, wd + 2 * pw
    geom = ConvGeom(n, cg, hp, wp, kh, kw, sh, sw, out_hw[0], out_hw[1])
    zero = Imm(pad_value if x.dtype == "i8" else 0.0, x.dtype)
    xp = nhwc_image(c, i, x, (ph, pw), (hp, wp), zero, groups)
    packed = w.permute(PACK)
    w2 = packed.reshape((kh * kw * cg, o))
    if w2 is None or matrix_mode(w2) is None:
        w2 = c.materialize(packed, c.label(i) + ".w", i).reshape((kh * kw * cg, o))
    return xp, w2, geom  # type: ignore[return-value]


def nhwc_image(
    c: Compiler,
    i: int,
    x: View,
    top_left: tuple[int, int],
    rows_cols: tuple[int, int],
    fill: Imm,
    groups: int = 1,
) -> View:
    """A `prep` kernel writing x [N, C, H, W] as a [N, rows, cols, C] image (groups:
    [G, N, rows, cols, C/G]) with x's top-left element at `top_left` and every other
    element `fill`; rows and columns of x beyond the image are left out."""
    n, ch, h, wd = x.shape
    (top, left), (rows, cols) = top_left, rows_cols
    cg = ch // groups
    shape = (n, rows, cols, ch) if groups == 1 else (groups, n, rows, cols, cg)
    xp = c.new_buffer(x.dtype, shape, c.label(i) + ".nhwc")
    hh, ww = min(h, max(0, rows - top)), min(wd, max(0, cols - left))
    img, row = rows * cols * cg, cols * cg
    start = (top * cols + left) * cg
    interior, src = None, x
    if hh and ww:
        src = x.slice((0, 0, 0, 0), (n, ch, hh, ww))
        if groups == 1:
            interior = View(xp.buf, start, (n, ch, hh, ww), (img, 1, row, cg))
        else:
            split = src.reshape((n, groups, cg, hh, ww))
            if split is None:  # channels not splittable in place: a dense copy first
                split = c.materialize(src, c.label(i)).reshape((n, groups, cg, hh, ww))
            src = split
            strides = (img, n * img, 1, row, cg)
            interior = View(xp.buf, start, (n, groups, cg, hh, ww), strides)
    plan = None
    if x.strides[3] == 1 or wd == 1:  # the loop's loads need unit column stride
        isz = ITEMSIZE[x.dtype]
        plan = prep_plan(c.hw, x.shape, isz, top_left, rows_cols, groups, fill.value != 0)
        if plan is not None and plan.whole_rows and x.strides[2] != wd and hh > 1:
            plan = replace(plan, whole_rows=False)  # rows apart: one load per row
    if plan is not None:
        c.add_kernel(
            c.kernel_name(i, ".prep"),
            i,
            "prep",
            lambda kb: _emit_plan(kb, plan, x, xp, fill),
            [x],
            [xp],
        )
        return xp
    borders = _borders(xp, groups * n, cg, (top, left), (hh, ww), (rows, cols))

    def emit(kb) -> None:
        if interior is not None:
            emit_ewise(kb, interior, Leaf(0), [src], c.zero())  # type: ignore[list-item]
        for k, region in enumerate(borders):
            if k or interior is not None:
                kb.fence()
            emit_ewise(kb, region, fill, [], c.zero())

    reads = [src] if interior is not None else []
    c.add_kernel(c.kernel_name(i, ".prep"), i, "prep", emit, reads, [xp])
    return xp


def _emit_plan(kb: KernelBuilder, plan: PrepPlan, x: View, xp: View, fill: Imm) -> None:
    """The row-block loop of eqsat/spatial_plan.py PrepPlan: per image, blocks of rows
    of x loaded [C/G, rows*W], transposed row by row into the interior of an SRAM tile
    of whole padded NHWC rows (its border rows and columns hold the fill from the
    prologue on), stored at once, the image's top border with its first block and its
    bottom border with its last."""
    dt, isz = x.dtype, ITEMSIZE[x.dtype]
    nimg = x.shape[0]
    cg, (hh, ww), block = plan.cg, plan.inner, plan.block
    (_, left), cols = plan.top_left, plan.rows_cols[1]
    top, bottom = plan.borders
    row, img = cols * cg, plan.rows_cols[0] * cols * cg
    right = cols - left - ww
    sn, sc, sh, _ = x.strides
    src, dst = Operand(x.buf, x.offset, x.strides), Operand(xp.buf, xp.offset, xp.strides)
    ins = kb.alloc2(cg, block * ww, dt)
    outs = kb.alloc2(plan.slot_rows, row, dt)
    pipe = Pipeline(kb, "p")
    one = dram(src, x.offset, 1, 1, 1)  # loaded into a larger tile: zeros beyond it
    pipe.load("z", [(o, one) for o in outs])
    if fill.value != 0:  # the border rows and columns hold the fill, not zeros
        regions = []
        for o in outs:
            for r0, n in ((1, top), (1 + top + block, bottom)):
                if n:
                    regions.append(offset_tile(o, r0, 0, n, row))
            for c0, w in ((0, left), (left + ww, right)):
                if w:
                    regions.append(offset_tile(o, 1 + top, c0 * cg, block, w * cg))
        pipe.compute([Binary(op="add", dst=t, a=t, imm=fill.value) for t in regions])
    count = hh // block
    for image in range(plan.images):
        g, n = divmod(image, nimg)
        first = x.offset + n * sn + g * cg * sc
        base = xp.offset + image * img
        for j in range(count):
            r0 = j * block
            tile = ins[pipe.slot("x")]
            if plan.whole_rows:
                pairs = [(tile, dram(src, first + r0 * sh, cg, block * ww, sc))]
            else:
                pairs = [
                    (
                        offset_tile(tile, 0, r * ww, cg, ww),
                        dram(src, first + (r0 + r) * sh, cg, ww, sc),
                    )
                    for r in range(block)
                ]
            gen, _ = pipe.load("x", pairs)
            pipe.begin_out()
            o = outs[pipe.out_slot()]
            at = o.addr + ((1 + top) * row + left * cg) * isz
            pipe.compute(
                [
                    Transpose(
                        dst=Tile(o.space, at + r * row * isz, ww, cg, dt),
                        src=offset_tile(tile, 0, r * ww, cg, ww),
                    )
                    for r in range(block)
                ]
            )
            pipe.release(gen)
            # slot rows stored: the top border too with the first block, the bottom
            # border too with the last; they go to padded rows r0 + lo on
            lo = 0 if j == 0 else top
            hi = top + block + (bottom if j == count - 1 else 0)
            ref = dram(dst, base + (r0 + lo) * row, hi - lo, row, row)
            pipe.store([(ref, offset_tile(o, 1 + lo, 0, hi - lo, row))])


def _borders(xp: View, images: int, ch: int, top_left, inner, rows_cols) -> list[View]:
    """The regions of `images` [rows, cols, ch] images around an inner block."""
    (top, left), (hh, ww), (rows, cols) = top_left, inner, rows_cols
    img, row = rows * cols * ch, cols * ch
    top = min(top, rows)
    out = []
    if top:
        out.append(View(xp.buf, 0, (images, top * row), (img, 1)))
    if rows - top - hh:
        out.append(View(xp.buf, (top + hh) * row, (images, (rows - top - hh) * row), (img, 1)))
    left = min(left, cols)
    if hh and left:
        out.append(View(xp.buf, top * row, (images, hh, left * ch), (img, row, 1)))
    if hh and cols - left - ww:
        right = (cols - left - ww) * ch
        out.append(View(xp.buf, top * row + (left + ww) * ch, (images, hh, right), (img, row, 1)))
    return out
