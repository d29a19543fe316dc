"""A one-row product split between the matrix unit and the vector unit.

A decode step's projections are products of one row x[1, K] by weights W[K, N]. The
systolic array preloads an R x C block of W per fold (R cycles), so it takes at most
R * C / R = C weights per cycle whatever the DRAM channel delivers; a weight-only int4
tile arrives twice as fast as that on edge. The vector unit is idle meanwhile. Here
the output columns are split: the first `n_matrix` run on the array (the compute
queue), the last `n_vector` as GEMV steps on the vector unit (the vector queue,
hwsim/isa.py), both parts' loads interleaved on the load queue in proportion, as a
cube/vector NPU runs its two pipelines side by side.

The plan (where to split, each part's tile) is chosen here by pricing candidates on
the simulator's queues (gemm_queues); the cost model and the backend
(backend/weight_only.py) both read the same plan, so nothing else prices it.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import timing
from .dtypes import ITEMSIZE
from .gemm_queues import QueueProgram, gemm_program, run_queues
from .hardware import Hardware
from .isa import QUEUES, Instr

MARGIN = 4096  # SRAM bytes left free, as the backend's tile choice leaves
REPLAYED = 3  # tile pairs per split replayed on the queues: the closed form's best


@dataclass(frozen=True)
class GemvSplit:
    """Columns [0, n_matrix) on the array at `matrix_tile`, [n_matrix, n) on the
    vector unit at `vector_tile`; `cycles` the kernel's, launch included."""

    n_matrix: int
    n_vector: int
    matrix_tile: tuple[int, int, int]
    vector_tile: tuple[int, int, int]
    cycles: int


def part_work(w, n: int):
    """The KernelWork of `n` of w's output columns (a quantized B's packed bytes and
    scales, the output's bytes, and x once)."""
    a_bytes = w.m * w.k * ITEMSIZE[w.dtype]
    out_item = max(1, round(w.bytes_out / (w.m * w.n))) if w.bytes_out else 4
    b_bytes = w.k * n * w.b_bits // 8 + math.ceil(w.k / w.b_group) * n * w.b_scale_bytes
    return dataclasses.replace(
        w, n=n, macs=w.m * n * w.k, bytes_in=a_bytes + b_bytes, bytes_out=w.m * n * out_item
    )


def sram_need(hw: Hardware, w, tile: tuple[int, int, int], on_vector: bool) -> int:
    """SRAM of one part's slots, as backend/gemm.py allocates them: A and B (weights in
    x's dtype, plus their scale rows) double buffered, two output slots, and for the
    vector unit's products the f32 partial sums (timing.gemv_kernel_rows rows)."""
    tm, tn, tk = min(tile[0], w.m), min(tile[1], w.n), min(tile[2], w.k)
    s = ITEMSIZE[w.dtype]
    groups = (w.b_group - 1 + tk - 1) // w.b_group + 1
    out_item = max(1, round(w.bytes_out / (w.m * w.n))) if w.bytes_out else 4
    need = 2 * tm * tk * s + 2 * (tk * tn * s + groups * tn * w.b_scale_bytes)
    need += 2 * tm * tn * out_item
    if on_vector:
        need += timing.gemv_kernel_rows(hw, w.n, w.k, tn, tk) * tn * 4
    return need + 4 * 64  # each tile starts on a 64-byte boundary


def interleave(parts: Sequence[QueueProgram], hw: Hardware) -> list[tuple[int, int]]:
    """Program order of several instruction streams run side by side, as (part, index)
    pairs: every instruction at the time it starts when its part runs alone on the
    queues. Each part's own order per queue is kept, and the shared load and store
    queues take the parts' instructions as each would issue them; ordered by those
    times, the head of every queue only waits on what started before it, so the
    merged program cannot deadlock."""
    keyed = []
    for p, prog in enumerate(parts):
        starts = [0.0] * len(prog.queue)
        run_queues(hw, prog, starts)
        keyed += [(t, p, j) for j, t in enumerate(starts)]
    keyed.sort()
    return [(p, j) for _, p, j in keyed]


def merged_program(hw: Hardware, parts: Sequence[QueueProgram]) -> QueueProgram:
    """The parts' abstract instructions in `interleave` order, dependences renumbered."""
    order = interleave(parts, hw)
    index = {pj: i for i, pj in enumerate(order)}
    out = QueueProgram()
    for p, j in order:
        prog = parts[p]
        deps = tuple(index[(p, d)] for d in prog.deps[j])
        out.add(prog.queue[j], prog.cycles[j], deps, prog.vector_unit[j])
    return out


def queue_program(hw: Hardware, instrs: Sequence[Instr]) -> QueueProgram:
    """Real instructions as abstract ones (queue, cycles, dependences); each wait on a
    token pairs with the oldest signal of it not yet consumed, as the Pipeline's
    tokens pair up in program order."""
    prog, signals = QueueProgram(), collections.defaultdict(collections.deque)
    for ins in instrs:
        deps = tuple(signals[t].popleft() for t in ins.wait)
        unit, cycles = timing.instruction_cost(hw, ins)
        i = prog.add(QUEUES.index(ins.queue), cycles, deps, unit == "vector")
        for t in ins.signal:
            signals[t].append(i)
    return prog


def split_cycles(hw: Hardware, w, n_vector: int, matrix_tile, vector_tile) -> int:
    """Cycles of the split kernel, its two loops replayed side by side on the queues."""
    wm, wv = part_work(w, w.n - n_vector), part_work(w, n_vector)
    progs = [
        gemm_program(hw, wm, matrix_tile, "matrix"),
        gemm_program(hw, wv, vector_tile, "vector"),
    ]
    return math.ceil(hw.launch_cycles + run_queues(hw, merged_program(hw, progs)))


def _pow2_tiles(lo: int, hi: int) -> list[int]:
    out, t = [], lo
    while t < hi:
        out.append(t)
        t *= 2
    return [*out, hi] if hi not in out else out


@functools.lru_cache(maxsize=1 << 12)
def plan_split(hw: Hardware, w) -> GemvSplit | None:
    """The cheapest split of a one-row weight-only product (w: its KernelWork), or None
    where the work is not one row of a quantized product, or no split fits SRAM. The
    share of columns on the vector unit starts where the two units' rates balance
    (the array: C weights a cycle; the vector unit: one fused multiply-add per weight
    on L lanes) and its neighbours are tried; for each, the pairs of tiles that fit
    SRAM together are ranked by a closed form (`_part_tiles`) and the best REPLAYED are
    replayed side by side on the queues (extraction prices every form of every
    product: this stays a fraction of a second)."""
    if w.kind != "matmul" or w.m != 1 or not w.b_bits or w.batch != 1 or w.gemms != 1:
        return None
    C = hw.array_cols
    if w.n < 2 * C:
        return None
    vector_rate = hw.vector_lanes
    base = round(w.n * vector_rate / (C + vector_rate) / C)
    budget = hw.sram_bytes - MARGIN
    tks = _pow2_tiles(hw.array_rows, math.ceil(w.k / hw.array_rows) * hw.array_rows)
    best: GemvSplit | None = None
    for cols in sorted({max(1, base + d) for d in (-1, 0, 1)}):
        n_vector = min(cols * C, w.n - C)
        wm, wv = part_work(w, w.n - n_vector), part_work(w, n_vector)
        mats = _part_tiles(hw, wm, tks, False)
        vecs = _part_tiles(hw, wv, tks, True)
        pairs = sorted(
            # the array's part also waits, at each output tile, for the vector unit
            # (up to its longest instruction) to move its accumulator out
            (max(dm + dv, cm + tiles * (longest + move), cv + tiles * move), mt, vt)
            for mt, need_m, dm, cm, tiles, move in mats
            for vt, need_v, dv, cv, longest, _ in vecs
            if need_m + need_v <= budget
        )
        for _, mt, vt in pairs[:REPLAYED]:
            cycles = split_cycles(hw, w, n_vector, mt, vt)
            if best is None or cycles < best.cycles:
                best = GemvSplit(w.n - n_vector, n_vector, mt, vt, cycles)
    return best


def _part_tiles(hw: Hardware, w, tks: list[int], on_vector: bool) -> list[tuple]:
    """(tile, SRAM need, load-queue cycles, compute cycles, output tiles, cycles of a
    vector instruction: the accumulator's move, or the vector part's longest, a
    multiply or fused multiply-add over its partial sums) of each tile of one part: the closed form a pair of tiles is ranked by
    (the busier of the shared load queue, the array and the vector unit)."""
    out = []
    for tn in _pow2_tiles(hw.array_cols, math.ceil(w.n / hw.array_cols) * hw.array_cols):
        for tk in tks:
            tile = (1, tn, tk)
            rn, rk = min(tn, w.n), min(tk, w.k)
            steps = math.ceil(w.n / rn) * math.ceil(w.k / rk)
            groups = (w.b_group - 1 + rk - 1) // w.b_group + 1
            dma = steps * (
                timing.dma_cycles(hw, rk * rn * w.b_bits // 8)
                + timing.dma_cycles(hw, groups * rn * w.b_scale_bytes)
                + timing.dma_cycles(hw, rk * ITEMSIZE[w.dtype])
            )
            if on_vector:  # products each step, the partial sums folded per output tile
                h = timing.gemv_kernel_rows(hw, w.n, w.k, tn, tk)
                compute = steps * sum(timing.gemv_product_cycles(hw, rn, rk, h))
                compute += math.ceil(w.n / rn) * sum(timing.gemv_fold_cycles(hw, rn, h))
                vector = timing.vector_cycles(hw, h * rn, "fma")
            else:
                compute = steps * timing.matmul_cycles(hw, w.dtype, 1, rn, rk)
                vector = timing.vector_cycles(hw, rn, "move")
            tiles = math.ceil(w.n / rn)
            out.append((tile, sram_need(hw, w, tile, on_vector), dma, compute, tiles, vector))
    return out
