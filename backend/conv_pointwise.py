"""A pointwise convolution (1x1 kernel, stride 1, no padding, no groups) as a matmul.

Per image, out[O, H*W] = w[O, C] @ x[C, H*W]: the NCHW input is already the B operand
(rows of contiguous pixels) and the NCHW output the product's own row-major layout, so
there is no prep kernel in front and no transpose of the accumulator behind. The
weights [O, C, 1, 1] are A; params of pointwise convolutions keep their OIHW layout
(layouts.py), which makes A rows contiguous too. eqsat/spatial_plan.py is_pointwise
decides when this form is taken, and pointwise_work prices exactly this GEMM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.spatial_plan import pointwise_work

from .contract import matrix_mode
from .gemm_kernel import add_gemm_kernel
from .views import View
from .zero_points import conv_gemm_epilogue

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_pointwise(
    c: Compiler, i: int, node, x: View, w: View, attrs, out: View, epi, leaves, work
) -> None:
    """out [N, O, H, W] = epilogue(w @ x per image), one matmul kernel."""
    n, ch, h, wd = x.shape
    o = w.shape[0]
    p = h * wd
    b = x.reshape((n, ch, p))
    if b is None or matrix_mode(b) is None:
        b = c.materialize(x, c.label(i), i).reshape((n, ch, p))
    a2 = w.reshape((o, ch))
    if a2 is None or matrix_mode(a2) is None:
        a2 = c.materialize(w, c.label(i) + ".w", i).reshape((o, ch))
    a = View(a2.buf, a2.offset, (n, o, ch), (0, *a2.strides))  # shared by every image
    za = int(attrs.get("a_zero", 0))
    out3, epi, l3 = conv_gemm_epilogue(c, i, node, a2, za, out, epi, leaves)
    work = pointwise_work(work, _type(x), _type(w))
    add_gemm_kernel(c, i, node, a, b, out3, epi, l3, work)


def _type(v: View):
    from eqsat.ir.types import DType, TensorType

    return TensorType(DType(v.dtype), v.shape)
