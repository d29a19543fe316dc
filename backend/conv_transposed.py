"""A convolution run as weights @ patches: out[O, pixels] = w[O, K] @ patches[K, pixels]
per image, from the same padded NHWC image (conv_prep) as the implicit GEMM.

The implicit GEMM (contract.emit_conv) puts pixels on the array's streamed rows and
output channels on its columns, so a convolution with fewer output channels than the
array has columns (ResNet's 64-channel layers on a 128-wide array, its 7x7 stem)
leaves columns idle; here the pixels fill the columns and the channels stream. The
patch tiles are loaded pixel-major as before and transposed on chip; the accumulator
is already channels x pixels, so the output needs no transpose. The weights are A,
[O, KH*KW*C] (params used only by such convolutions are stored in that layout,
layouts.py). eqsat/costs.py conv_form decides by price, and
eqsat/spatial_plan.py transposed_work is this GEMM's work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.types import DType, TensorType
from eqsat.spatial_plan import transposed_work
from eqsat.tiling import node_tile
from hwsim.dtypes import ITEMSIZE

from .contract import ConvGeom, acc_dtype, emit_conv_t, matrix_mode
from .gemm import Gemm
from .gemm_kernel import choose_tile, epi_bytes, epi_leaves
from .space import Space
from .views import View

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_transposed(
    c: Compiler,
    i: int,
    node,
    x: View,
    w: View,
    w2: View,
    xp: View,
    geom: ConvGeom,
    out3: View,
    epi,
    leaves: list[View],
    work,
) -> None:
    """One kernel: out3 [N, O, HO*WO] = epilogue(weights @ patches) per image."""
    o = w.shape[0]
    k = geom.kh * geom.kw * geom.c
    a = w.permute((0, 2, 3, 1)).reshape((o, k))
    if a is None or matrix_mode(a) is None:
        a = w2.permute((1, 0))  # the packed [K, O] weights, read transposed
    g = Gemm((geom.n,), o, geom.ho * geom.wo, k, x.dtype, acc_dtype(x.dtype))
    space = Space(out3.shape, 1, 2)
    leaves = epi_leaves(c, i, leaves, space, c.hw.array_rows, c.hw.array_cols)
    s = ITEMSIZE[x.dtype]
    sizes = (s, s, ITEMSIZE[out3.dtype], epi_bytes(epi, leaves, space, out3.dtype, g.acc_dtype))
    modes = matrix_mode(a) + "t"  # type: ignore[operator]
    out_t = TensorType(DType(out3.dtype), (geom.n, o, geom.ho, geom.wo))
    xt, wt = TensorType(DType(x.dtype), x.shape), TensorType(DType(w.dtype), w.shape)
    work = transposed_work(work, xt, wt, out_t)
    tile, slots = choose_tile(c, work, g, sizes, modes, node_tile(node.attr_dict))
    zero = c.zero
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_conv_t(kb, xp, geom, a, out3, epi, leaves, tile, zero(), slots),
        [xp, a, *leaves],
        [out3],
    )
