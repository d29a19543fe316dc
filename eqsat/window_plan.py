"""The row-block window kernel (backend/window_block.py), planned once for the backend
and the cost model, and the price of every window op (pooling, depthwise convolution).

In the nhwc layout (spatial_plan.window_layout), a window kernel reads each block of
image rows once: per step, `ht` output rows of one image
and `ct` channels. The step's block is the (ht - 1) * sh + extent padded rows those
rows' windows read, every padded column, ct channels, as an SRAM tile of rows*cols
pixels x ct. Direct (x's channel planes row-major, what the cost model assumes): the
rows of x in it come in by one DMA ([ct, rows*W]) and are transposed on chip, one
instruction a row, between border columns the prologue filled once (one element
loaded into the tile zeroes the rest, then the fill is added); padding rows are copied
from fill rows kept beside the block; with a channel multiplier M (output channel o
reads x's channel o // M, ct a multiple of M) one DMA per m fills every M-th row of
the raw tile. Otherwise (no multiplier) a prep kernel writes the padded NHWC
image (conv_prep.nhwc_image) and the block comes in by one DMA. Every tap of every
output row is then one vector instruction on a strided view of the block (rows sw
pixels apart); a depthwise convolution's per-tap weights (taps x ct) come in beside
it. The epilogue (bias, clip, residual, requantization, an average's division) runs
over the output tile with the step's epilogue operands, and one store writes the
ht*WO x ct output tile. DRAM traffic is x once (plus the halo rows of each block), the
output once and the weights per step, instead of a prep pass plus KH*KW strided views
of the padded image per output tile.

The (ht, ct) tiling is the one whose loop the queues (spatial_plan.Queues) run fastest
among a few that fit SRAM (BlockWindow.tiles lists what the backend allocates, the
epilogue's intermediate tiles at their largest). Windows the block kernel does not
take (the nchw layout, a channel multiplier on a prepped image, an epilogue operand
no tile can load, no tiling that fits) run as one streaming kernel over KH*KW views of the image
(spatial_plan.window_streams).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from eqsat.ir.strides import Strides, row_major
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY
from eqsat.ops.fused import contraction_of
from eqsat.ops.spatial import Window2d, window2d
from eqsat.spatial_plan import (
    _CONVS,
    COL,
    FULL,
    NHWC,
    REQUANT_CH,
    ROW,
    TR,
    ZERO_ISZ,
    Repeat,
    Step,
    Stream,
    StreamPlan,
    _epilogue,
    add_costs,
    conv_of,
    conv_window,
    count_streams,
    is_depthwise,
    kernel_cost,
    leaf_class,
    plan_cycles,
    plan_loop,
    plans_cost,
    requant_ch_cycles,
    shift_requant_ch,
    stream_loop,
    tiles_end,
    window_layout,
    window_prep_cost,
    window_streams,
)
from hwsim import timing
from hwsim.costmodel import KernelCost, tile_splits
from hwsim.hardware import Hardware

# An epilogue op computed on one row of the tile (a broadcast operand's): a qconv2d's
# za * sum(w), priced on ct elements.
ROW_OP = "row:"
MAX_BLOCKS = 8  # block heights tried besides the powers of two: HO / 1 .. HO / 8


@dataclass(frozen=True)
class BlockWindow:
    """What the row-block kernel's tiling and price depend on. `leaves`: the epilogue
    operands as (strides over the [N, HO*WO, C] output space, item size); `inter`:
    the epilogue's intermediate tiles (at most rt x ct of 4 bytes each)."""

    n: int
    ch: int
    rows_cols: tuple[int, int]  # the padded image
    out_hw: tuple[int, int]
    stride: tuple[int, int]
    extent_h: int  # padded rows one window spans
    taps: int
    kind: str  # max | avg | dw
    isz: int  # the image's (and weights') item size
    out_isz: int
    integer: bool  # taps summed in i32 (else f32)
    epilogue: bool  # an epilogue runs after the taps (the sums in a tile of their own)
    leaves: tuple[tuple[Strides, int], ...] = ()
    inter: int = 0
    zeros: int = 0  # the epilogue's zero tiles (kinds), besides the tile they load into
    direct: bool = False  # the kernel reads x [N, C, H, W] itself (no prep kernel)
    in_hw: tuple[int, int] = (0, 0)
    top_left: tuple[int, int] = (0, 0)  # where x's first row and column go
    fill: bool = False  # the padding is not zero (max pooling's, a qconv2d's za)
    mult: int = 1  # output channels per input channel (direct only; ct a multiple of it)

    @property
    def acc(self) -> bool:
        """Do the taps combine in a 4-byte tile of their own (not the output slot)?"""
        return self.epilogue or self.out_isz != 4

    @property
    def float_taps(self) -> bool:
        """An integer depthwise convolution reading x itself: its rows are turned into
        f32 (the transposes cast), its taps summed by fma in an f32 tile, exactly (i8
        products and sums of fewer than 2**10 of them stay below 2**24), then cast to
        the i32 sums once a tile: one op a tap instead of a mul and an add."""
        return self.kind == "dw" and self.integer and self.direct and self.taps < 2**10

    @property
    def block_isz(self) -> int:
        return 4 if self.float_taps else self.isz

    def block_rows(self, ht: int) -> int:
        return (ht - 1) * self.stride[0] + self.extent_h

    @property
    def inner(self) -> tuple[int, int]:
        """Rows and columns of x the windows read."""
        (h, w), (top, left), (hp, wp) = self.in_hw, self.top_left, self.rows_cols
        return min(h, max(0, hp - top)), min(w, max(0, wp - left))

    def block_parts(self, h0: int, hn: int) -> tuple[int, int, int, int]:
        """(first row of x, rows of x, padding rows above them, padding rows below) of
        the block of output rows h0 .. h0 + hn."""
        pr0, nr = h0 * self.stride[0], self.block_rows(hn)
        top, hh = self.top_left[0], self.inner[0]
        xa, xb = min(max(pr0 - top, 0), hh), min(max(pr0 + nr - top, 0), hh)
        above = min(max(top - pr0, 0), nr)
        return xa, xb - xa, above, nr - above - (xb - xa)

    def raw_rows(self, ht: int) -> int:
        """Rows of x a step loads at most (direct)."""
        return min(self.block_rows(ht), self.inner[0])

    def fill_rows(self, ht: int) -> int:
        """Padded rows of fill kept to copy over a block's padding rows (direct)."""
        top, bottom = self.top_left[0], self.rows_cols[0] - self.top_left[0] - self.inner[0]
        return min(self.block_rows(ht), max(top, bottom))

    def whole_rows(self, ht: int) -> int:
        """Rows (pixels) of the direct kernel's one block tile: a spare row (the element
        the zeroing load brings in), the block, the fill rows."""
        return 1 + (self.block_rows(ht) + self.fill_rows(ht)) * self.rows_cols[1]

    def tiles(self, ht: int, ct: int) -> list[tuple[int, int, int]]:
        """SRAM tiles (rows, cols, item size) in the backend's allocation order: two
        block slots, two weight slots, the epilogue's operand slots (and a transposed
        operand's copy) and intermediates (at most rt x ct of 4 bytes each), the sums,
        a depthwise i32 product row, two output slots, the epilogue's zero tiles."""
        rt, wo = ht * self.out_hw[1], self.out_hw[1]
        if self.direct:  # two slots of x's rows, one block (module doc)
            raw = self.raw_rows(ht)
            tiles = [(ct, raw * self.in_hw[1], self.isz)] * 2 if raw else []
            tiles.append((self.whole_rows(ht), ct, self.block_isz))
        else:
            block = (self.block_rows(ht) * self.rows_cols[1], ct, self.isz)
            tiles = [block, block]
        if self.kind == "dw":
            tiles += [(self.taps, ct, self.isz)] * 2
        if self.float_taps:  # the weights as f32
            tiles.append((self.taps, ct, 4))
        dims = {FULL: (rt, ct), ROW: (1, ct), COL: (rt, 1), TR: (ct, rt)}
        for st, isz in self.leaves:
            cls = leaf_class(st[1], st[2], rt, ct)
            tiles += [(*dims[cls], isz)] * 2  # type: ignore[index]
            if cls == TR:
                tiles.append((rt, ct, isz))
        tiles += [(rt, ct, 4)] * self.inter
        if self.float_taps:  # the f32 sums
            tiles.append((rt, ct, 4))
        if self.acc:
            tiles.append((rt, ct, 4))
        if self.kind == "dw" and self.integer and not self.float_taps:
            tiles.append((wo, ct, 4))
        tiles += [(rt, ct, self.out_isz)] * 2
        if self.zeros:
            tiles += [(rt + 1, ct, ZERO_ISZ)] + [(rt, ct, 4)] * self.zeros
        return tiles

    def fits(self, hw: Hardware, ht: int, ct: int) -> bool:
        return tiles_end(self.tiles(ht, ct)) <= hw.sram_bytes

    def tap_ops(self) -> list[str]:
        """The vector ops of one output row's taps, in order (backend/window_block.py)."""
        t = self.taps
        if self.kind == "dw":
            if self.integer and not self.float_taps:
                return ["mul"] + ["mul", "add"] * (t - 1)
            return ["fma"] * t
        if t == 1:
            return ["copy"]
        return ["max" if self.kind == "max" else "add"] * (t - 1)


def block_window(
    x: TensorType,
    g: Window2d,
    kind: str,
    out_isz: int,
    mult: int = 1,
    extra: Sequence[tuple[Strides, int]] = (),
    epilogue: bool = False,
    inter: int = 0,
    direct: bool = True,
    fill: bool = False,
) -> BlockWindow | None:
    """The row-block kernel of a window op, or None where it does not run (the nchw
    layout, a channel multiplier on a prepped image, an epilogue operand whose tile
    cannot be loaded).
    `extra`: epilogue operands as strides over the [N, C, HO, WO] output; `direct`:
    x's channel planes are row-major (the kernel reads x itself, no prep), unless the
    windows read no row or column of x; `fill`: the padding is not zero."""
    if window_layout(g, mult) != NHWC:
        return None
    ho, wo = g.out_hw
    leaves = []
    for st, isz in extra:
        merged = block_strides(st, ho, wo)
        if merged is None or leaf_class(merged[1], merged[2], 2, 2) is None:
            return None
        leaves.append((merged, isz))
    bw = BlockWindow(
        x.shape[0],
        x.shape[1] * mult,
        (g.rows, g.cols),
        g.out_hw,
        g.stride,
        g.extent[0],
        g.taps,
        kind,
        x.dtype.itemsize,
        out_isz,
        not x.dtype.is_float,
        epilogue,
        tuple(leaves),
        inter,
        0,
        False,
        x.shape[2:],  # type: ignore[arg-type]
        (g.pads[0], g.pads[1]),
        fill,
        mult,
    )
    bw = replace(bw, direct=direct and min(bw.inner) > 0)
    return bw if bw.direct or mult == 1 else None


def block_strides(st: Strides, ho: int, wo: int) -> Strides | None:
    """[N, C, HO, WO] strides as strides over [N, HO*WO, C] (None: the output rows and
    columns do not merge into one axis for this operand)."""
    s0, s1, s2, s3 = st
    if ho > 1 and wo > 1 and s2 != wo * s3:
        return None
    return (s0, s3 if wo > 1 else s2, s1)


@dataclass(frozen=True)
class BlockPlan:
    """The row-block kernel's loop: `ht` output rows x `ct` channels a step, its steps
    in the order the backend emits them (images, row blocks, channel blocks)."""

    ht: int
    ct: int
    order: Repeat
    fits: bool = True
    prologue: tuple[int, int] | None = None  # direct: the zeroing load, the fill

    def stream(self, wo: int) -> StreamPlan:
        return StreamPlan((self.ht * wo, self.ct), self.order, self.prologue, self.fits)


def block_prologue(hw: Hardware, bw: BlockWindow, ht: int, ct: int) -> tuple[int, int] | None:
    """The direct kernel's prologue: one element of x loaded into the block tile
    (zeroing the rest), then the fill added to all of it but the spare row."""
    if not bw.direct:
        return None
    fill = timing.vector_cycles(hw, (bw.whole_rows(ht) - 1) * ct, "add") if bw.fill else 0
    return timing.dma_cycles(hw, bw.isz), fill


def _steps(
    hw: Hardware, bw: BlockWindow, ht: int, ct: int, ops: Sequence[str] = (), priced: bool = True
) -> Repeat:
    """The loop of a (ht, ct) tiling; `priced`: with the epilogue's compute (`ops`),
    else the taps' only (what the block height is chosen by)."""
    ho, wo = bw.out_hw
    cstr = [(0, bw.ch, 1), (0, 0, 0), *(st for st, _ in bw.leaves)]
    tap_ops = bw.tap_ops()

    def step(h0: int, hn: int, cn: int) -> Step:
        rn = hn * wo
        loads = []
        compute = hn * sum(timing.vector_cycles(hw, wo * cn, op) for op in tap_ops)
        if bw.float_taps:  # the weights cast to f32, the f32 sums to i32
            compute += timing.vector_cycles(hw, bw.taps * cn, "copy")
            compute += timing.vector_cycles(hw, rn * cn, "copy")
        if bw.direct:  # x's rows in, turned into NHWC rows; the padding rows copied
            _, nrx, above, below = bw.block_parts(h0, hn)
            width = bw.inner[1]
            if nrx:  # each input channel's rows once per output channel it feeds
                loads += [cn // bw.mult * nrx * bw.in_hw[1] * bw.isz] * bw.mult
                compute += nrx * timing.vector_cycles(hw, width * cn, "transpose")
            for pad in (above, below):
                if pad:
                    compute += timing.vector_cycles(hw, pad * bw.rows_cols[1] * cn, "copy")
        else:
            loads.append(bw.block_rows(hn) * bw.rows_cols[1] * cn * bw.isz)
        if bw.kind == "dw":
            loads.append(bw.taps * cn * bw.isz)
        for st, isz in bw.leaves:
            cls = leaf_class(st[1], st[2], rn, cn)
            elements = {FULL: rn * cn, ROW: cn, COL: rn, TR: rn * cn}[cls]  # type: ignore[index]
            loads.append(elements * isz)
            if cls == TR and priced:
                compute += timing.vector_cycles(hw, rn * cn, "transpose")
        if priced:
            for op in ops:
                if op.startswith(ROW_OP):
                    compute += timing.vector_cycles(hw, cn, op.removeprefix(ROW_OP))
                elif op.startswith(REQUANT_CH):
                    compute += requant_ch_cycles(hw, op, cstr, 1, 2, rn, cn)
                else:
                    compute += timing.vector_cycles(hw, rn * cn, op)
        out = rn * cn * bw.out_isz
        transfer = sum(timing.dma_transfer_cycles(hw, b) for b in [*loads, out])
        queue = tuple(timing.dma_cycles(hw, b) for b in loads)
        return Step(queue, compute, timing.dma_cycles(hw, out), transfer, sum(loads) + out)

    def row_block(h0: int, hn: int) -> tuple:
        return tuple(Repeat(k, (step(h0, hn, cn),)) for cn, k in tile_splits(bw.ch, ct))

    # the row blocks, runs of blocks alike (the same rows of x and of padding) as one
    body: list[Repeat] = []
    last = None
    for h0 in range(0, ho, ht):
        hn = min(ht, ho - h0)
        key = (hn, *bw.block_parts(h0, hn)[1:]) if bw.direct else (hn,)
        if key == last:
            body[-1] = Repeat(body[-1].count + 1, body[-1].body)
        else:
            body.append(Repeat(1, row_block(h0, hn)))
        last = key
    return Repeat(bw.n, tuple(body))


def _largest(limit: int, fits) -> int:
    """The largest k in 1..limit with fits(k) (fits is monotone), 0 if none."""
    if not fits(1):
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


@functools.cache
def block_tiling(hw: Hardware, bw: BlockWindow) -> tuple[int, int]:
    """(ht, ct) of the row-block kernel: for each block height tried (the largest that
    fits, the powers of two below it, HO / 1..8), the channels split evenly into as
    few blocks as fit; the tiling whose loop of taps the queues run fastest ((0, 0):
    nothing fits)."""
    ho, ch, m = bw.out_hw[0], bw.ch, bw.mult
    hmax = _largest(ho, lambda h: bw.fits(hw, h, m))
    if not hmax:
        return 0, 0
    heights = {hmax, *(2**k for k in range(hmax.bit_length()) if 2**k <= hmax)}
    heights |= {h for k in range(1, MAX_BLOCKS + 1) if (h := -(-ho // k)) <= hmax}
    best = None
    for h in sorted(heights):
        cmax = m * _largest(ch // m, lambda c, h=h: bw.fits(hw, h, c * m))
        ct = m * -(-(ch // m) // -(-ch // cmax))  # the channels in equal blocks
        order = _steps(hw, bw, h, ct, priced=False)
        stream = StreamPlan((h, ct), order, block_prologue(hw, bw, h, ct))
        key = (plan_cycles(hw, stream), -h)
        if best is None or key < best[0]:
            best = (key, (h, ct))
    return best[1]  # type: ignore[index]


def block_plan(hw: Hardware, bw: BlockWindow, ops: Sequence[str] = ()) -> BlockPlan:
    """The row-block kernel's loop with the epilogue's `ops` priced in; a one-row,
    one-channel tiling marked unfit when nothing fits SRAM."""
    ht, ct = block_tiling(hw, bw)
    if not ht:
        return BlockPlan(1, 1, _steps(hw, bw, 1, 1, ops), fits=False)
    return BlockPlan(ht, ct, _steps(hw, bw, ht, ct, ops), True, block_prologue(hw, bw, ht, ct))


def block_cost(hw: Hardware, bw: BlockWindow, ops: Sequence[str] = ()) -> KernelCost:
    """The price of the row-block kernel, replayed on the queues."""
    return plans_cost(hw, [block_plan(hw, bw, ops).stream(bw.out_hw[1])])


# ----------------------------------------------------------------- prices


def model_inter(ops: Sequence[str], out_isz: int, integer_to_float: bool) -> int:
    """The epilogue's intermediate tiles as the backend's TileExpr allocates them:
    into a 4-byte output every op chains through the output tile but the row ops, into
    a narrower one (bf16, i8) or from integer sums into floats all but the root."""
    rows = sum(1 for op in ops if op.startswith(ROW_OP))
    if out_isz < 4 or integer_to_float:
        return max(rows, len(ops) - 1)
    return rows


@dataclass(frozen=True)
class WindowKernels:
    """The kernels of a window op: its prep (the padded NHWC image) and count map
    costs, and its main kernel: the row-block kernel (`block`, priced with `ops`) or
    the streaming kernel (`main`)."""

    before: tuple[KernelCost, ...]
    block: BlockWindow | None
    ops: tuple[str, ...] = ()
    main: Stream | None = None
    after: Stream | None = None  # an epilogue run as a pass of its own

    def cost(self, hw: Hardware) -> KernelCost:
        if self.block is not None:
            main = block_cost(hw, self.block, self.ops)
        else:
            main = kernel_cost(hw, [self.main])  # type: ignore[list-item]
        after = [kernel_cost(hw, [self.after])] if self.after is not None else []
        return add_costs([*self.before, main, *after])

    def main_steps(self, hw: Hardware) -> int:
        """Steps (one store each) of the main kernel."""
        if self.block is not None:
            return plan_loop(hw, block_plan(hw, self.block, self.ops).stream(1)).steps
        return stream_loop(hw, self.main).steps  # type: ignore[arg-type]


def window_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, object],
    x_channels_last: bool = False,
) -> KernelCost | None:
    """The cost of pooling and depthwise convolution (fused or not; None for other
    ops): each kernel the backend emits for it (prep, counts, main), priced
    instruction by instruction. x is row-major in DRAM, or with `x_channels_last`
    another window kernel's channels-last result: its channel planes are then not
    rows (backend/window_block.py row_planes), so the block kernel reads the padded
    image a prep kernel copies it into (no transpose there, a strided walk)."""
    kernels = window_kernels(hw, op_name, in_types, out, attrs, x_channels_last)
    return None if kernels is None else kernels.cost(hw)


def stores_channels_last(
    op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs: Mapping[str, object]
) -> bool:
    """Does the backend's kernel of this pooling or depthwise convolution store its
    result channels-last (backend/window.py Image.output: whenever it reads the padded
    NHWC image)?"""
    if op_name in ("max_pool2d", "avg_pool2d"):
        return window_layout(window2d(op_name, in_types[0], attrs)) == NHWC
    conv = _depthwise(op_name, in_types, attrs)
    if conv is None:
        return False
    x, w, cattrs = conv
    return window_layout(conv_window(x, w, cattrs), w.shape[0] // x.shape[1]) == NHWC


def is_window_op(op_name: str, in_types: Sequence[TensorType], attrs: Mapping[str, object]) -> bool:
    """Is this a pooling or a depthwise convolution (fused or not): a window kernel?"""
    return (
        op_name in ("max_pool2d", "avg_pool2d") or _depthwise(op_name, in_types, attrs) is not None
    )


def _depthwise(op_name: str, in_types: Sequence[TensorType], attrs: Mapping[str, object]):
    """(x, w, conv attrs) of a depthwise convolution (fused or not), else None (other
    grouped convolutions run one GEMM per group)."""
    if int(attrs.get("groups", 1)) == 1:  # type: ignore[call-overload]
        return None  # not a grouped convolution
    conv = conv_of(REGISTRY[op_name], in_types, attrs)
    if conv is None or contraction_of(op_name) not in _CONVS or not is_depthwise(*conv):
        return None
    return conv


def window_kernels(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, object],
    x_channels_last: bool = False,
) -> WindowKernels | None:
    """The kernels of a pooling or depthwise convolution (None for other ops)."""
    if op_name in ("max_pool2d", "avg_pool2d"):
        return _pool_kernels(hw, op_name, in_types[0], out, attrs, x_channels_last)
    conv = _depthwise(op_name, in_types, attrs)
    if conv is None:
        return None
    op = REGISTRY[op_name]
    x, w, cattrs = conv
    g = conv_window(x, w, cattrs)
    ops, extra = _epilogue(op, in_types, out, attrs)
    za = int(cattrs.get("a_zero", 0))  # type: ignore[call-overload]
    mult = w.shape[0] // x.shape[1]
    direct = not x_channels_last
    prep = ()
    if window_layout(g, mult) == NHWC:
        prep = (window_prep_cost(hw, x, g, za != 0, x_channels_last),)
    out_isz = out.dtype.itemsize
    after = None
    if ops and mult > 1 and contraction_of(op_name) == "qconv2d":
        # backend/lower_contract.py: the i32 sums with a multiplier, then the epilogue
        # as its own streaming pass over them (NHWC) and its operands
        ho, wo = g.out_hw
        o = w.shape[0]
        sums = ((ho * wo * o, 1, wo * o, o), 4)
        inter = model_inter(ops, out_isz, not out.dtype.is_float)
        after_ops = tuple(shift_requant_ch(op, 1) for op in ops)
        after = Stream(out.shape, row_major(out.shape), out_isz, (sums, *extra), after_ops, inter)
        ops, extra, out_isz = (), (), 4
    block_ops = ops
    if za:  # a qconv2d's - za * sum(w) (backend/window.py), ahead of the epilogue
        block_ops = (f"{ROW_OP}mul", "sub", *(shift_requant_ch(o, 1) for o in ops))
        ops = ("mul", "sub", *(shift_requant_ch(o, 1) for o in ops))
        extra = (((0, 1, 0, 0), 4), *extra)
    to_float = not x.dtype.is_float and out.dtype.is_float
    inter = model_inter(block_ops, out_isz, to_float)
    bw = block_window(x, g, "dw", out_isz, mult, extra, bool(block_ops), inter, direct, za != 0)
    if bw is not None and block_tiling(hw, bw) != (0, 0):
        ops = tuple(shift_requant_ch(o, 1) for o in block_ops)
        return WindowKernels(() if bw.direct else prep, bw, ops, after=after)
    is_float = out.dtype.is_float and after is None
    _, main = window_streams(x, g, out_isz, "dw", mult, extra, ops, is_float)
    return WindowKernels(prep, None, main=main, after=after)


def pool_epilogue(g: Window2d, kind: str, include_pad: bool, is_float: bool):
    """(ops, epilogue operands) after an average pool's sum: + 0 for floats (the
    reference sums from +0), then the division by a number or by the count map."""
    if kind != "avg":
        return (), ()
    ops = ("add", "div") if is_float else ("div",)
    counts = g.counts(include_pad)
    if counts.min() == counts.max():
        return ops, ()
    return ops, (((0, 0, g.out_hw[1], 1), 4),)


def _pool_kernels(
    hw: Hardware, op_name: str, x: TensorType, out: TensorType, attrs, x_channels_last: bool
):
    g = window2d(op_name, x, attrs)
    kind = "max" if op_name == "max_pool2d" else "avg"
    include_pad = bool(attrs.get("count_include_pad"))
    count = []
    stream_kind = kind
    if kind == "avg" and g.counts(include_pad).min() != g.counts(include_pad).max():
        stream_kind = "avg_map"
        count.append(kernel_cost(hw, count_streams(g, include_pad)))
    direct = not x_channels_last
    prep = []
    if window_layout(g) == NHWC:
        prep = [window_prep_cost(hw, x, g, kind == "max", x_channels_last)]
    ops, extra = pool_epilogue(g, kind, include_pad, x.dtype.is_float)
    inter = model_inter(ops, out.dtype.itemsize, False)
    fill = kind == "max"
    bw = block_window(x, g, kind, out.dtype.itemsize, 1, extra, kind == "avg", inter, direct, fill)
    if bw is not None and block_tiling(hw, bw) != (0, 0):
        return WindowKernels(tuple(count if bw.direct else prep + count), bw, ops)
    before = prep + count
    _, main = window_streams(x, g, out.dtype.itemsize, stream_kind)
    return WindowKernels(tuple(before), None, main=main)
