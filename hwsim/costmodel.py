"""Analytic cost model of one kernel: what extraction optimises, what the simulator checks.

It takes plain numbers (`KernelWork`), never IR, and predicts the cycles the simulator
would measure for a kernel the backend emits in the canonical shape below, by summing
the per-instruction formulas of `hwsim.timing`. Notation: R x C array, L lanes,
B DRAM bytes/cycle, I issue cycles, lat the DRAM latency, s the input item size.

Matmul / conv (implicit GEMM, C[m,n] = A[m,k] @ B[k,n], `batch` times).
  Tiles tm x tn x tk, output-stationary: for each (m,n) tile, for each k tile load A
  and B tiles (double buffered), matmul-accumulate, then move the accumulator out
  through the vector unit (plus the epilogue) and store it. K and N are padded to
  multiples of R and C. Constraints:
      SRAM  2*(tm*tk + tk*tn)*s + 2*tm*tn*s_out + working_set_bytes <= sram_bytes
      acc   4*tm*tn <= acc_bytes
  Re-reads: with one k tile (tk >= K) an A row panel stays resident across the n loop;
  if moreover one n tile covers N, B is loaded once. Otherwise A is read nN times and
  B nM times (nM = ceil(m/tm), nN = ceil(N/tn)):
      dram = bytes_in + bytes_out + A_bytes*(readsA - 1) + B_bytes*(readsB - 1)
  matrix  = batch * sum over tiles of timing.matmul_cycles(tm', tn', tk')  (edge tiles
            use their real sizes); a matmul of one row (m = 1) in f32 runs its
            products on the vector unit where timing.gemv_on_vector says it is faster
            than the array: timing.gemv_cycles(tn', tk') instead
  vector  = batch * nM*nN * vector_cycles(tm*tn, move) + ceil(vector_ops/L) + epilogue issue
  The tile shape minimising the total below is chosen.
  A gated product (`gemms` = 2: act(x @ wg) * (x @ wu)) multiplies each A tile by
  `gemms` B tiles into as many accumulators: matrix cycles, B bytes and B loads scale
  by `gemms`, and so do the B slots in SRAM and the accumulator; A and the output
  count once.
  A B stored [n, k] (`b_transposed`, matmul_nt) or read as patches (`patch_b`) adds a
  vector transpose of every B tile loaded; a per-channel epilogue (`channel_axis`) an
  instruction issue per output channel of every tile.

Vector / layout kinds stream their data through SRAM in double-buffered chunks of at
most sram_bytes/4 (whole working sets each); compute = ceil(vector_ops/L) + I per
instruction.

Every kind:
  dma   = max(ceil(dram/B), per-queue issue + transfer, n_dma*(lat + xfer)/dma_engines)
  total = launch + max(compute, dma) + 2*lat + (compute + dma - max(compute, dma)) / steps
  (roofline with overlap from double buffering, plus the exposed latencies of the first
  load and the last store, and one pipeline step of the non-bottleneck stage).
  A matmul/conv loop of at most gemm_queues.MAX_INSTRUCTIONS instructions is instead
  replayed on the simulator's queues (hwsim/gemm_queues.py): `total` is what the
  closed form assumes about overlap, wrong where DMA and compute are close and steps
  short. A tile search ranks by the closed form and replays its REPLAYED best tiles.

Spill: when the working set (with the minimal tile) does not fit SRAM, the kernel must
re-read: spill_bytes = 2*ceil(ws/sram)*(bytes_in + bytes_out + ws) are added to its
traffic, the result is doubled, and `feasible` is False. This makes a fusion that
overflows SRAM cost more than the unfused kernels.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from . import timing
from .dtypes import ITEMSIZE
from .gemm_queues import MAX_INSTRUCTIONS, gemm_program, instruction_count, run_queues
from .gemm_steps import gemm_step_cycles, gemv_kernel
from .hardware import MATRIX_DTYPES, Hardware

KINDS = ("matmul", "conv", "vector", "layout")
REPLAYED = 3  # tiles of a tile search replayed on the queues: the closed form's best
SPILL_FACTOR = 2  # multiplies the cost of an infeasible kernel on top of spill traffic


@dataclass(frozen=True)
class KernelWork:
    """The work of one kernel as plain numbers (all counts are totals incl. batch)."""

    kind: str  # matmul | conv | vector | layout
    dtype: str  # input dtype: f32 | bf16 | i8 (| i32 for vector/layout)
    macs: int = 0  # m*n*k*batch for matmul/conv (informational)
    m: int = 0  # matmul/conv dims: C[m,n] = A[m,k] @ B[k,n]; conv as implicit GEMM
    n: int = 0
    k: int = 0
    batch: int = 1  # matmul: A and B batched; conv: weights shared
    vector_ops: int = 0  # vector-unit lane ops (elements x timing.OP_PASSES[op])
    bytes_in: int = 0  # DRAM bytes read by an unfused run (each input once)
    bytes_out: int = 0  # DRAM bytes written (each output once)
    working_set_bytes: int = 0  # must stay resident in SRAM (matmul: besides the tiles)
    gemms: int = 1  # matmul: B operands each A tile multiplies, one accumulator each (gated: 2)
    # conv: (output row width, K run of one kernel row = KW*C, bytes of the input image):
    # an A tile is one strided DMA per (output row, kernel row) it touches and moves its
    # m x k patch elements (backend/contract.py PatchLoader), not the image once
    patch: tuple[int, int, int] = ()
    # the same for B = the transposed patches [K, pixels] of one image (a convolution
    # run as weights @ patches): loaded pixel-major in those pieces, turned on chip
    patch_b: tuple[int, int, int] = ()
    # matmul: B stored [n, k] (matmul_nt's keys): each B tile is loaded as one block of
    # rn rows x rk columns and turned on chip by a vector transpose before its products
    # (backend/contract.py matrix_mode "t"), as patch_b's pieces are
    b_transposed: bool = False
    # matmul/conv: an epilogue with one instruction per output channel of each tile (a
    # per-channel requantize: every channel its own multiplier and shift; backend/
    # tileexpr.py _requant_channels), the channels along "n" (a matmul's columns, a
    # convolution's implicit GEMM) or "m" (a convolution run with channels as rows)
    channel_axis: str = ""
    # matmul/conv: the operands a fused epilogue loads for each output tile, as (varies
    # along m, varies along n, item size): a bias is one row or column of the tile, a
    # residual the whole tile (hwsim/gemm_queues.py; the closed form leaves them out)
    epilogue_loads: tuple[tuple[bool, bool, int], ...] = ()
    # the rows of each of those that come in uniformly strided runs (a residual that is
    # a window of a padded map, backend/views.py RowsView): one DMA per run of a tile's
    # rows; 0 (or absent): the tile's rows in one DMA
    epilogue_runs: tuple[int, ...] = ()
    # matmul: B stored as b_bits-bit integers (4: packed two per byte) with one scale of
    # b_scale_bytes (f32 4, bf16 2) per b_group rows, dequantized on its way into SRAM
    # (hwsim/wq.py, isa.LoadDq): DRAM moves the packed bytes and the scales, SRAM holds
    # the dequantized tile; 0: plain B
    b_bits: int = 0
    b_group: int = 0
    b_scale_bytes: int = 4
    # matmul: A's panels are loaded whole, never in pieces (a norm prologue normalizes
    # whole rows on the way in: eqsat/norm_prologue.py)
    a_whole: bool = False
    # matmul: A is already on chip (the intermediate of a chained kernel, eqsat/
    # chain_plan.py): no A DMAs; `out_onchip`: the output stays on chip, no stores
    a_onchip: bool = False
    out_onchip: bool = False
    # matmul: (rows, cycles) of the vector program each A panel of that many rows runs
    # after it lands and before its products (a norm prologue, eqsat/chain_plan.py)
    a_prologue: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class KernelCost:
    """Predicted cycles of one kernel and where they come from."""

    cycles: int
    compute_cycles: int
    matrix_cycles: int
    vector_cycles: int
    dma_cycles: int
    dram_bytes: int
    feasible: bool = True
    spill_bytes: int = 0
    tile: tuple[int, int, int] | None = None


def roofline_terms(
    hw: Hardware, total_macs_by_dtype: Mapping[str, int], vector_ops: int, dram_bytes: int
) -> dict[str, float]:
    """Cycles of the matrix unit, the vector unit and DRAM, each at its peak rate."""
    return {
        "matrix": sum(macs / hw.macs_per_cycle[dt] for dt, macs in total_macs_by_dtype.items()),
        "vector": vector_ops / hw.vector_lanes,
        "dram": dram_bytes / hw.dram_bytes_per_cycle,
    }


def roofline_cycles(
    hw: Hardware, total_macs_by_dtype: Mapping[str, int], vector_ops: int, dram_bytes: int
) -> int:
    """Lower bound: the busiest of matrix unit, vector unit and DRAM at peak rate."""
    return math.ceil(max(roofline_terms(hw, total_macs_by_dtype, vector_ops, dram_bytes).values()))


def tile_splits(total: int, tile: int) -> list[tuple[int, int]]:
    """(size, count) of the tiles covering `total`: full tiles then one remainder."""
    full, rest = divmod(total, tile)
    return [(s, c) for s, c in ((tile, full), (rest, 1 if rest else 0)) if c]


def pow2_multiples(unit: int, limit: int) -> list[int]:
    """unit, 2*unit, 4*unit, ... below `limit`, then `limit`: the tile sizes tried."""
    sizes, s = [], unit
    while s < limit:
        sizes.append(s)
        s *= 2
    return [*sizes, limit]


def _dma(hw: Hardware, load_bytes: int, store_bytes: int, loads: int, stores: int) -> int:
    bw, issue = hw.dram_bytes_per_cycle, hw.issue_cycles
    n = max(1, loads + stores)
    channel = math.ceil((load_bytes + store_bytes) / bw)
    queues = max(
        loads * issue + math.ceil(load_bytes / bw), stores * issue + math.ceil(store_bytes / bw)
    )
    engines = n * (hw.dram_latency_cycles + channel / n) / hw.dma_engines
    return math.ceil(max(channel, queues, engines))


def _total(hw: Hardware, compute: int, dma: int, steps: int) -> int:
    hidden = compute + dma - max(compute, dma)
    return math.ceil(
        hw.launch_cycles + max(compute, dma) + 2 * hw.dram_latency_cycles + hidden / max(1, steps)
    )


def _spill(hw: Hardware, w: KernelWork, ws: int) -> int:
    return 2 * math.ceil(ws / hw.sram_bytes) * (w.bytes_in + w.bytes_out + ws)


def _matmul_tiles(hw: Hardware, w: KernelWork) -> Iterator[tuple[int, int, int]]:
    """Tile shapes (tm, tn, tk) that fit SRAM and the accumulator, largest tk per (tm, tn)."""
    R, C = hw.array_rows, hw.array_cols
    s, s_out = ITEMSIZE[w.dtype], _out_itemsize(w)
    kp, np_ = math.ceil(w.k / R) * R, math.ceil(w.n / C) * C
    budget = hw.sram_bytes - w.working_set_bytes
    for tm in pow2_multiples(R, w.m):
        for tn in pow2_multiples(C, np_):
            if 4 * tm * tn * w.gemms > hw.acc_bytes:
                continue
            for tk in reversed(pow2_multiples(R, kp)):
                sb = s + (1 if w.b_bits else 0)  # a quantized B's scale slots (see b_bits)
                if 2 * (tm * tk * s + w.gemms * tk * tn * sb) + 2 * tm * tn * s_out <= budget:
                    yield tm, tn, tk
                    break


def _out_itemsize(w: KernelWork) -> int:
    outs = w.batch * w.m * w.n
    return max(1, round(w.bytes_out / outs)) if w.bytes_out and outs else ITEMSIZE[w.dtype]


def matmul_tiling_cost(
    hw: Hardware, w: KernelWork, tile: tuple[int, int, int], spill: int = 0, replay: bool = True
) -> KernelCost:
    """Cost of a matmul/conv kernel with a given tile shape (tm, tn, tk), no fit check.
    The cycles are those of its loop replayed on the simulator's queues where it has at
    most MAX_INSTRUCTIONS instructions (and `replay`), else the closed form's."""
    tm, tn, tk = tile
    s = ITEMSIZE[w.dtype]
    nm, nn, nk = math.ceil(w.m / tm), math.ceil(w.n / tn), math.ceil(w.k / tk)
    step = gemm_step_cycles(hw, w, tile)
    matrix = sum(
        cm * cn * ck * step(sm, sn, sk)
        for sm, cm in tile_splits(w.m, tm)
        for sn, cn in tile_splits(w.n, tn)
        for sk, ck in tile_splits(w.k, tk)
    )
    move = sum(
        cm * cn * timing.vector_cycles(hw, sm * sn, "move")
        for sm, cm in tile_splits(w.m, tm)
        for sn, cn in tile_splits(w.n, tn)
    )
    if gemv_kernel(hw, w, tile):  # each B operand's partial sums folded per output tile
        h = timing.gemv_kernel_rows(hw, w.n, w.k, tn, tk)
        move += w.gemms * sum(
            cm * cn * sum(timing.gemv_fold_cycles(hw, sn, h))
            for _, cm in tile_splits(w.m, tm)
            for sn, cn in tile_splits(w.n, tn)
        )
    out_tiles = w.batch * nm * nn
    epilogue = math.ceil(w.vector_ops / hw.vector_lanes) + (
        hw.issue_cycles * out_tiles if w.vector_ops else 0
    )
    if w.channel_axis:  # the per-channel instructions' issue, each channel of each tile
        channels = w.batch * (w.n * nm if w.channel_axis == "n" else w.m * nn)
        epilogue += hw.issue_cycles * channels
    compute = w.batch * (w.gemms * matrix + move) + epilogue
    b_bytes = w.gemms * w.k * w.n * s * (w.batch if w.kind == "matmul" else 1)
    if w.b_bits:  # packed integers and their group scales (the batch shares them)
        b_bytes = quantized_b_bytes(w.k, w.n, w.b_bits, w.b_group, tk, w.b_scale_bytes)
    a_bytes = w.batch * w.m * w.k * s if w.kind == "matmul" else max(0, w.bytes_in - b_bytes)
    if w.a_onchip:
        a_bytes = 0
    reads_a = 1 if nk == 1 else nn
    reads_b = 1 if nk == 1 and nn == 1 else nm
    if w.kind == "conv":  # the weights are loaded again for every image
        reads_b *= w.batch
    once = w.bytes_in  # every input read once
    if w.patch:  # the image is not read once: its patches are, reads_a times
        a_bytes = w.batch * w.m * w.k * s
        once += a_bytes - w.patch[2]
    dram = once + w.bytes_out + a_bytes * (reads_a - 1) + b_bytes * (reads_b - 1) + spill
    if w.b_bits:  # bytes_in has each scale row once; k tiles inside a group reload it
        dram += b_bytes - quantized_b_bytes(w.k, w.n, w.b_bits, w.b_group, w.k, w.b_scale_bytes)
    loads_a = 0 if w.a_onchip else w.batch * (nm if nk == 1 else nm * nn * nk)
    if w.patch:
        pieces = _runs(w.m, tm, w.patch[0]) * _runs(w.k, tk, w.patch[1])
        loads_a = w.batch * pieces * (1 if nk == 1 else nn)
    loads_b = w.gemms * w.batch * (1 if nk == 1 and nn == 1 else nm * nn * nk)
    if w.b_bits:  # a B tile is its scales' load and the dequantizing load
        loads_b *= 2
    if w.patch_b:  # read as patches, each B tile load in pieces, then transposed
        b_loads = w.batch * (1 if nk == 1 and nn == 1 else nm)
        dram += b_bytes - w.patch_b[2]
        loads_b = b_loads * _runs(w.n, tn, w.patch_b[0]) * _runs(w.k, tk, w.patch_b[1])
    if w.patch_b or w.b_transposed:  # every B tile loaded is turned on chip
        b_loads = w.gemms * w.batch * (1 if nk == 1 and nn == 1 else nm)
        compute += b_loads * sum(
            cn * ck * timing.vector_cycles(hw, sn * sk, "transpose")
            for sn, cn in tile_splits(w.n, tn)
            for sk, ck in tile_splits(w.k, tk)
        )
    stores = 0 if w.out_onchip else out_tiles
    dma = _dma(hw, dram - w.bytes_out, w.bytes_out, loads_a + loads_b, stores)
    steps = w.batch * nm * nn * nk
    cycles = _total(hw, compute, dma, steps)
    if replay and not spill and instruction_count(w, tile, loads_a + loads_b) <= MAX_INSTRUCTIONS:
        # few enough instructions to replay the loop on the simulator's queues: how
        # far DMA and compute overlap, step by step (hwsim/gemm_queues.py)
        cycles = replayed_cycles(hw, w, (tm, tn, tk))
    on_vector = gemv_kernel(hw, w, tile)
    return KernelCost(
        cycles=cycles,
        compute_cycles=compute,
        matrix_cycles=0 if on_vector else w.batch * w.gemms * matrix,
        vector_cycles=w.batch * (move + (w.gemms * matrix if on_vector else 0)) + epilogue,
        dma_cycles=dma,
        dram_bytes=dram,
        feasible=spill == 0,
        spill_bytes=spill,
        tile=(tm, tn, tk),
    )


@functools.lru_cache(maxsize=1 << 14)
def replayed_cycles(hw: Hardware, w: KernelWork, tile: tuple[int, int, int]) -> int:
    """A GEMM kernel's cycles with its loop replayed on the queues (cached: the e-graph
    prices the same kernel at the same tile many times)."""
    return math.ceil(hw.launch_cycles + run_queues(hw, gemm_program(hw, w, tile)))


def cheapest_tiles(
    hw: Hardware, w: KernelWork, tiles: Iterable[tuple[int, int, int]]
) -> list[KernelCost]:
    """The REPLAYED tiles of `tiles` the closed form prices cheapest, priced with
    matmul_tiling_cost (replayed): a search replays a few tiles, not all of them."""
    closed = sorted(
        (matmul_tiling_cost(hw, w, t, replay=False) for t in tiles),
        key=lambda c: (c.cycles, c.dram_bytes),
    )
    return [matmul_tiling_cost(hw, w, c.tile) for c in closed[:REPLAYED]]  # type: ignore[arg-type]


@functools.cache
def _runs(total: int, tile: int, run: int) -> int:
    """Pieces of `run` elements (rows of pixels, kernel rows) that the tiles of `tile`
    over `total` touch, summed over the tiles."""
    return sum((t + min(tile, total - t) - 1) // run - t // run + 1 for t in range(0, total, tile))


def quantized_b_bytes(k: int, n: int, bits: int, group: int, tk: int, scale_bytes: int = 4) -> int:
    """DRAM bytes of one pass over a quantized B[k, n] in k tiles of tk rows: the packed
    integers, plus the scale rows (`scale_bytes` a scale) of the groups each k tile
    touches (a group split over two tiles has its scales loaded by both)."""
    rows = sum((k0 % group + min(tk, k - k0) - 1) // group + 1 for k0 in range(0, k, tk))
    return k * n * bits // 8 + rows * n * scale_bytes


def _matmul(hw: Hardware, w: KernelWork) -> KernelCost:
    if w.m <= 0 or w.n <= 0 or w.k <= 0:
        raise ValueError(f"{w.kind} work needs positive m, n, k; got {w.m}, {w.n}, {w.k}")
    if w.dtype not in MATRIX_DTYPES:
        raise ValueError(f"the matrix unit takes {', '.join(MATRIX_DTYPES)}, not {w.dtype}")
    best = min(
        cheapest_tiles(hw, w, _matmul_tiles(hw, w)),
        key=lambda c: (c.cycles, c.dram_bytes),
        default=None,
    )
    if best is not None:
        return best
    R, C = hw.array_rows, hw.array_cols
    tile_ws = 2 * (R * R + R * C) * ITEMSIZE[w.dtype] + 2 * R * C * _out_itemsize(w)
    spill = _spill(hw, w, w.working_set_bytes + tile_ws)
    spilled = matmul_tiling_cost(hw, w, (min(R, w.m), C, R), spill)
    return _penalise(spilled)


def _penalise(cost: KernelCost) -> KernelCost:
    return KernelCost(**{**cost.__dict__, "cycles": cost.cycles * SPILL_FACTOR, "feasible": False})


def _vector(hw: Hardware, w: KernelWork) -> KernelCost:
    chunk_budget = hw.sram_bytes // 4  # in + out chunks, double buffered
    ws = w.working_set_bytes
    streamed = w.bytes_in + w.bytes_out
    spill = _spill(hw, w, ws) if ws > hw.sram_bytes else 0
    chunk = max(min(chunk_budget, streamed), ws, 1)
    if ws > chunk_budget:  # fits only single buffered: nothing overlaps
        chunk = ws
    chunks = max(1, math.ceil(streamed / chunk))
    elements = max(1, w.bytes_out // ITEMSIZE[w.dtype])
    per_chunk = max(1, round(w.vector_ops / elements))
    compute = math.ceil(w.vector_ops / hw.vector_lanes) + hw.issue_cycles * chunks * per_chunk
    dram = streamed + spill
    dma = _dma(hw, w.bytes_in + spill // 2, w.bytes_out + spill // 2, chunks, chunks)
    steps = 1 if ws > chunk_budget else chunks
    cost = KernelCost(
        cycles=_total(hw, compute, dma, steps),
        compute_cycles=compute,
        matrix_cycles=0,
        vector_cycles=compute,
        dma_cycles=dma,
        dram_bytes=dram,
        feasible=True,
        spill_bytes=spill,
    )
    return _penalise(cost) if spill else cost


@functools.lru_cache(maxsize=1 << 16)
def kernel_cycles(hw: Hardware, work: KernelWork) -> KernelCost:
    """Predicted cost of one kernel on `hw` (cached: both arguments are frozen values)."""
    if work.kind not in KINDS:
        raise ValueError(f"unknown kernel kind {work.kind!r}; use one of {', '.join(KINDS)}")
    if work.dtype not in ITEMSIZE:
        raise ValueError(f"unknown dtype {work.dtype!r}; use one of {', '.join(ITEMSIZE)}")
    if work.kind in ("matmul", "conv"):
        return _matmul(hw, work)
    return _vector(hw, work)


@dataclass(frozen=True)
class LoopWork:
    """A kernel given as the totals of the instructions its double-buffered tile loop
    issues, for kernels whose plan enumerates them (eqsat/spatial_plan.py: window
    kernels, gather, pad): cycles per instruction from `timing`, summed."""

    steps: int  # tiles: pipeline steps
    compute: int  # cycles of the compute instructions
    loads: int  # DMA loads and gathers
    load_cycles: int  # their load-queue occupancy
    stores: int
    store_cycles: int  # store-queue occupancy
    transfer: int  # DRAM channel cycles of every load and store
    dram_bytes: int
    streams: int = 1  # independent streams run one after another (fenced pieces)
    floor: int = 0  # the steps' busiest resource summed step by step (step_cycles)
    hops: int = 2  # DMAs one after another on a step's path (load, store; a gather: 3)


def step_cycles(
    hw: Hardware,
    compute: int,
    loads: int,
    load_cycles: int,
    load_transfer: int,
    store_cycles: int,
    store_transfer: int,
) -> float:
    """One step of a double-buffered loop at its busiest: compute; the DRAM channel
    (a queue issuing back to back leaves its issue cycles idle unless the other queue
    fills them); the DMA engines (each holds a transfer from issue until its data
    lands, dram_latency_cycles later); or the two slots of its input (load, land,
    compute) or output (compute, store, land) coming round again."""
    lat = hw.dram_latency_cycles
    channel = max(
        load_transfer + store_transfer,
        load_cycles + store_transfer,
        store_cycles + load_transfer,
    )
    engines = (load_cycles + store_cycles + (loads + 1) * lat) / hw.dma_engines
    recycle = max(load_cycles + lat + compute, compute + store_cycles + lat) / 2
    return max(compute, channel, engines, recycle)


def loop_cycles(hw: Hardware, w: LoopWork) -> KernelCost:
    """A tile loop's cycles: the busiest of compute, the DRAM channel, each DMA queue
    and the DMA engines over the whole loop, or step by step (`floor`), overlapped as
    in every kernel here, with the latency of each DMA on the first step's path (the
    first load, the last store) exposed once per stream."""
    engines = (w.load_cycles + w.store_cycles + (w.loads + w.stores) * hw.dram_latency_cycles) / (
        hw.dma_engines
    )
    dma = math.ceil(max(w.transfer, w.load_cycles, w.store_cycles, engines))
    hidden = w.compute + dma - max(w.compute, dma)
    cycles = (
        hw.launch_cycles
        + max(w.compute, dma, w.floor)
        + w.hops * hw.dram_latency_cycles * w.streams
        + hidden / max(1, w.steps)
    )
    return KernelCost(
        cycles=math.ceil(cycles),
        compute_cycles=w.compute,
        matrix_cycles=0,
        vector_cycles=w.compute,
        dma_cycles=dma,
        dram_bytes=w.dram_bytes,
    )


def program_cycles(hw: Hardware, works: list[KernelWork]) -> int:
    """Kernels run one after another: the program costs the sum of its kernels."""
    return sum(kernel_cycles(hw, w).cycles for w in works)
