"""A normalization in a matrix product's epilogue, decided once for the backend
(backend/norm_epilogue.py) and the cost model (eqsat/costs.py).

matmul_bias_add_layernorm(x, w, b, r, gamma, beta) runs as the GEMM of its inner
product matmul_bias_add at a tile whose N loop has a single step: each output tile
holds whole rows of the result. After a tile's K loop the epilogue writes x@w + b + r
into an f32 SRAM tile (the fused body is computed in f32), and
the vector unit runs the row program of eqsat/row_plan.py on it into the output slot,
which is stored; the parameter rows (gamma, beta) are loaded once, before the loop.
The sum never goes to DRAM and the norm's kernel (its launch, load and store) goes
away. The row program and the store go in row chunks (row_chunks): each chunk is stored
while the next is normalized. The price is the inner product's at that tile (replayed
on the simulator's queues) plus the row program of every output tile, less what the
last tile's chunked store saves: the epilogue runs on the compute queue, in order
with the products, so the program adds to the critical path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from eqsat.ir.types import TensorType
from eqsat.norm_prologue import panel_cycles
from eqsat.row_plan import PARAMS
from eqsat.tiling import tile_sram_bytes
from hwsim import timing
from hwsim.costmodel import KernelCost, KernelWork, cheapest_tiles, pow2_multiples, tile_splits
from hwsim.dtypes import ITEMSIZE
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


CHUNKS = (1, 2, 4, 8)  # row chunks of an output tile tried


def row_chunks(hw: Hardware, kind: str, rows: int, n: int, dtype: str) -> list[tuple[int, int]]:
    """(first row, rows) of the chunks an output tile's row program and store go in:
    each chunk is stored while the next one is normalized, so the tile's tail after
    its last product is the program and the last chunk's store, not the whole tile's.
    The count minimises that tail among those whose every store fits under the next
    chunk's program (more chunks pay an issue per instruction more)."""
    isz = ITEMSIZE[dtype]
    best, best_cycles = [(0, rows)], math.inf
    for count in CHUNKS:
        size = -(-rows // count)
        if count > 1 and size < 8:
            break
        parts = [(r0, min(size, rows - r0)) for r0 in range(0, rows, size)]
        program = [panel_cycles(hw, kind, rc, n, dtype) for _, rc in parts]
        stores = [timing.dma_cycles(hw, rc * n * isz) for _, rc in parts]
        if any(st > nxt for st, nxt in zip(stores, program[1:], strict=False)):
            continue
        cycles = sum(program) + stores[-1]
        if cycles < best_cycles:
            best, best_cycles = parts, cycles
    return best


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
    hw: Hardware, op_name: str, work: KernelWork, epilogue: int, out: TensorType
) -> KernelCost | None:
    """The fused kernel's price: the inner product's `work` at its cheapest whole-row
    tile (`epilogue`: SRAM bytes per output element of the inner epilogue's operands)
    plus the row program of each output tile; None when no whole-row tile fits (the
    caller prices it unrunnable)."""
    kind = NORM_EPILOGUE[op_name][0]
    dtype = out.dtype.value
    n = work.n

    def fits(tile: tuple[int, int, int]) -> bool:
        extra = epilogue_sram_bytes(tile[0], n, dtype, kind)
        return tile_sram_bytes(work, tile, epilogue) + extra <= hw.sram_bytes

    tiles = whole_row_tiles(hw, work.m, n, work.k, fits)
    best = min(
        cheapest_tiles(hw, work, tiles), key=lambda c: (c.cycles, c.dram_bytes), default=None
    )
    if best is None:
        return None
    tm = best.tile[0] if best.tile else min(work.m, hw.array_rows)
    extra, saved = rows_cycles(hw, kind, work.m, work.batch, tm, n, dtype)
    return replace(
        best,
        cycles=best.cycles + extra - saved,
        compute_cycles=best.compute_cycles + extra,
        vector_cycles=best.vector_cycles + extra,
    )
