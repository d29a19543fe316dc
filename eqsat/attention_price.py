"""What the attention kernel costs, and which tile shape the backend runs.

Two prices of one plan (eqsat/attention_plan.py): the closed form (`attention_cycles`:
the tile program's instructions summed per queue, the busier queue over the whole
loop plus what waits at its ends) ranks every fitting tile shape cheaply; the replay
(eqsat/attention_queues.py: the emitted instructions run on the simulator's queues)
prices the few best exactly, and the cheapest of those is the plan. The closed form
assumes the steady state of a long loop: that DMA overlaps compute and the softmax
overlaps the products. A loop of a step or two (all heads of a short sequence in one
block-diagonal step) overlaps neither, and only the replay sees it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from eqsat.ir.types import TensorType
from hwsim import timing
from hwsim.costmodel import KernelCost, LoopWork, loop_cycles, step_cycles, tile_splits
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware

from .attention_plan import (
    MASK_NONE,
    MASK_ROW,
    AttnPlan,
    AttnShape,
    attention_shape,
    candidates,
    key_blocks,
    op_cycles,
    op_gemv,
    pipelined,
    step_phases,
    tile_dims,
    zero_tiles,
)
from .attention_queues import replayed_cycles

SHORTLIST = 4  # plans, cheapest by the closed form, that are replayed


def key_block_classes(t: int, tk: int) -> list[tuple[int, bool, bool, int]]:
    """`key_blocks` grouped: (keys, first, last, how many), at most three classes."""
    counts: dict[tuple[int, bool, bool], int] = {}
    n = -(-t // tk)
    if n <= 3:
        for blk in key_blocks(t, tk):
            counts[blk] = counts.get(blk, 0) + 1
    else:
        counts = {
            (tk, True, False): 1,
            (tk, False, False): n - 2,
            (t - (n - 1) * tk, False, True): 1,
        }
    return [(*k, c) for k, c in counts.items()]


@functools.lru_cache(maxsize=1 << 14)
def phase_cycles(
    hw: Hardware,
    s: AttnShape,
    rn: int,
    kn: int,
    first: bool,
    last: bool,
    heads: int,
    out_t: bool = False,
) -> tuple[tuple[int, ...], bool]:
    """Cycles of each phase (PHASES) of a step of rn queries and kn keys, and whether
    its matmuls run on the vector unit (op_gemv: one query row)."""
    dims = tile_dims(s, rn, kn, heads, out_t)
    phases = step_phases(s, first, last, heads, out_t)
    cycles = tuple(sum(op_cycles(hw, s, op, dims, rn, kn, out_t) for op in ph) for ph in phases)
    return cycles, op_gemv(hw, s, phases[1][0], dims)


def pipeline_stalls(hw: Hardware, s: AttnShape, plan: AttnPlan) -> int:
    """Cycles the compute queue waits for a softmax: step n's runs between its first
    matmul and its second, while the compute queue has only the second matmul of step
    n - 1 and the first of step n + 1 to do (key blocks of one stream, the streams one
    after another). Long streams: the three blocks at either end and one in the middle
    stand for the rest."""
    nk, total = -(-s.t // plan.tk), 0
    for rn, qcount in tile_splits(s.s, plan.rq):
        streams = s.batch // plan.heads * qcount

        def phases(i: int, rn: int = rn) -> tuple[int, ...]:
            i %= nk
            kn = min(plan.tk, s.t - i * plan.tk)
            return phase_cycles(hw, s, rn, kn, i == 0, i == nk - 1, plan.heads, plan.out_t)[0]

        ends = sorted({*range(min(nk, 3)), *range(max(0, nk - 3), nk)})
        weights = {i: 1 for i in ends}
        if nk > 6:
            weights[3] = nk - 6
        for i, w in weights.items():
            stall = phases(i)[2] - phases(i - 1)[3] - phases(i + 1)[1]
            total += streams * w * max(0, stall)
    return total


def step_ends(s: AttnShape, plan: AttnPlan) -> list[tuple[int, int, bool, bool]]:
    """(rn, kn, first, last) of the first two and the last two steps in the order the
    backend runs them (head groups, query blocks, key blocks); fewer when there are
    fewer steps."""
    nq, nk = -(-s.s // plan.rq), -(-s.t // plan.tk)
    n = s.batch // plan.heads * nq * nk

    def step(i: int) -> tuple[int, int, bool, bool]:
        r, b = i // nk % nq, i % nk
        kn = min(plan.tk, s.t - b * plan.tk)
        return min(plan.rq, s.s - r * plan.rq), kn, b == 0, b == nk - 1

    return [step(i) for i in sorted({*range(min(n, 2)), *range(max(0, n - 2), n)})]


def attention_loop(hw: Hardware, s: AttnShape, plan: AttnPlan) -> tuple[LoopWork, int, int, int]:
    """The kernel's instructions summed (backend/attention.py emits them): per query
    block of a group of heads one q load and one store per head, per key block the k,
    v (and mask) loads of each head and the tile program. The compute time is the
    pipeline's (module doc): the busier of the two queues over the whole loop, plus
    what it waits for at the ends (the compute queue: the first keys' transpose, the
    last softmax where it outlasts the previous step's second matmul, the last division;
    the vector queue: the first scores, the last second matmul). Where the matmuls run
    on the vector unit (one query row) nothing overlaps: the sum. Returns the loop, its
    matrix-unit and vector-unit cycles, and the queue cycles of the DMAs at its ends
    (the zero tiles, keys and queries the first step waits for; the last store)."""
    isz, g = ITEMSIZE[s.dtype], plan.heads
    zeros = len(zero_tiles(s, plan))
    loads, load_cycles = zeros, zeros * timing.dma_cycles(hw, isz)
    transfer, dram = zeros * timing.dma_transfer_cycles(hw, isz), zeros * isz
    steps = matrix = vector = store_cycles = stores = 0
    busy = [0, 0]  # compute queue, vector queue
    floor = 0.0
    blocks = key_block_classes(s.t, plan.tk)
    for rn, qcount in tile_splits(s.s, plan.rq):
        qblocks = s.batch // g * qcount
        q_bytes, o_bytes = rn * s.d * isz, rn * s.dv * isz
        sq, sx = g * timing.dma_cycles(hw, o_bytes), g * timing.dma_transfer_cycles(hw, o_bytes)
        stores += g * qblocks
        store_cycles += qblocks * sq
        for kn, first, last, kcount in blocks:
            count = qblocks * kcount
            blk = [kn * s.d * isz, kn * s.dv * isz]
            if s.mask != MASK_NONE:
                blk.append((1 if s.mask == MASK_ROW else rn) * kn * isz)
            if first:
                blk.append(q_bytes)
            blk *= g
            lq = sum(timing.dma_cycles(hw, b) for b in blk)
            lx = sum(timing.dma_transfer_cycles(hw, b) for b in blk)
            ph, on_vector = phase_cycles(hw, s, rn, kn, first, last, g, plan.out_t)
            mm, vec = ph[1] + ph[3], ph[0] + ph[2] + ph[4]
            c = mm + vec if on_vector else max(mm, vec)
            floor += count * step_cycles(
                hw, c, len(blk), lq, lx, sq if last else 0, sx if last else 0
            )
            steps += count
            busy[0] += count * mm
            busy[1] += count * vec
            matrix += 0 if on_vector else count * mm
            vector += count * (vec + (mm if on_vector else 0))
            loads += count * len(blk)
            load_cycles += count * lq
            transfer += count * (lx + (sx if last else 0))
            dram += count * (sum(blk) + (g * o_bytes if last else 0))
    rn0, rn1 = min(plan.rq, s.s), s.s - (-(-s.s // plan.rq) - 1) * plan.rq
    first = [min(plan.tk, s.t) * s.d * isz, rn0 * s.d * isz] * g
    edge_dma = zeros * timing.dma_cycles(hw, isz) + sum(timing.dma_cycles(hw, b) for b in first)
    edge_dma += g * timing.dma_cycles(hw, rn1 * s.dv * isz)
    if not pipelined(hw, s, plan):
        compute = busy[0] + busy[1]
    else:
        ends = [phase_cycles(hw, s, *e, g, plan.out_t)[0] for e in step_ends(s, plan)]
        head, second, prev, tail = ends[0], ends[1:2], ends[-2:-1], ends[-1]
        pre1 = second[0][0] if second and steps > 1 else 0
        prev_mm2, prev_post = (prev[0][3], prev[0][4]) if prev and steps > 1 else (0, 0)
        on_compute = head[0] + busy[0] + max(0, tail[2] - prev_mm2) + tail[4]
        on_compute += pipeline_stalls(hw, s, plan)
        on_vq = busy[1] + max(0, head[1] - pre1) + max(0, tail[3] - prev_post)
        compute = max(on_compute, on_vq)
    work = LoopWork(
        steps,
        compute,
        loads,
        load_cycles,
        stores,
        store_cycles,
        transfer,
        dram,
        1,
        math.ceil(floor),
    )
    return work, matrix, vector, edge_dma


def attention_cycles(hw: Hardware, s: AttnShape, plan: AttnPlan) -> KernelCost:
    """The kernel's price: the launch; the loads the first step waits for and their
    latency; the pipeline (compute, or the DMA where that is the busier); the last
    store and its latency."""
    work, matrix, vector, edge_dma = attention_loop(hw, s, plan)
    cost = loop_cycles(hw, work)
    body = max(work.compute, cost.dma_cycles, work.floor)
    cycles = hw.launch_cycles + body + edge_dma + 2 * hw.dram_latency_cycles
    return replace(cost, cycles=cycles, matrix_cycles=matrix, vector_cycles=vector)


def attention_price(hw: Hardware, s: AttnShape, plan: AttnPlan) -> KernelCost:
    """The closed form's account of the kernel (its DMA, matrix and vector work) with
    the cycles of the replay: what the simulator will count."""
    return replace(attention_cycles(hw, s, plan), cycles=replayed_cycles(hw, s, plan))


@functools.lru_cache(maxsize=1 << 12)
def attention_plan(hw: Hardware, s: AttnShape) -> AttnPlan | None:
    """The cheapest fitting tile shape, or None if none fits: the SHORTLIST cheapest
    by the closed form, replayed, the fastest of them."""
    ranked = sorted(candidates(hw, s), key=lambda p: attention_cycles(hw, s, p).cycles)
    if not ranked:
        return None
    return min(ranked[:SHORTLIST], key=lambda p: replayed_cycles(hw, s, p))


def attention_cost(
    hw: Hardware,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, object],
    unrunnable: int,
    transpose_k: bool = True,
) -> KernelCost:
    """The attention kernel priced as the simulator runs it (attention_price), or
    `unrunnable` cycles (infeasible) when no tile fits. kt is priced as the exporters
    write it unless `transpose_k` is false: a transposed view of k, one vector
    transpose per key block (eqsat/program_cost.py knows how it is stored)."""
    scale = float(attrs.get("scale", 1.0))  # type: ignore[arg-type]
    s = attention_shape(in_types, out, scale, transpose_k)
    plan = attention_plan(hw, s)
    if plan is None:
        nbytes = sum(t.nbytes for t in in_types) + out.nbytes
        return KernelCost(unrunnable, 0, 0, 0, 0, nbytes, feasible=False)
    return attention_price(hw, s, plan)
