"""A normalization in a matrix product's epilogue, decided once for the backend
(backend/norm_epilogue.py) and the cost model (eqsat/costs.py).

matmul_bias_add_layernorm(x, w, b, r, gamma, beta) runs as the GEMM of its inner
product matmul_bias_add at a tile whose N loop has a single step: each output tile
holds whole rows of the result. After a tile's K loop the epilogue writes x@w + b + r
into an f32 SRAM tile (the fused body is computed in f32), and
the vector unit runs the row program of eqsat/row_plan.py on it into the output slot,
which is stored; the parameter rows (gamma, beta) are loaded once, after the first
product's operands. The sum never goes to DRAM and the norm's kernel (its launch,
load and store) goes away. The row program and the store go in row chunks
(row_chunks): each chunk is stored while the next is normalized.

The epilogue runs on the vector queue, beside the array: a tile's normalization
overlaps the next tile's products (which wait only until the expression has read the
accumulator). The last tile has no next one, so the last K step of the last tile is
cut into row pieces (tail_pieces), each its own matmul: the vector queue normalizes
the rows of a piece while the array multiplies the next, and only the last piece's
rows wait after the last product. A piece costs the array a pipeline fill and drain
(R + C) and keeps it full while it streams at least R cycles a fold (hwsim/timing.py
matmul_cycles); the pieces are chosen by price. The price replays the whole loop,
epilogue and stores on the simulator's queues (hwsim/gemm_queues.py RowsTail).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from eqsat.ir.types import TensorType
from eqsat.norm_prologue import panel_cycles
from eqsat.row_plan import PARAMS
from eqsat.tiling import tile_sram_bytes
from hwsim import timing
from hwsim.costmodel import KernelCost, KernelWork, cheapest_tiles, pow2_multiples, tile_splits
from hwsim.dtypes import ITEMSIZE
from hwsim.gemm_queues import MAX_INSTRUCTIONS, gemm_program, instruction_count, run_queues
from hwsim.hardware import Hardware

# fused op -> (normalization, inner product op, number of the inner op's operands)
NORM_EPILOGUE = {
    "matmul_bias_add_layernorm": ("layernorm", "matmul_bias_add", 4),
}


def whole_rows_apply(in_types, out: TensorType) -> bool:
    """Whether the product's own result has the output's shape (rank 2 or more): else
    the bias or residual broadcasts it to a larger one, and the kernel runs as the
    product with its epilogue, then the norm's own kernel (backend/norm_epilogue.py)."""
    from eqsat.ops import REGISTRY

    product = REGISTRY["matmul"].type_of(list(in_types[:2]), {})
    return out.rank >= 2 and product.shape == out.shape


def epilogue_sram_bytes(rows: int, n: int, dtype: str, kind: str) -> int:
    """SRAM the row program adds to the GEMM's tiles for output tiles of `rows` whole
    rows of n: the f32 sum tile and scratch t and u, the per-row columns, the parameter
    rows in `dtype` (each allocation aligned as KernelBuilder aligns)."""
    isz = ITEMSIZE[dtype]
    tiles = [(rows, n, 4), (rows, n, 4), (rows, n, 4), (rows, 1, 4), (rows, 1, 4)]
    tiles += [(1, n, isz)] * len(PARAMS[kind])
    return sum(-(-r * c * s // 64) * 64 for r, c, s in tiles)


def whole_row_tiles(
    hw: Hardware, m: int, n: int, k: int, fits: Callable[[tuple[int, int, int]], bool]
) -> list[tuple[int, int, int]]:
    """The tiles (tm, n, tk) the backend and the model choose among: tm a power of two
    times the array (or all of M), the whole of N, and every K step that `fits` (SRAM
    and the accumulator, as the caller counts them). Every K step, not only the
    largest: with N whole, a short K step is what lets the first products start
    before the weights' whole panel has landed."""
    return [
        (tm, n, tk)
        for tm in pow2_multiples(hw.array_rows, m)
        if 4 * tm * n <= hw.acc_bytes
        for tk in pow2_multiples(hw.array_rows, k)
        if fits((tm, n, tk))
    ]


MAX_CHUNKS = 4  # row chunks of an output tile at most
CHUNK_UNITS = 16  # chunk sizes are multiples of 1/16 of the tile (at least 8 rows)


def _compositions(units: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write `units` as an ordered sum of at most `parts` positive terms."""
    if parts == 1 or units == 1:
        return [(units,)]
    out = [(units,)]
    for first in range(1, units):
        out += [(first, *rest) for rest in _compositions(units - first, parts - 1)]
    return out


@functools.lru_cache(maxsize=1 << 12)
def row_chunks(hw: Hardware, kind: str, rows: int, n: int, dtype: str) -> list[tuple[int, int]]:
    """(first row, rows) of the chunks an output tile's row program and store go in:
    each chunk is stored while the next one is normalized, so the tile's tail after
    its last product is the program and the last chunk's store, not the whole tile's.
    The sizes (at most MAX_CHUNKS, multiples of a unit of at least 8 rows, the first
    taking the remainder) minimise the time from the program's start to the last
    store's end, each store after its chunk's program and the store before it (the
    store queue runs in order); ties go to fewer chunks. Uneven chunks pay: a small
    last chunk is a short program and a short store after a long one."""
    isz = ITEMSIZE[dtype]
    unit = max(8, -(-rows // CHUNK_UNITS))
    program = functools.cache(lambda rc: panel_cycles(hw, kind, rc, n, dtype))

    def tail(sizes: tuple[int, ...]) -> int:
        done = stored = 0
        for rc in sizes:
            done += program(rc)
            stored = max(stored, done) + timing.dma_cycles(hw, rc * n * isz)
        return stored

    rest = rows % unit
    splits = [(rows,)]
    if rows >= 2 * unit:
        splits = [
            (c[0] * unit + rest, *(u * unit for u in c[1:]))
            for c in _compositions(rows // unit, MAX_CHUNKS)
        ]
    best = min(splits, key=lambda sizes: (tail(sizes), len(sizes)))
    starts = itertools.accumulate(best, initial=0)
    return [(r0, rc) for r0, rc in zip(starts, best, strict=False)]


@dataclass(frozen=True)
class NormTail:
    """The epilogue of each output tile on the vector queue (hwsim/gemm_queues.py
    RowsTail): the row program of `kind` on rows of n in row_chunks, the output in
    `dtype`, the parameter rows `params` (item sizes) loaded once, `out_slots` output
    slots in turn; `split`: the row pieces of the last tile's last K step (one piece:
    not cut)."""

    hw: Hardware
    kind: str
    n: int
    dtype: str
    params: tuple[int, ...]
    out_slots: int = 2
    split: tuple[int, ...] = ()

    @property
    def param_loads(self) -> tuple[int, ...]:
        return tuple(timing.dma_cycles(self.hw, self.n * isz) for isz in self.params)

    def pieces(self, rows: int) -> tuple[int, ...]:
        return self.split if sum(self.split) == rows else (rows,)

    def chunks(self, rows: int) -> list[tuple[int, int]]:
        hw, isz = self.hw, ITEMSIZE[self.dtype]
        return [
            (
                panel_cycles(hw, self.kind, rc, self.n, self.dtype),
                timing.dma_cycles(hw, rc * self.n * isz),
            )
            for _, rc in row_chunks(hw, self.kind, rows, self.n, self.dtype)
        ]


def piece_splits(hw: Hardware, dtype: str, rows: int) -> list[tuple[int, ...]]:
    """The row pieces tried for the last K step of a tile of `rows` rows: whole, or a
    last piece of q, 2q, 4q, ... rows (q: the fewest rows that stream a fold as long
    as the array takes to preload it) after the rest."""
    q = max(1, -(-hw.array_rows // hw.passes(dtype)))
    out: list[tuple[int, ...]] = [(rows,)]
    last = q
    while last < rows:
        out.append((rows - last, last))
        last *= 2
    return out


@functools.lru_cache(maxsize=1 << 12)
def tail_cycles(hw: Hardware, work: KernelWork, tile: tuple[int, int, int], tail: NormTail) -> int:
    """The kernel's cycles: its loop, epilogues and stores replayed on the queues."""
    return math.ceil(hw.launch_cycles + run_queues(hw, gemm_program(hw, work, tile, tail=tail)))


def replayable(work: KernelWork, tile: tuple[int, int, int]) -> bool:
    """Whether the loop is short enough to replay (hwsim/gemm_queues.py); a longer one
    keeps its pieces whole."""
    tm, tn, tk = tile
    nm, nn, nk = (math.ceil(d / t) for d, t in ((work.m, tm), (work.n, tn), (work.k, tk)))
    loads_a = work.batch * (nm if nk == 1 else nm * nn * nk)
    loads_b = work.gemms * work.batch * (1 if nk == 1 and nn == 1 else nm * nn * nk)
    return instruction_count(work, tile, loads_a + loads_b) <= MAX_INSTRUCTIONS


def tail_plan(
    hw: Hardware, work: KernelWork, tile: tuple[int, int, int], tail: NormTail
) -> NormTail:
    """`tail` with the row pieces of the last tile's last K step that price cheapest
    (ties: fewer pieces)."""
    last = tile_splits(work.m, min(tile[0], work.m))[-1][0]
    if not replayable(work, tile):
        return replace(tail, split=(last,))
    plans = [replace(tail, split=split) for split in piece_splits(hw, work.dtype, last)]
    return min(plans, key=lambda t: (tail_cycles(hw, work, tile, t), len(t.split)))


def rows_cycles(
    hw: Hardware, kind: str, m: int, batch: int, tm: int, n: int, dtype: str
) -> tuple[int, int]:
    """(cycles of the row program over every output tile, `batch` x ceil(m / tm)
    tiles, in its chunks; the cycles the last tile's chunked store saves against one)."""
    total = 0
    for r, c in tile_splits(m, tm):
        parts = row_chunks(hw, kind, r, n, dtype)
        total += c * sum(panel_cycles(hw, kind, rc, n, dtype) for _, rc in parts)
    last = tile_splits(m, tm)[-1][0]
    parts = row_chunks(hw, kind, last, n, dtype)
    isz = ITEMSIZE[dtype]
    saved = timing.dma_cycles(hw, last * n * isz) - timing.dma_cycles(hw, parts[-1][1] * n * isz)
    return batch * total, saved


def norm_epilogue_cost(
    hw: Hardware,
    op_name: str,
    work: KernelWork,
    epilogue: int,
    out: TensorType,
    params: tuple[int, ...] = (),
) -> KernelCost | None:
    """The fused kernel's price: the inner product's `work` at its cheapest whole-row
    tile (`epilogue`: SRAM bytes per output element of the inner epilogue's operands),
    replayed with each tile's epilogue and row program on the vector queue and the
    last tile's last K step in the pieces tail_plan picks (`params`: the item sizes
    of the parameter rows); None when no whole-row tile fits (the caller prices it
    unrunnable)."""
    kind = NORM_EPILOGUE[op_name][0]
    dtype = out.dtype.value
    n = work.n

    def fits(tile: tuple[int, int, int], slots: int = 1) -> bool:
        extra = epilogue_sram_bytes(tile[0], n, dtype, kind)
        extra += (slots - 1) * ITEMSIZE[dtype] * tile[0] * n  # more output slots
        return tile_sram_bytes(work, tile, epilogue) + extra <= hw.sram_bytes

    # as the backend chooses (backend/gemm_kernel.py choose_tile): the K steps that fit
    # with two output slots where one does, else those that fit with one
    tiles = whole_row_tiles(hw, work.m, n, work.k, fits)
    two = {t[0] for t in tiles if fits(t, 2)}
    tiles = [t for t in tiles if t[0] not in two or fits(t, 2)]
    best = min(
        cheapest_tiles(hw, work, tiles), key=lambda c: (c.cycles, c.dram_bytes), default=None
    )
    if best is None:
        return None
    tm = best.tile[0] if best.tile else min(work.m, hw.array_rows)
    extra, saved = rows_cycles(hw, kind, work.m, work.batch, tm, n, dtype)
    if best.tile is None or not replayable(work, best.tile):
        cycles = best.cycles + extra - saved  # the closed form, the epilogue after it
    else:
        slots = 2 if fits(best.tile, 2) else 1
        plan = tail_plan(hw, work, best.tile, NormTail(hw, kind, n, dtype, params, slots))
        cycles = tail_cycles(hw, work, best.tile, plan)
    return replace(
        best,
        cycles=cycles,
        compute_cycles=best.compute_cycles + extra,
        vector_cycles=best.vector_cycles + extra,
    )
