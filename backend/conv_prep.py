"""Operands of a convolution in the layouts the implicit GEMM loads contiguously.

- x [N, C, H, W] -> xp [N, H + 2ph, W + 2pw, C]: a `prep` kernel writes the interior
  through a transposed walk (channels become the contiguous axis) and fills the
  border with zeros (a qconv2d's: with its a_zero, the zero of x - a_zero), so the
  GEMM never loads out of bounds.
- w [O, C, KH, KW] -> [KH*KW*C, O]: free when w is a param (declared in that layout,
  layouts.py), else one copy kernel.
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
) -> tuple[View, View, ConvGeom]:
    n, ch, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (ph, pw) = stride, padding
    hp, wp = h + 2 * ph, wd + 2 * pw
    geom = ConvGeom(n, ch, hp, wp, kh, kw, sh, sw, out_hw[0], out_hw[1])
    xp = c.new_buffer(x.dtype, (n, hp, wp, ch), c.label(i) + ".nhwc")
    interior = View(xp.buf, (ph * wp + pw) * ch, (n, ch, h, wd), (hp * wp * ch, 1, wp * ch, ch))
    borders = _borders(xp, n, ch, h, wd, ph, pw)
    zero = Imm(pad_value if x.dtype == "i8" else 0.0, x.dtype)

    def emit(kb) -> None:
        emit_ewise(kb, interior, Leaf(0), [x], c.zero())
        for region in borders:
            kb.fence()
            emit_ewise(kb, region, zero, [], c.zero())

    c.add_kernel(c.kernel_name(i, ".prep"), i, "prep", emit, [x], [xp])
    packed = w.permute(PACK)
    w2 = packed.reshape((kh * kw * ch, o))
    if w2 is None or matrix_mode(w2) is None:
        w2 = c.materialize(packed, c.label(i) + ".w", i).reshape((kh * kw * ch, o))
    return xp, w2, geom  # type: ignore[return-value]


def _borders(xp: View, n: int, ch: int, h: int, wd: int, ph: int, pw: int) -> list[View]:
    _, hp, wp, _ = xp.shape
    img, row = hp * wp * ch, wp * ch
    out = []
    if ph:
        out.append(View(xp.buf, 0, (n, ph * row), (img, 1)))
        out.append(View(xp.buf, (ph + h) * row, (n, (hp - ph - h) * row), (img, 1)))
    if pw:
        out.append(View(xp.buf, ph * row, (n, h, pw * ch), (img, row, 1)))
        out.append(View(xp.buf, ph * row + (pw + wd) * ch, (n, h, pw * ch), (img, row, 1)))
    return out
