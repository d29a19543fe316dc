"""Operands of a convolution in the layouts the implicit GEMM loads contiguously.

- x [N, C, H, W] -> xp [N, H + 2ph, W + 2pw, C]: a `prep` kernel writes the interior
  through a transposed walk (channels become the contiguous axis) and fills the
  border with zeros (a qconv2d's: with its a_zero, the zero of x - a_zero), so the
  GEMM never loads out of bounds. With G groups the image is group-major,
  [G, N, Hp, Wp, C/G], so that each group's GEMM reads a dense NHWC image of its own.
- w [O, C/G, KH, KW] -> [KH*KW*C/G, O]: free when w is a param (declared in that
  layout, layouts.py), else one copy kernel; group g's GEMM reads columns
  [g*O/G, (g+1)*O/G).

`nhwc_image` is the prep on its own (any padding on each side, any fill, rows and
columns cropped or extended to what the windows touch); pooling and depthwise
convolution (window.py) read the same layout.
"""

from __future__ import annotations

from .compiler import Compiler
from .contract import ConvGeom, matrix_mode
from .ewise import emit_ewise
from .expr import Leaf
from .views import Imm, View

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
