"""A pointwise convolution (1x1 kernel, stride 1, no padding, no groups) as a matmul.

Per image, out[O, H*W] = w[O, C] @ x[C, H*W]: the NCHW input is already the B operand
(rows of contiguous pixels) and the NCHW output the product's own row-major layout, so
there is no prep kernel in front and no transpose of the accumulator behind. The
weights [O, C, 1, 1] are A; params of pointwise convolutions keep their OIHW layout
(layouts.py), which makes A rows contiguous too. eqsat/spatial_plan.py is_pointwise
decides when this form is taken, and pointwise_work prices exactly this GEMM.
"""

from __future__ import annotations

from eqsat.spatial_plan import pointwise_work

from .compiler import Compiler
from .contract import matrix_mode
from .expr import Bin, Expr, Imm, Leaf
from .views import View


def lower_pointwise(
    c: Compiler, i: int, node, x: View, w: View, attrs, out: View, epi, leaves, work
) -> None:
    """out [N, O, H, W] = epilogue(w @ x per image), one matmul kernel."""
    from .lower_contract import _substitute, _weight_sums, _weight_value, add_gemm_kernel

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
    if za:  # sum((x - za) * w) = sum(x * w) - za * sum(w)
        ws = _weight_sums(c, i, a2, _weight_value(c, node), (1, 2, 3), ".wsum")
        q: Expr = Bin("sub", Leaf(0), Bin("mul", Leaf(1 + len(leaves)), Imm(za, "i32")))
        epi = q if epi is None else _substitute(epi, q)
        leaves = [*leaves, ws.reshape((o, 1, 1))]
    out3 = out.reshape((n, o, p))
    assert out3 is not None
    l3 = []
    for v in leaves:
        bv = v.broadcast_to(out.shape)
        r = bv.reshape(out3.shape)
        l3.append(r if r is not None else c.materialize(bv, c.label(i), i).reshape(out3.shape))
    work = pointwise_work(work, _type(x), _type(w))
    add_gemm_kernel(c, i, node, a, b, out3, epi, l3, work)


def _type(v: View):
    from eqsat.ir.types import DType, TensorType

    return TensorType(DType(v.dtype), v.shape)
