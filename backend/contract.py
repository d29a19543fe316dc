"""Matrix kernels on top of the GEMM loop: (batched) matmul and conv2d as implicit GEMM.

matmul: A [..., M, K] and B [..., K, N] are strided views with broadcast batch axes
(stride 0). A view whose rows rather than columns are contiguous (a transposed
tensor, matmul_nt's B) is loaded block-transposed and turned on chip, so no transpose
kernel is needed in front of a matmul.

conv2d (NCHW x OIHW): the input is first laid out as a zero-padded NHWC image (one
layout kernel, `conv_prep`); the weights as [KH*KW*C, O] (params are declared in that
layout, so this is free for them). Then C[p, o] = sum_k A[p, k] W[k, o] with p an
output pixel and k = (kh, kw, c): for a fixed kh the (kw, c) run of one pixel is
contiguous in NHWC, so an A tile is one strided DMA per (output row, kh) it touches -
the implicit GEMM without im2col. The accumulator (pixels x channels) is transposed
on its way out, so the epilogue and the store work on NCHW rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwsim.isa import Transpose

from .emit import KernelBuilder, offset_tile, sub
from .expr import Expr
from .gemm import Gemm, OutWriter, StridedLoader, emit_gemm
from .norm_loader import NormLoader
from .space import Operand, Space, dram
from .views import View


def matrix_mode(view: View) -> str | None:
    """How a [..., R, C] view loads as matrix tiles: n (rows of contiguous columns),
    t (transposed blocks), or None (it must be copied first)."""
    r, c = view.shape[-2], view.shape[-1]
    sr, sc = view.strides[-2], view.strides[-1]
    if c == 1 or sc == 1:
        return "n"
    if r == 1 or sr == 1:
        return "t"
    return None


def acc_dtype(dtype: str) -> str:
    return "i32" if dtype == "i8" else "f32"


def emit_matmul(
    kb: KernelBuilder,
    a: View,
    b: View,
    out: View,
    epilogue: Expr | None,
    leaves: list[View],
    tile: tuple[int, int, int],
    zero: Operand | None,
    out_slots: int = 2,
    gemv: bool = False,
    a_prologue=None,
    out_norm=None,
    split_first: bool = False,
) -> None:
    """out = epilogue(a @ b, leaves...) with Leaf(0) the product (None: just a @ b).
    `gemv`: the cost model priced it as a matmul (emit_gemm's flag). `a_prologue`: a
    NormPrologue whose row program normalizes each A panel (backend/norm_loader.py).
    `out_norm`: a NormEpilogue whose row program normalizes each output tile's rows
    (backend/norm_epilogue.py). `split_first`: emit_gemm's (the first K step in pieces)."""
    batch = out.shape[:-2]
    m, n = out.shape[-2:]
    k = a.shape[-1]
    a_op = Operand.of(a, (*batch, m, k))
    b_op = Operand.of(b, (*batch, k, n))
    nb = len(batch)
    a_ld = StridedLoader(a_op, nb, nb + 1, matrix_mode(a))  # type: ignore[arg-type]
    if a_prologue is not None:
        a_ld = NormLoader(a_ld, a_prologue)  # type: ignore[assignment]
    b_ld = StridedLoader(b_op, nb, nb + 1, matrix_mode(b))  # type: ignore[arg-type]
    space = Space(out.shape, nb, nb + 1)
    ops = [None] + [Operand.of(v, out.shape) for v in leaves]
    dt = a.dtype
    writer = OutWriter(
        Operand(out.buf, out.offset, out.strides),
        space,
        epilogue,
        ops,
        acc_dtype(dt),
        out_slots=out_slots,
        norm=out_norm,
    )
    g = Gemm(batch, m, n, k, dt, acc_dtype(dt))
    emit_gemm(kb, g, tile, a_ld, b_ld, writer, zero, gemv=gemv, split_first=split_first)


@dataclass(frozen=True)
class ConvGeom:
    n: int
    c: int
    hp: int  # padded input height and width
    wp: int
    kh: int
    kw: int
    sh: int
    sw: int
    ho: int
    wo: int


class PatchLoader:
    """A tiles of the implicit GEMM: rows = output pixels, cols = (kh, kw, c)."""

    def __init__(self, xp: Operand, g: ConvGeom) -> None:
        self.xp, self.g, self.dtype = xp, g, xp.dtype

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        self.slots = kb.alloc2(rows, cols, self.dtype)

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        g, (img,) = self.g, bidx
        seg = g.kw * g.c
        tile = sub(self.slots[slot], rn, cn)
        out = []
        p = r0
        while p < r0 + rn:
            ho, wo = divmod(p, g.wo)
            count = min(g.wo - wo, r0 + rn - p)
            k = c0
            while k < c0 + cn:
                kh, j = divmod(k, seg)
                width = min(seg - j, c0 + cn - k)
                pix = (img * g.hp + ho * g.sh + kh) * g.wp + wo * g.sw
                ref = dram(self.xp, self.xp.offset + pix * g.c + j, count, width, g.sw * g.c)
                out.append((offset_tile(tile, p - r0, k - c0, count, width), ref))
                k += width
            p += count
        return out

    def ready(self, slot: int, rn: int, cn: int):
        return [], sub(self.slots[slot], rn, cn)


def emit_conv(
    kb: KernelBuilder,
    xp: View,
    g: ConvGeom,
    w2: View,
    out: View,
    epilogue: Expr | None,
    leaves: list[View],
    tile: tuple[int, int, int],
    zero: Operand | None,
    out_slots: int = 2,
) -> None:
    """out [N, O, P] = epilogue(conv) from padded NHWC xp and packed weights w2 [K, O]."""
    o = w2.shape[1]
    p = g.ho * g.wo
    a_ld = PatchLoader(Operand(xp.buf, xp.offset, xp.strides), g)
    w_op = Operand(w2.buf, w2.offset, (0, *w2.strides))  # shared by every image
    b_ld = StridedLoader(w_op, 1, 2, matrix_mode(w2))  # type: ignore[arg-type]
    space = Space(out.shape, 1, 2)
    ops = [None] + [Operand(v.buf, v.offset, v.strides) for v in leaves]
    dt = xp.dtype
    writer = OutWriter(
        Operand(out.buf, out.offset, out.strides),
        space,
        epilogue,
        ops,
        acc_dtype(dt),
        transpose=True,
        out_slots=out_slots,
    )
    gemm = Gemm((g.n,), p, o, g.kh * g.kw * g.c, dt, acc_dtype(dt))
    emit_gemm(kb, gemm, tile, a_ld, b_ld, writer, zero)


class PatchColumns:
    """B tiles of a convolution run as weights @ patches: rows = (kh, kw, c), cols =
    output pixels. Loaded pixel-major as PatchLoader loads its A tiles (one strided DMA
    per output row and kernel row), then transposed on chip."""

    def __init__(self, xp: Operand, g: ConvGeom) -> None:
        self.patches, self.dtype = PatchLoader(xp, g), xp.dtype

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        self.patches.alloc(kb, cols, rows)
        self.tr = kb.alloc(rows, cols, self.dtype)

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        return self.patches.load(slot, bidx, c0, cn, r0, rn)

    def ready(self, slot: int, rn: int, cn: int):
        t = sub(self.tr, rn, cn)
        return [Transpose(dst=t, src=sub(self.patches.slots[slot], cn, rn))], t


def emit_conv_t(
    kb: KernelBuilder,
    xp: View,
    g: ConvGeom,
    w_ok: View,
    out: View,
    epilogue: Expr | None,
    leaves: list[View],
    tile: tuple[int, int, int],
    zero: Operand | None,
    out_slots: int = 2,
) -> None:
    """out [N, O, P] = epilogue(w_ok @ patches^T) per image from padded NHWC xp and the
    weights w_ok [O, KH*KW*C]: the accumulator is already channels x pixels."""
    o, k = w_ok.shape
    w_op = Operand(w_ok.buf, w_ok.offset, (0, *w_ok.strides))  # shared by every image
    a_ld = StridedLoader(w_op, 1, 2, matrix_mode(w_ok))  # type: ignore[arg-type]
    b_ld = PatchColumns(Operand(xp.buf, xp.offset, xp.strides), g)
    ops = [None] + [Operand(v.buf, v.offset, v.strides) for v in leaves]
    dt = xp.dtype
    writer = OutWriter(
        Operand(out.buf, out.offset, out.strides),
        Space(out.shape, 1, 2),
        epilogue,
        ops,
        acc_dtype(dt),
        out_slots=out_slots,
    )
    gemm = Gemm((g.n,), o, g.ho * g.wo, k, dt, acc_dtype(dt))
    emit_gemm(kb, gemm, tile, a_ld, b_ld, writer, zero)
