"""How the backend runs the spatial ops, decided once for the backend and the cost model.

Window kernels (max/avg pooling, depthwise convolution) combine the KH*KW taps of every
window on the vector unit: tap (i, j) of all windows is one strided view of the
(padded) image, so an output tile is the max / sum / weighted sum of KH*KW loaded
tiles. Two layouts:

- `nchw`: the windows touch no padding and step one column at a time, so every tap
  is a view of x itself with unit column stride; the output is NCHW. Tiles are
  rows x columns of one (image, channel) plane.
- `nhwc`: otherwise. The windows read a padded NHWC image (the fill: -inf or the
  integer minimum for max pooling, a qconv2d's zero point, 0 otherwise), so that taps
  have unit stride along channels whatever the stride; the output is written NHWC
  (returned as an NCHW view). This is the row-block kernel of eqsat/window_plan.py,
  which turns blocks of x's rows into that image on chip (a prep kernel writes the
  image where x's planes are not row-major); when no tiling of it fits, a prep kernel
  writes the image and one streaming kernel reads its KH*KW tap views, tiles of
  output columns x channels.

A depthwise convolution has C/groups == 1 and groups > 1 (groups = C): one input
channel per output channel leaves nothing for the matrix unit to contract. Other
grouped convolutions run one GEMM per group.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from eqsat.ir.strides import Strides, broadcast_strides, coalesce, row_major
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY, OpDef
from eqsat.ops.fused import body_nodes
from eqsat.ops.mathfn import clip_bounds
from eqsat.ops.quant_conv import clamp_bounds
from eqsat.ops.spatial import Window2d, pad_widths
from eqsat.vector_passes import lane_ops
from hwsim import timing
from hwsim.costmodel import (
    KernelCost,
    KernelWork,
    LoopWork,
    loop_cycles,
    step_cycles,
    tile_splits,
)
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware

NCHW, NHWC = "nchw", "nhwc"
ALIGN = 64  # bytes: every SRAM tile a kernel allocates starts on this boundary
ZERO_ISZ = 4  # bytes an element of the tile zeros are loaded into, whatever its dtype


def is_depthwise(x: TensorType, w: TensorType, attrs: Mapping[str, object]) -> bool:
    """Does this conv2d run as a depthwise window kernel? (groups > 1, C/groups == 1)"""
    groups = int(attrs.get("groups", 1))  # type: ignore[call-overload]
    return groups > 1 and w.shape[1] == 1 and x.shape[1] == groups


def is_pointwise(x: TensorType, w: TensorType, attrs: Mapping[str, object]) -> bool:
    """Does this convolution run as a plain batched matmul, with no prep kernel? A 1x1
    kernel at stride 1 without padding or groups: per image out[O, H*W] = w[O, C] @
    x[C, H*W], reading the NCHW input and writing the NCHW output as they are."""
    pad = tuple(attrs.get("padding", (0, 0)))  # type: ignore[call-overload]
    stride = tuple(attrs.get("stride", (1, 1)))  # type: ignore[call-overload]
    groups = int(attrs.get("groups", 1))  # type: ignore[call-overload]
    return w.shape[2:] == (1, 1) and stride == (1, 1) and pad == (0, 0) and groups == 1


def pointwise_work(work: KernelWork, x: TensorType, w: TensorType) -> KernelWork:
    """A pointwise convolution's GEMM as the backend runs it: batch N of M = O output
    channels, N = H*W pixels, K = C; the weights (A) are loaded again for every image,
    as a batched matmul's own A would be."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    reloaded = (n - 1) * w.nbytes
    return replace(
        work,
        kind="matmul",
        m=o,
        n=h * wd,
        k=c,
        batch=n,
        bytes_in=work.bytes_in + reloaded,
        patch=(),
        epilogue_loads=swapped_loads(work),
        channel_axis=swapped_axis(work),
    )


def transposed_work(work: KernelWork, x: TensorType, w: TensorType, out: TensorType) -> KernelWork:
    """A convolution run as weights @ patches (backend/conv_transposed.py): batch N of
    M = O output channels, N = HO*WO pixels, K = KH*KW*C; the patches of the padded
    image are B, the weights (A, [O, KH*KW*C]) are loaded again for every image.
    Output channels then fill the array's streamed rows instead of its columns, which
    pays where O is below the array's width."""
    n, o = x.shape[0], w.shape[0]
    ho, wo = out.shape[2], out.shape[3]
    return replace(
        work,
        kind="matmul",
        m=o,
        n=ho * wo,
        k=w.shape[1] * w.shape[2] * w.shape[3],
        batch=n,
        bytes_in=work.bytes_in + (n - 1) * w.nbytes,
        patch=(),
        patch_b=work.patch,
        epilogue_loads=swapped_loads(work),
        channel_axis=swapped_axis(work),
    )


def swapped_axis(work: KernelWork) -> str:
    """A per-channel epilogue's channel axis once channels are the GEMM's rows."""
    return {"n": "m", "m": "n"}.get(work.channel_axis, "")


def swapped_loads(work: KernelWork) -> tuple[tuple[bool, bool, int], ...]:
    """Epilogue loads of a convolution run with channels as m and pixels as n."""
    return tuple((on_n, on_m, size) for on_m, on_n, size in work.epilogue_loads)


def conv_window(x: TensorType, w: TensorType, attrs: Mapping[str, object]) -> Window2d:
    """A convolution's windows: its kernel, stride and symmetric zero padding."""
    (ph, pw), (sh, sw) = attrs["padding"], attrs["stride"]  # type: ignore[misc]
    kh, kw = w.shape[2], w.shape[3]
    out = ((x.shape[2] + 2 * ph - kh) // sh + 1, (x.shape[3] + 2 * pw - kw) // sw + 1)
    return Window2d(x.shape[2:], (kh, kw), (sh, sw), (1, 1), (ph, pw, ph, pw), out)  # type: ignore[arg-type]


def window_layout(g: Window2d, multiplier: int = 1) -> str:
    """nchw when no window touches padding (or overhangs x) and columns step by one;
    nhwc otherwise (and for a depthwise multiplier > 1)."""
    h, w = g.in_hw
    no_padding = not any(g.pads) and g.rows <= h and g.cols <= w
    unit_columns = g.stride[1] == 1 or g.out_hw[1] == 1
    return NCHW if no_padding and unit_columns and multiplier == 1 else NHWC


def count_runs(counts: Sequence[int]) -> list[tuple[int, int, int]]:
    """(start, end, value) of the runs of equal values of a per-position count."""
    runs: list[tuple[int, int, int]] = []
    for k, v in enumerate(counts):
        if runs and runs[-1][2] == v:
            runs[-1] = (runs[-1][0], k + 1, v)
        else:
            runs.append((k, k + 1, int(v)))
    return runs


@dataclass(frozen=True)
class GatherPlan:
    """The gather kernel's loop: index chunks of `rows`, row pieces of `cols` elements.

    Each data tile (rows x cols) takes at most a quarter of SRAM, as a streaming
    kernel's in + out chunk does; per index chunk, `pieces` gathers (one per table
    prefix and column piece), each followed by its store.
    """

    rows: int
    cols: int
    chunks: int
    pieces: int

    @property
    def steps(self) -> int:
        return self.chunks * self.pieces


def gather_plan(hw: Hardware, pre: int, n: int, post: int, k: int, dtype: str) -> GatherPlan:
    """How the backend tiles a gather of k indices from a [pre, n, post] table: a data
    tile takes at most a quarter of SRAM, the five i32 index columns (two loaded, two
    normalized, one scratch) another quarter at most."""
    budget = max(1, hw.sram_bytes // 4 // ITEMSIZE[dtype])
    cols = min(post, budget)
    rows = min(k, max(1, budget // cols), max(1, hw.sram_bytes // 4 // (5 * 4)))
    return GatherPlan(rows, cols, math.ceil(k / rows), pre * math.ceil(post / cols))


# ----------------------------------------------------------------- tile loops
# The streaming kernel's tiling (backend/ewise.py make_space and tile_shape,
# backend/tileexpr.py leaf_class and bytes_per_element), restated on plain strides so
# that the cost model counts the instructions the backend emits. Tiles shrink until
# every SRAM tile the kernel allocates fits (stream_tiles; the backend checks the same
# on its allocator, ewise.fits_sram). A pass is priced by running its steps through
# the queues, channel and DMA engines of the simulator (Queues), so that short loops
# (a few channels of a small image) cost their latencies, not a steady state.
# tests/backend/test_backend_spatial.py checks that both give the same tiles and
# cycles close to the simulated ones.

FULL, ROW, COL, TR = "full", "row", "col", "tr"
# An entry of Stream.ops naming a hardware's declared instruction (hwsim/custom.py):
# one instruction per tile over all the leaves, timed by the declared cost.
CUSTOM_PREFIX = "custom."
# An entry of Stream.ops for per-channel requantization: "requantize_ch:K", K the leaf
# holding the channel scales (requant_ch_cycles).
REQUANT_CH = "requantize_ch:"


def stream_space(shape: Sequence[int], out: Strides, leaves: list[Strides]):
    """(space shape, strides per operand (output first), row axis, column axis)."""
    cshape, cstr = coalesce(shape or (1,), [out or (1,), *[s or (0,) for s in leaves]])
    if not any(st == 1 for st in cstr[0]):
        cshape, cstr = (*cshape, 1), [(*st, 1) for st in cstr]
    if len(cshape) == 1:
        cshape, cstr = (1, *cshape), [(0, *st) for st in cstr]
    col = max((a for a in range(len(cshape)) if cstr[0][a] == 1), key=lambda a: (cshape[a] > 1, a))

    def score(a: int) -> tuple:
        """Rows along the axis that makes the most transposed operands loadable, then
        the longest (tiles of many rows: a broadcast axis of 2 between the rows and
        the columns, as a nearest upsample leaves it, made tiles of two rows), then
        the one whose rows lie nearest each other."""
        tr = sum(1 for s in cstr[1:] if s[col] not in (0, 1) and s[a] == 1)
        return (tr, cshape[a], -cstr[0][a])

    row = max((a for a in range(len(cshape)) if a != col), key=score)
    return cshape, cstr, row, col


def leaf_class(sr: int, sc: int, rt: int, ct: int) -> str | None:
    if ct == 1 or sc == 1:
        return ROW if rt > 1 and sr == 0 else FULL
    if sc == 0:
        return COL
    return TR if rt == 1 or sr == 1 else None


@dataclass(frozen=True)
class Stream:
    """One streaming pass: out[shape] = expression of `leaves` (strides over the
    output's shape, item sizes), `ops` vector instructions per tile (a copy or fill
    root included), `intermediates` tiles it keeps besides the output."""

    shape: tuple[int, ...]
    out: Strides
    out_isz: int
    leaves: tuple[tuple[Strides, int], ...] = ()
    ops: tuple[str, ...] = ("copy",)
    intermediates: int = 0  # f32 or i32 tiles
    zero: bool = False  # needs a zero tile (an immediate root, a broadcast root)


def tiles_end(tiles: Iterable[tuple[int, int, int]]) -> int:
    """Where the last of `tiles` (rows, cols, item size) ends when a kernel allocates
    them one after another from address 0, each on an ALIGN-byte boundary: the SRAM
    they need (backend/emit.py KernelBuilder.alloc)."""
    end = 0
    for rows, cols, isz in tiles:
        end = -(-end // ALIGN) * ALIGN + rows * cols * isz
    return end


def largest_fitting(elements: int, fits: Callable[[int], bool]) -> int:
    """The elements per tile a streaming kernel uses: `elements` if that tile fits,
    else the largest smaller size bisection finds that does; 0 if not even one does."""
    if fits(elements):
        return elements
    if elements <= 1 or not fits(1):
        return 0
    lo, hi = 1, elements
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def stream_tiles(s: Stream, cstr, row: int, col: int, rt: int, ct: int) -> list[tuple]:
    """The SRAM tiles (rows, cols, item size) emit_ewise allocates for rt x ct tiles, in
    order: two slots per operand (and a transposed copy of a `tr` one), the
    intermediates, two output slots, then the zero tiles (backend/tileexpr.py TileExpr:
    a load tile of rt + 1 rows of ZERO_ISZ bytes an element and one 4-byte zero tile)."""
    dims = {FULL: (rt, ct), ROW: (1, ct), COL: (rt, 1), TR: (ct, rt)}
    tiles: list[tuple] = []
    for st, (_, isz) in zip(cstr[1:], s.leaves, strict=True):
        cls = leaf_class(st[row], st[col], rt, ct)
        tiles += [(*dims[cls], isz)] * 2  # type: ignore[index]
        if cls == TR:
            tiles.append((rt, ct, isz))
    tiles += [(rt, ct, 4)] * s.intermediates
    tiles += [(rt, ct, s.out_isz)] * 2
    if s.zero:
        tiles += [(rt + 1, ct, ZERO_ISZ), (rt, ct, 4)]
    return tiles


def stream_tile(hw: Hardware, s: Stream, cshape, cstr, row: int, col: int) -> tuple[int, int]:
    """(rows, cols) of the tiles of a streaming pass (backend/ewise.py emit_ewise): sized
    like the cost model's chunks and by bytes per element, then shrunk until every
    tile the kernel allocates fits SRAM; (0, 0) when not even one element does."""
    sizes = [isz for _, isz in s.leaves]
    resident = sum(
        2 * isz + (isz if st[col] != 1 else 0)
        for st, isz in zip(cstr[1:], sizes, strict=True)
        if st[row] != 0 and st[col] != 0
    )
    per_elem = resident + 4 * s.intermediates + 2 * s.out_isz + 8
    fit = (hw.sram_bytes - 1024) // per_elem
    model = hw.sram_bytes // 4 // (sum(sizes) + s.out_isz)

    def shape(elements: int) -> tuple[int, int]:
        ct = max(1, min(cshape[col], elements))
        rt = max(1, min(cshape[row], elements // ct))
        if any(leaf_class(st[row], st[col], rt, ct) is None for st in cstr[1:]):
            rt = 1
        return rt, ct

    def fits(elements: int) -> bool:
        tiles = stream_tiles(s, cstr, row, col, *shape(elements))
        return tiles_end(tiles) <= hw.sram_bytes

    elements = largest_fitting(max(1, min(fit, model)), fits)
    return shape(elements) if elements else (0, 0)


@dataclass(frozen=True)
class Step:
    """One tile of a streaming pass as the queues see it: the queue cycles of each of
    its loads, its compute cycles, the queue cycles of its store (timing.dma_cycles),
    and its DRAM transfer cycles and bytes."""

    loads: tuple[int, ...]
    compute: int
    store: int
    transfer: int
    dram_bytes: int


@dataclass(frozen=True)
class Repeat:
    """`body` (steps and repeats) `count` times over."""

    count: int
    body: tuple


@dataclass(frozen=True)
class StreamPlan:
    """The tiles of a streaming pass in the order the backend emits them, and the
    prologue making its zero tiles (the load and the copies), if it needs them. When
    not even a one-element tile fits SRAM (`fits` False), one-element tiles: the
    backend refuses such a pass."""

    tile: tuple[int, int]
    order: Repeat
    zero: tuple[int, int] | None
    fits: bool = True


def stream_plan(hw: Hardware, s: Stream) -> StreamPlan:
    """backend/ewise.py emit_ewise's loop: outer axes, then row tiles, then column
    tiles (backend/space.py Space.positions); edge tiles are the last of each axis."""
    cshape, cstr, row, col = stream_space(s.shape, s.out, [st for st, _ in s.leaves])
    tile = stream_tile(hw, s, cshape, cstr, row, col)
    rt, ct = max(1, tile[0]), max(1, tile[1])
    classes = [leaf_class(st[row], st[col], rt, ct) for st in cstr[1:]]

    def step(rn: int, cn: int) -> Step:
        elements = {FULL: rn * cn, ROW: cn, COL: rn, TR: rn * cn}
        loads = [elements[c] * isz for c, (_, isz) in zip(classes, s.leaves, strict=True)]  # type: ignore[index]
        compute = sum(timing.vector_cycles(hw, rn * cn, "transpose") for c in classes if c == TR)
        compute += sum(
            _custom_cycles(hw, op, rn, cn, [elements[c] for c in classes])  # type: ignore[index]
            if op.startswith(CUSTOM_PREFIX)
            else requant_ch_cycles(hw, op, cstr, row, col, rn, cn)
            if op.startswith(REQUANT_CH)
            else timing.vector_cycles(hw, rn * cn, op)
            for op in s.ops
        )
        out = rn * cn * s.out_isz
        transfer = sum(timing.dma_transfer_cycles(hw, n) for n in [*loads, out])
        queue = tuple(timing.dma_cycles(hw, n) for n in loads)
        return Step(queue, compute, timing.dma_cycles(hw, out), transfer, sum(loads) + out)

    def axis(total: int, tile: int, body) -> tuple:
        return tuple(Repeat(count, body(size)) for size, count in tile_splits(total, tile))

    def row_body(rn: int) -> tuple:
        return axis(cshape[col], ct, lambda cn: (step(rn, cn),))

    outer = math.prod(d for a, d in enumerate(cshape) if a not in (row, col))
    order = Repeat(outer, axis(cshape[row], rt, row_body))
    zero = None
    if s.zero:  # one element loaded into a padded tile, copied out
        zero = (timing.dma_cycles(hw, 4), timing.vector_cycles(hw, rt * ct, "copy"))
    return StreamPlan((rt, ct), order, zero, tile != (0, 0))


def requantize_ch_stream(in_types: Sequence[TensorType], out: TensorType, attrs) -> Stream:
    """A standalone requantize_ch (backend/quant.py): one streaming pass over x with the
    channel scales a broadcast leaf, a requantize per channel row or column of each
    tile, then the clamp's max and min where its bounds cut the i8 range."""
    x, s = in_types
    lo, hi = clamp_bounds(
        float(attrs["scale"]), int(attrs["zero_point"]), attrs["min"], attrs["max"]
    )
    ops = (f"{REQUANT_CH}1", *(op for op, cut in (("max", lo > -128), ("min", hi < 127)) if cut))
    leaves = ((row_major(x.shape), 4), (broadcast_strides(s.shape, out.shape), s.dtype.itemsize))
    return Stream(out.shape, row_major(out.shape), out.dtype.itemsize, leaves, ops)


def shift_requant_ch(op: str, by: int) -> str:
    """A REQUANT_CH entry with its leaf index moved by `by` (other entries as they are)."""
    if not op.startswith(REQUANT_CH):
        return op
    return f"{REQUANT_CH}{int(op.removeprefix(REQUANT_CH)) + by}"


def requant_ch_cycles(hw: Hardware, op: str, cstr, row: int, col: int, rn: int, cn: int) -> int:
    """Per-channel requantization of an rn x cn tile (backend/tileexpr.py): one
    `requantize` per row or per column along which the channel leaf moves, one for the
    tile if it holds one channel."""
    st = cstr[1 + int(op.removeprefix(REQUANT_CH))]
    by_rows, by_cols = st[row] != 0 and rn > 1, st[col] != 0 and cn > 1
    count = rn if by_rows else cn if by_cols else 1
    return count * timing.vector_cycles(hw, rn * cn // count, "requantize")


def _custom_cycles(hw: Hardware, op: str, rows: int, cols: int, sizes: list[int]) -> int:
    decl = hw.instruction(op.removeprefix(CUSTOM_PREFIX))
    assert decl is not None, f"{hw.name} declares no instruction {op}"
    return decl.cycles(hw.vector_lanes, hw.issue_cycles, hw.launch_cycles, rows, cols, sizes)


def _walk(item, fn) -> None:
    """Call fn(step, times) for every step of a Repeat tree (times: how often)."""

    def go(x, times: int) -> None:
        if isinstance(x, Step):
            fn(x, times)
            return
        for y in x.body:
            go(y, times * x.count)

    go(item, 1)


def stream_loop(hw: Hardware, s: Stream) -> LoopWork:
    """The instructions of one streaming pass (backend/ewise.py emit_ewise), summed."""
    return plan_loop(hw, stream_plan(hw, s))


def plan_loop(hw: Hardware, plan: StreamPlan) -> LoopWork:
    """A stream plan's instructions, summed (its cycles: plan_cycles)."""
    t = dict.fromkeys(("steps", "compute", "loads", "lq", "sq", "transfer", "dram"), 0)

    def add(st: Step, times: int) -> None:
        for key, n in (
            ("steps", 1),
            ("compute", st.compute),
            ("loads", len(st.loads)),
            ("lq", sum(st.loads)),
            ("sq", st.store),
            ("transfer", st.transfer),
            ("dram", st.dram_bytes),
        ):
            t[key] += times * n

    _walk(plan.order, add)
    if plan.zero is not None:
        load, copy = plan.zero
        t["loads"] += 1
        t["lq"] += load
        t["transfer"] += load - hw.issue_cycles
        t["compute"] += copy
    return LoopWork(
        t["steps"], t["compute"], t["loads"], t["lq"], t["steps"], t["sq"], t["transfer"], t["dram"]
    )


SETTLE = 48  # iterations of a loop body simulated, at most, before its pace is extrapolated
PERIODS = 6  # the longest period looked for in the durations of a loop's iterations


class Queues:
    """hwsim's load, compute and store queues, DRAM channel and DMA engines (hwsim/
    simulator.py) running a streaming pass step by step, as backend/emit.py's Pipeline
    orders it: a step's first load waits until compute is done with the step two back
    (its input slot); its compute until its loads landed and the store of the step two
    back landed (its output slot); its store until its compute is done. A store goes
    out only before a load that would start later (the simulator's queue order breaks
    ties in favour of loads)."""

    def __init__(self, hw: Hardware) -> None:
        self.hw = hw
        self.load = self.compute = self.store = self.channel = 0.0
        self.inflight: list[float] = []  # when the DMAs in flight land
        self.loaded: list[tuple[Step, float]] = []  # loads issued (landing), not computed
        self.pending: list[tuple[int, float]] = []  # stores not issued: cycles, ready
        self.landed: list[float] = []  # when the stores issued landed, the last three
        self.computed = self.issued = 0  # steps computed, stores issued

    def start(self, ready: float) -> float:
        """When a DMA ready at `ready` gets the channel and an engine
        (simulator._dma_start)."""
        t = max(ready, self.channel - self.hw.issue_cycles)
        busy = sorted(d for d in self.inflight if d > t)
        if len(busy) >= self.hw.dma_engines:
            t = busy[len(busy) - self.hw.dma_engines]
        return t

    def dma(self, start: float, cycles: int) -> tuple[float, float]:
        """(queue free, landing) of a DMA that starts at `start` (see start())."""
        self.channel = start + cycles
        landing = self.channel + self.hw.dram_latency_cycles
        self.inflight = [d for d in self.inflight if d > start] + [landing]
        return self.channel, landing

    def prologue(self, load: int, copy: int) -> None:
        """The zero tiles: one load, then the copies once it landed."""
        self.load, landing = self.dma(self.start(0.0), load)
        self.compute = landing + copy

    def step(self, st: Step) -> None:
        """The next step: its loads go out once the step two back is computed."""
        ready = self.load
        if len(self.loaded) == 2:
            self._compute()
            ready = max(ready, self.compute)
        landing = ready
        for cycles in st.loads:
            at = self.start(ready)
            while self.pending and self.start(self._store_ready()) < at:
                self._issue_store()
                at = self.start(ready)
            ready, done = self.dma(at, cycles)
            landing = max(landing, done)
        self.load = ready
        self.loaded.append((st, landing))

    def _store_ready(self) -> float:
        return max(self.store, self.pending[0][1])

    def _issue_store(self) -> None:
        cycles, ready = self.pending.pop(0)
        self.store, landing = self.dma(self.start(max(self.store, ready)), cycles)
        self.landed = [*self.landed[-2:], landing]
        self.issued += 1

    def _compute(self) -> None:
        """Compute the oldest loaded step (after the store two back landed) and queue
        its store."""
        st, landing = self.loaded.pop(0)
        ready = max(self.compute, landing)
        if self.computed >= 2:
            while self.issued < self.computed - 1:
                self._issue_store()
            ready = max(ready, self.landed[self.computed - 2 - self.issued])
        self.compute = ready + st.compute
        self.computed += 1
        self.pending.append((st.store, self.compute))

    def drain(self) -> float:
        """Compute and store what is left; when the last store has landed."""
        while self.loaded:
            self._compute()
        while self.pending:
            self._issue_store()
        return self.landed[-1] if self.landed else self.compute

    def shift(self, dt: float) -> None:
        """Everything `dt` later: the state after more iterations at a steady pace."""
        self.load, self.compute, self.store = self.load + dt, self.compute + dt, self.store + dt
        self.channel += dt
        self.inflight = [d + dt for d in self.inflight]
        self.loaded = [(st, t + dt) for st, t in self.loaded]
        self.pending = [(c, t + dt) for c, t in self.pending]
        self.landed = [t + dt for t in self.landed]

    def run(self, item: Step | Repeat) -> None:
        """Run steps in order; a repeat's iterations one by one until their durations
        repeat with a period (the pipeline has settled), then whole periods at once
        and the rest one by one."""
        if isinstance(item, Step):
            self.step(item)
            return
        marks = [self.compute]
        k = 0
        while k < item.count:
            period = _period(marks)
            if period:
                whole = (item.count - k) // period
                self.shift(whole * (marks[-1] - marks[-1 - period]))
                k += whole * period
                marks = [self.compute]  # the phase is kept: the rest one by one
                continue
            for x in item.body:
                self.run(x)
            marks.append(self.compute)
            k += 1


def _period(marks: list[float]) -> int:
    """The shortest period p (up to PERIODS) with which the durations of the last
    3p + 1 iterations (differences of `marks`) repeat; after SETTLE iterations
    without one, the longest. 0: not settled yet."""
    steps = [b - a for a, b in itertools.pairwise(marks)]
    for p in range(1, PERIODS + 1):
        window = 3 * p + 1
        if len(steps) >= window + p and all(
            abs(steps[-i] - steps[-i - p]) <= 1e-9 * max(1.0, steps[-i])
            for i in range(1, window + 1)
        ):
            return p
    return PERIODS if len(steps) >= SETTLE else 0


def plan_cycles(hw: Hardware, plan: StreamPlan) -> float:
    """Cycles from a stream's first load to its last store landing."""
    q = Queues(hw)
    if plan.zero is not None:
        q.prologue(*plan.zero)
    q.run(plan.order)
    return q.drain()


def merge_streams(loops: Sequence[LoopWork]) -> LoopWork:
    """Streams one after another inside one kernel (fenced): their totals."""
    fields = (
        "steps",
        "compute",
        "loads",
        "load_cycles",
        "stores",
        "store_cycles",
        "transfer",
        "floor",
    )
    totals = {f: sum(getattr(w, f) for w in loops) for f in fields}
    return LoopWork(
        **totals, dram_bytes=sum(w.dram_bytes for w in loops), streams=max(1, len(loops))
    )


def fill_stream(shape: Sequence[int], strides: Strides, isz: int) -> Stream:
    """A region of a buffer set to one value (an immediate added to a zero tile)."""
    return Stream(tuple(shape), tuple(strides), isz, (), ("add",), zero=True)


# ----------------------------------------------------------------- the image prep
# conv_prep.nhwc_image as one pipelined loop of row blocks (backend/conv_prep.py
# emits exactly this plan): per image (and group), `block` rows of x at a time (a
# divisor of its rows) are loaded as one [C/G, block*W] DMA (channel planes are
# row-major) and turned on chip, one transpose per row, into an SRAM tile laid out as
# whole padded NHWC rows: the border rows above and below and the border columns hold
# the fill from the prologue on (the transposes never touch them), so each step is one
# contiguous store - of the top border too for an image's first block, of the bottom
# border too for its last. When not even a one-row tile fits SRAM, or x has no row
# inside the image, the streams of nhwc_prep below.


@dataclass(frozen=True)
class PrepPlan:
    """The row-block loop of an image prep (see above)."""

    images: int  # groups * N images, [G, N] order
    cg: int  # channels of one image (C / groups)
    inner: tuple[int, int]  # rows and columns of x written
    top_left: tuple[int, int]  # where x's first row and column go
    rows_cols: tuple[int, int]  # the padded image
    block: int  # rows of x per step, a divisor of inner[0]
    isz: int
    whole_rows: bool  # a block's rows of x loaded by one DMA (all their columns kept)

    @property
    def borders(self) -> tuple[int, int]:
        """Padded rows above and below x's rows."""
        top, rows = self.top_left[0], self.rows_cols[0]
        return top, rows - top - self.inner[0]

    @property
    def slot_rows(self) -> int:
        """Rows of an output slot: a spare first row (the element the zeroing load
        brings in), the top border, a block, the bottom border."""
        return 1 + self.block + sum(self.borders)

    @property
    def steps(self) -> int:
        """Steps of the loop, one store each."""
        return self.images * (self.inner[0] // self.block)

    stores = steps

    def tiles(self) -> list[tuple[int, int, int]]:
        """The SRAM tiles in allocation order: two input slots, two output slots."""
        row = self.rows_cols[1] * self.cg
        slot_in = (self.cg, self.block * self.inner[1], self.isz)
        return [slot_in, slot_in, *[(self.slot_rows, row, self.isz)] * 2]


def prep_plan(
    hw: Hardware,
    x: Sequence[int],
    isz: int,
    top_left: tuple[int, int],
    rows_cols: tuple[int, int],
    groups: int = 1,
    fill: bool = False,
) -> PrepPlan | None:
    """The row-block loop of conv_prep.nhwc_image for a row-major x [N, C, H, W], with
    the block the price finds fastest (`fill`: the fill value is not zero); None when
    the streams are used instead (x has no row inside the image, or no block fits)."""
    return _prep_plan(hw, tuple(x), isz, tuple(top_left), tuple(rows_cols), groups, fill)


@functools.cache
def _prep_plan(hw, x, isz, top_left, rows_cols, groups, fill) -> PrepPlan | None:
    n, ch, h, wd = x
    (top, left), (rows, cols) = top_left, rows_cols
    hh, ww = min(h, max(0, rows - top)), min(wd, max(0, cols - left))
    if not hh or not ww or top >= rows or left >= cols:
        return None
    base = PrepPlan(groups * n, ch // groups, (hh, ww), (top, left), (rows, cols), 1, isz, ww == wd)
    best = None
    for block in (d for d in range(1, hh + 1) if hh % d == 0):
        plan = replace(base, block=block)
        if tiles_end(plan.tiles()) > hw.sram_bytes:
            break
        cycles = prep_cycles(hw, plan, fill)
        if best is None or cycles < best[0]:
            best = (cycles, plan)
    return None if best is None else best[1]


def _prep_steps(hw: Hardware, plan: PrepPlan) -> Repeat:
    """The steps of a prep plan: per image, its blocks (the first and the last storing
    the border rows too)."""
    (hh, ww), cg, isz, block = plan.inner, plan.cg, plan.isz, plan.block
    row = plan.rows_cols[1] * cg
    top, bottom = plan.borders
    count = hh // block
    pieces = [cg * block * ww * isz] if plan.whole_rows else [cg * ww * isz] * block
    transpose = block * timing.vector_cycles(hw, cg * ww, "transpose")

    def step(rows: int) -> Step:
        store = rows * row * isz
        transfer = sum(timing.dma_transfer_cycles(hw, b) for b in [*pieces, store])
        loads = tuple(timing.dma_cycles(hw, b) for b in pieces)
        return Step(loads, transpose, timing.dma_cycles(hw, store), transfer, sum(pieces) + store)

    if count == 1:
        body: tuple = (step(top + block + bottom),)
    else:
        middle = (Repeat(count - 2, (step(block),)),) if count > 2 else ()
        body = (step(top + block), *middle, step(block + bottom))
    return Repeat(plan.images, body)


def _prep_fill_cycles(hw: Hardware, plan: PrepPlan) -> int:
    """Compute cycles of the prologue's fill (one that is not zero): added to the
    border rows and border columns of both output slots."""
    row, cg = plan.rows_cols[1] * plan.cg, plan.cg
    left = plan.top_left[1]
    right = plan.rows_cols[1] - left - plan.inner[1]
    regions = [b * row for b in plan.borders] + [plan.block * w * cg for w in (left, right)]
    return 2 * sum(timing.vector_cycles(hw, r, "add") for r in regions if r)


PREP_ZERO_LOADS = 2  # one element loaded into each output slot: zeros the rest


def prep_cycles(hw: Hardware, plan: PrepPlan, fill: bool = False) -> float:
    """Cycles of a prep plan's loop (launch not included), run through the queues; the
    prologue's loads are DMAs of their own (each holds an engine until it lands)."""
    q = Queues(hw)
    landing = 0.0
    for _ in range(PREP_ZERO_LOADS):
        q.load, landed = q.dma(q.start(q.load), timing.dma_cycles(hw, plan.isz))
        landing = max(landing, landed)
    q.compute = landing + (_prep_fill_cycles(hw, plan) if fill else 0)
    q.run(_prep_steps(hw, plan))
    return q.drain()


def prep_plan_cost(hw: Hardware, plan: PrepPlan, fill: bool = False) -> KernelCost:
    """The price of a prep kernel run as `plan`."""
    copy = _prep_fill_cycles(hw, plan) if fill else 0
    zero = (PREP_ZERO_LOADS * timing.dma_cycles(hw, plan.isz), copy)
    stream = StreamPlan((plan.block, plan.cg), _prep_steps(hw, plan), zero)
    totals = loop_cycles(hw, merge_streams([plan_loop(hw, stream)]))
    cycles = hw.launch_cycles + prep_cycles(hw, plan, fill)
    return replace(totals, cycles=math.ceil(cycles))


def image_prep_cost(
    hw: Hardware,
    x: Sequence[int],
    isz: int,
    top_left: tuple[int, int],
    rows_cols: tuple[int, int],
    groups: int = 1,
    fill: bool = False,
    x_channels_last: bool = False,
) -> KernelCost:
    """The prep kernel conv_prep.nhwc_image emits for x: its row-block loop, else its
    streams. An ungrouped x stored channels-last (`x_channels_last`) has no rows for
    the loop's loads: a strided copy into the interior, the borders filled."""
    if x_channels_last and groups == 1 and x[3] > 1:
        return kernel_cost(hw, nhwc_prep(x, isz, top_left, rows_cols, 1, nhwc_strides(x)))
    plan = prep_plan(hw, x, isz, top_left, rows_cols, groups, fill)
    if plan is not None:
        return prep_plan_cost(hw, plan, fill)
    return kernel_cost(hw, nhwc_prep(x, isz, top_left, rows_cols, groups))


def nhwc_strides(shape: Sequence[int]) -> Strides:
    """The strides of an [N, C, H, W] tensor stored channels-last ([N, H, W, C])."""
    _, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def view_copy_cost(hw: Hardware, view: TensorType, strides: Strides) -> KernelCost:
    """A row-major copy of a view laid out by `strides` (backend Compiler.materialize:
    one streaming copy kernel walking it in its order)."""
    isz = view.dtype.itemsize
    stream = Stream(view.shape, row_major(view.shape), isz, ((strides, isz),), ("copy",))
    return kernel_cost(hw, [stream])


def image_prep_stores(
    hw: Hardware,
    x: Sequence[int],
    isz: int,
    top_left: tuple[int, int],
    rows_cols: tuple[int, int],
    groups: int = 1,
    fill: bool = False,
) -> int:
    """Store instructions of that prep kernel (its plan's, else its streams' tiles)."""
    plan = prep_plan(hw, x, isz, top_left, rows_cols, groups, fill)
    if plan is not None:
        return plan.stores
    return sum(stream_loop(hw, s).steps for s in nhwc_prep(x, isz, top_left, rows_cols, groups))


# ----------------------------------------------------------------- kernels


def nhwc_prep(
    x: Sequence[int],
    isz: int,
    top_left: tuple[int, int],
    rows_cols: tuple[int, int],
    groups: int = 1,
    x_strides: Strides | None = None,
) -> list[Stream]:
    """The streams of conv_prep.nhwc_image: the interior through a transposed walk
    (of x row-major, or as `x_strides` lay it out), then each border region filled."""
    n, ch, h, wd = x
    (top, left), (rows, cols) = top_left, rows_cols
    cg = ch // groups
    hh, ww = min(h, max(0, rows - top)), min(wd, max(0, cols - left))
    img, row = rows * cols * cg, cols * cg
    streams = []
    if hh and ww:
        src = row_major(x) if x_strides is None else x_strides
        if groups == 1:
            shape, out, leaf = (n, ch, hh, ww), (img, 1, row, cg), src
        else:
            shape = (n, groups, cg, hh, ww)
            out = (img, n * img, 1, row, cg)
            leaf = (src[0], cg * src[1], src[1], src[2], src[3])
        streams.append(Stream(shape, out, isz, ((leaf, isz),), ("copy",)))
    images = groups * n
    top = min(top, rows)
    if top:
        streams.append(fill_stream((images, top * row), (img, 1), isz))
    if rows - top - hh:
        streams.append(fill_stream((images, (rows - top - hh) * row), (img, 1), isz))
    left = min(left, cols)
    if hh and left:
        streams.append(fill_stream((images, hh, left * cg), (img, row, 1), isz))
    if hh and cols - left - ww:
        streams.append(fill_stream((images, hh, (cols - left - ww) * cg), (img, row, 1), isz))
    return streams


def window_streams(
    x: TensorType,
    g: Window2d,
    out_isz: int,
    kind: str,
    mult: int = 1,
    extra: Sequence[tuple[Strides, int]] = (),
    epilogue_ops: Sequence[str] = (),
    out_float: bool = True,
) -> tuple[list[Stream], Stream]:
    """(prep streams, main stream) of a window kernel; kind: max | avg | avg_map | dw.
    `extra`: epilogue operands (strides over the [N, O, HO, WO] output); `out_float`:
    the output is a float (an integer convolution's dequantized result)."""
    n, ch, h, w = x.shape
    isz = x.dtype.itemsize
    (sh, sw), (ho, wo) = g.stride, g.out_hw
    o = ch * mult
    t = g.taps
    prep: list[Stream] = []
    if window_layout(g, mult) == NHWC:
        prep = nhwc_prep(x.shape, isz, (g.pads[0], g.pads[1]), (g.rows, g.cols))  # type: ignore[assignment]
        img, row = g.rows * g.cols * ch, g.cols * ch
        tap = (img, 1, sh * row, sw * ch)
        out = (ho * wo * o, 1, wo * o, o)
    else:
        tap = (ch * h * w, h * w, sh * w, sw)
        out = row_major((n, o, ho, wo))
    shape: tuple[int, ...] = (n, o, ho, wo)
    weight = (0, 1, 0, 0)
    if mult > 1:
        shape = (n, ch, mult, ho, wo)
        tap = (tap[0], tap[1], 0, tap[2], tap[3])
        out = (ho * wo * o, mult, 1, wo * o, o)
        weight = (0, mult, 1, 0, 0)
        extra = [(_split_channels(st, mult), sz) for st, sz in extra]
    leaves = [(tap, isz)] * t
    if kind == "max":
        ops: list[str] = ["max"] * (t - 1) or ["copy"]
    elif kind in ("avg", "avg_map"):
        # a float sum ends with + 0 (backend/window.py), as the reference's from +0
        ops = ["add"] * (t if x.dtype.is_float else t - 1) + ["div"]
        if kind == "avg_map":
            leaves.append(((0, 0, wo, 1), 4))
    else:
        leaves += [(weight, isz)] * t
        # a float sum ends with + 0 (backend/window.py): the reference's sum from +0
        # turns -0 products (a padded tap times a negative weight) into +0
        sums = t if x.dtype.is_float else t - 1
        ops = ["mul"] * t + ["add"] * sums + [shift_requant_ch(o, 2 * t) for o in epilogue_ops]
    leaves += list(extra)
    if kind == "dw" and not x.dtype.is_float and out_float and out_isz == 4:
        # integer sums into a float output: only the ops from the cast on (the copy)
        # chain through the output tile
        inter = ops.index("copy") if "copy" in ops else len(ops) - 1
    else:
        inter = _intermediates(ops, kind, t, out_isz)
    main = Stream(shape, out, out_isz, tuple(leaves), tuple(ops), inter)
    return prep, main


def _intermediates(ops: Sequence[str], kind: str, taps: int, out_isz: int) -> int:
    """Tiles a window kernel's expression needs besides the output (backend/tileexpr.py
    spine): it computes in f32 or i32; into a 4-byte output every op chains through the
    output tile but the products after the first of a depthwise convolution, into a
    narrower one (bf16, i8) only the root."""
    if out_isz < 4:
        return max(0, len(ops) - 1) if list(ops) != ["copy"] else 0
    return taps - 1 if kind == "dw" else 0


def _split_channels(strides: Strides, mult: int) -> Strides:
    """[N, O, HO, WO] strides as [N, O/M, M, HO, WO] strides."""
    return (strides[0], strides[1] * mult, strides[1], strides[2], strides[3])


def count_streams(g: Window2d, include_pad: bool) -> list[Stream]:
    """The count kernel of an average pool: one fill per rectangle of equal count."""
    wo = g.out_hw[1]
    return [
        fill_stream((h1 - h0, w1 - w0), (wo, 1), 4)
        for h0, h1, _ in count_runs(g.axis_counts(0, include_pad))
        for w0, w1, _ in count_runs(g.axis_counts(1, include_pad))
    ]


def pad_streams(
    x: TensorType, widths: Sequence[tuple[int, int]], fill_first: bool = False
) -> list[Stream]:
    """backend/pad.py: the interior copy, then one fill per border slab; or (fill_first)
    the whole output filled, then the interior copied over it."""
    shape = tuple(d + b + e for d, (b, e) in zip(x.shape, widths, strict=True))
    out = row_major(shape)
    isz = x.dtype.itemsize
    interior = Stream(x.shape, out, isz, ((row_major(x.shape), isz),), ("copy",))
    if fill_first:
        return [fill_stream(shape, out, isz), interior]
    streams = [interior]
    inner = [(b, d - e) for d, (b, e) in zip(shape, widths, strict=True)]
    for a, (lo, hi) in enumerate(inner):
        for start, end in ((0, lo), (hi, shape[a])):
            if end > start:
                box = [h - l for l, h in inner[:a]] + [end - start] + list(shape[a + 1 :])
                streams.append(fill_stream(box, out, isz))
    return streams


def pad_fills_first(hw: Hardware, x: TensorType, widths: Sequence[tuple[int, int]]) -> bool:
    """Is writing the whole output once more cheaper than filling the border slab by
    slab? (Thin slabs, like a column of padding per row, are many tiny tiles whose
    stores wait out the DRAM latency; one big fill streams at full bandwidth.)"""
    by_slab = kernel_cost(hw, pad_streams(x, widths)).cycles
    return kernel_cost(hw, pad_streams(x, widths, fill_first=True)).cycles < by_slab


def gather_loop(hw: Hardware, pre: int, n: int, post: int, k: int, dtype: str) -> LoopWork:
    """backend/gather.py's loop: per index chunk a load and 7 integer ALU ops, per
    piece one gather (a burst per row) and one store."""
    p = gather_plan(hw, pre, n, post, k, dtype)
    isz = ITEMSIZE[dtype]
    compute = loads = load_cycles = transfer = stores = store_cycles = dram = seen = 0
    floor = 0.0
    for rn, rc in tile_splits(k, p.rows):
        loads += rc
        load_cycles += rc * timing.dma_cycles(hw, 4 * rn)
        transfer += rc * timing.dma_transfer_cycles(hw, 4 * rn)
        dram += rc * 4 * rn
        compute += rc * 7 * timing.vector_cycles(hw, rn, "add")
        for cn, cc in tile_splits(post, p.cols):
            count = rc * pre * cc
            gq = timing.gather_cycles(hw, rn, cn * isz)
            sq = timing.dma_cycles(hw, rn * cn * isz)
            gx = rn * timing.dma_transfer_cycles(hw, cn * isz)
            sx = timing.dma_transfer_cycles(hw, rn * cn * isz)
            xfer = gx + sx
            # the data tile a gather fills is the one its store drains: two slots, so
            # from the third step on a gather waits for the store two steps back to land
            plain = step_cycles(hw, 0, 1, gq, gx, sq, sx)
            through = (gq + sq + 2 * hw.dram_latency_cycles) / 2
            first = max(0, min(count, 2 - seen))  # steps that find their slot free
            floor += first * plain + (count - first) * max(plain, through)
            seen += count
            loads += count
            load_cycles += count * gq
            stores += count
            store_cycles += count * sq
            transfer += count * xfer
            dram += count * 2 * rn * cn * isz
    return LoopWork(
        p.steps,
        compute,
        loads,
        load_cycles,
        stores,
        store_cycles,
        transfer,
        dram,
        streams=1,
        floor=math.ceil(floor),
        hops=3,  # indices land, rows land, rows stored
    )


# ----------------------------------------------------------------- prices

_VECTOR_OP = {"maximum": "max", "minimum": "min", "cast": "copy"}


def add_costs(costs: Sequence[KernelCost]) -> KernelCost:
    """Kernels run one after another: the sum of their costs."""
    return KernelCost(
        cycles=sum(c.cycles for c in costs),
        compute_cycles=sum(c.compute_cycles for c in costs),
        matrix_cycles=sum(c.matrix_cycles for c in costs),
        vector_cycles=sum(c.vector_cycles for c in costs),
        dma_cycles=sum(c.dma_cycles for c in costs),
        dram_bytes=sum(c.dram_bytes for c in costs),
        feasible=all(c.feasible for c in costs),
        spill_bytes=sum(c.spill_bytes for c in costs),
        tile=next((c.tile for c in costs if c.tile is not None), None),
    )


def kernel_cost(hw: Hardware, streams: Sequence[Stream]) -> KernelCost:
    """One kernel made of streams run one after another (each waits until the one
    before has stored everything): the launch plus each stream's timeline; the units'
    totals as loop_cycles sums them. Infeasible if a stream fits no tile."""
    return plans_cost(hw, [stream_plan(hw, s) for s in streams])


def plans_cost(hw: Hardware, plans: Sequence[StreamPlan], extra_dram: int = 0) -> KernelCost:
    """One kernel running `plans` one after another: the launch plus each plan's
    timeline through the queues; the units' totals as loop_cycles sums them
    (`extra_dram`: bytes a prologue moves that the plans' steps do not count)."""
    loop = merge_streams([plan_loop(hw, p) for p in plans])
    totals = loop_cycles(hw, replace(loop, dram_bytes=loop.dram_bytes + extra_dram))
    cycles = hw.launch_cycles + sum(plan_cycles(hw, p) for p in plans)
    return replace(totals, cycles=math.ceil(cycles), feasible=all(p.fits for p in plans))


def _epilogue(op: OpDef, in_types: Sequence[TensorType], out: TensorType, attrs) -> tuple:
    """(ops, operands) of a fused convolution's epilogue: the body's ops besides the
    convolution, the operands besides x and w as strides over the output."""
    if op.composition is None:
        return (), ()
    body = body_nodes(op.composition, op.operands, in_types, attrs)
    ops = []
    for b in body:
        if b.op.name == "clip":  # a max and a min per bound it has (backend ewise_masks)
            lo, hi = clip_bounds(b.out.dtype, b.attrs)
            ops += [name for name, bound in (("max", lo), ("min", hi)) if bound is not None]
        elif b.op.name == "requantize_ch":  # per channel of the tile (backend/tileexpr.py)
            ops.append(f"{REQUANT_CH}{_scales_operand(op) - 2}")
            scale, zp = float(b.attrs["scale"]), int(b.attrs["zero_point"])  # type: ignore[arg-type]
            lo, hi = clamp_bounds(scale, zp, b.attrs["min"], b.attrs["max"])  # type: ignore[arg-type]
            ops += [name for name, keep in (("max", lo > -128), ("min", hi < 127)) if keep]
        elif b.op.name not in _CONVS:  # instructions known by op (quantize: a divide,
            # a conversion, the zero point; hard_swish: its clamp and products), else one
            lanes = lane_ops(b.op.name, b.in_types, b.attrs, b.out.dtype.value)
            ops += lanes if lanes is not None else (_VECTOR_OP.get(b.op.name, b.op.name),)
    extra = [(broadcast_strides(t.shape, out.shape), t.dtype.itemsize) for t in in_types[2:]]
    return tuple(ops), tuple(extra)


def _scales_operand(op: OpDef) -> int:
    """The operand index of the channel scales of the requantize_ch in op's body."""

    def find(e) -> str | None:
        if isinstance(e, str):
            return None
        if e.op == "requantize_ch" and isinstance(e.args[1], str):
            return e.args[1]
        return next((f for a in e.args if (f := find(a)) is not None), None)

    name = find(op.composition)
    assert name is not None, f"{op.name}: no requantize_ch of an operand"
    return op.operands.index(name)


def planned_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, object],
) -> KernelCost | None:
    """The cost of gather and pad (None for other ops), priced instruction by
    instruction. Inputs are taken to be row-major in DRAM."""
    if op_name == "gather":
        x, idx = in_types
        axis = int(attrs["axis"]) % x.rank  # type: ignore[call-overload]
        pre, post = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :])
        loop = gather_loop(hw, pre, x.shape[axis], post, idx.numel, x.dtype.value)
        return loop_cycles(hw, loop)
    if op_name == "pad":
        widths = pad_widths("pad", in_types[0], attrs["pads"])  # type: ignore[arg-type]
        first = pad_fills_first(hw, in_types[0], widths)
        return kernel_cost(hw, pad_streams(in_types[0], widths, first))
    return None  # pooling and depthwise convolution: eqsat/window_plan.py


def window_prep_cost(
    hw: Hardware, x: TensorType, g: Window2d, fill: bool, x_channels_last: bool = False
) -> KernelCost:
    """The prep of a window kernel in the nhwc layout: the padded image its windows
    read (`fill`: not zeros, max pooling's), from x row-major or stored channels-last."""
    pads, rows_cols = (g.pads[0], g.pads[1]), (g.rows, g.cols)
    isz = x.dtype.itemsize
    return image_prep_cost(hw, x.shape, isz, pads, rows_cols, 1, fill, x_channels_last)


def conv_of(op: OpDef, in_types: Sequence[TensorType], attrs):
    """(x, w, attributes) of the conv2d or qconv2d an op is or fuses, or None."""
    if op.name in _CONVS:
        return in_types[0], in_types[1], attrs
    if op.composition is None:
        return None
    for b in body_nodes(op.composition, op.operands, in_types, attrs):
        if b.op.name in _CONVS:
            return b.in_types[0], b.in_types[1], b.attrs
    return None


_CONVS = ("conv2d", "qconv2d")


def conv_gemm_work(
    op_name: str, in_types: Sequence[TensorType], attrs: Mapping[str, object], work: KernelWork
) -> KernelWork:
    """The GEMM a conv2d or qconv2d kernel (fused or not) runs: the matmul form of a
    pointwise convolution, else the implicit GEMM `work` as it is."""
    conv = conv_of(REGISTRY[op_name], in_types, attrs)
    if conv is None or not is_pointwise(*conv):
        return work
    return pointwise_work(work, conv[0], conv[1])


def conv_transposed_work(
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, object],
    work: KernelWork,
) -> KernelWork | None:
    """The weights @ patches GEMM of an ungrouped, not pointwise conv2d or qconv2d
    (fused or not), or None."""
    conv = conv_of(REGISTRY[op_name], in_types, attrs)
    if conv is None or is_pointwise(*conv) or int(conv[2].get("groups", 1)) > 1:
        return None
    return transposed_work(work, conv[0], conv[1], _conv_out(conv))


def _conv_out(conv) -> TensorType:
    x, w, attrs = conv
    g = conv_window(x, w, attrs)
    return TensorType(x.dtype, (x.shape[0], w.shape[0], *g.out_hw))


def group_share(work: KernelWork, groups: int) -> KernelWork:
    """One group's GEMM of a grouped convolution: N = O/G, a G-th of the work."""
    return replace(
        work,
        n=work.n // groups,
        macs=work.macs // groups,
        vector_ops=work.vector_ops // groups,
        bytes_in=work.bytes_in // groups,
        bytes_out=work.bytes_out // groups,
    )


def grouped_prep_cost(
    hw: Hardware, x: TensorType, attrs: Mapping[str, object], x_channels_last: bool = False
) -> KernelCost:
    """The prep kernel of a convolution's GEMMs (backend/conv_prep.py conv_inputs): the
    padded NHWC image, group-major with groups (a qconv2d's padded with its a_zero),
    from x row-major or (`x_channels_last`, ungrouped) stored channels-last: then no
    row-block loop, a strided copy into the interior and the borders filled."""
    ph, pw = attrs["padding"]  # type: ignore[misc]
    h, w = x.shape[2] + 2 * ph, x.shape[3] + 2 * pw
    groups = int(attrs.get("groups", 1))  # type: ignore[call-overload]
    fill = int(attrs.get("a_zero", 0)) != 0  # type: ignore[call-overload]
    isz = x.dtype.itemsize
    return image_prep_cost(hw, x.shape, isz, (ph, pw), (h, w), groups, fill, x_channels_last)


def conv_prep_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    attrs: Mapping[str, object],
    x_channels_last: bool = False,
) -> KernelCost | None:
    """The prep kernel in front of the implicit GEMM of a conv2d or qconv2d (fused or
    not): None for other ops and for depthwise convolutions (window kernels)."""
    conv = conv_of(REGISTRY[op_name], in_types, attrs)
    if conv is None:
        return None
    x, w, cattrs = conv
    if is_depthwise(x, w, cattrs):
        return None
    return grouped_prep_cost(hw, x, cattrs, x_channels_last)
