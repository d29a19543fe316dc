"""The GEMM loop's instructions replayed on the simulator's queues, to price it.

The closed form of hwsim/costmodel.py (the busiest unit, plus one pipeline step of the
other) assumes that DMA and compute overlap as far as double buffering allows. A GEMM
whose steps are short and DMA-heavy (a small convolution: many small patch DMAs
against a short matmul) overlaps less: a step's loads wait until compute is done with
the step two back, the epilogue of a tile waits for the store two tiles back, and each
DMA holds one of the `dma_engines` until its data lands.

Here the loop of backend/gemm.py `emit_gemm` is generated as abstract instructions (a
queue, cycles from hwsim/timing.py, the instructions each waits on, as the Pipeline
tokens of backend/emit.py pair them up) and run with the scheduling rules of
hwsim/simulator.py: in-order load, compute, store and vector queues, one vector unit
the compute and vector queues share, one DRAM channel whose transfers follow each
other (a DMA's issue overlaps the previous transfer), at most `dma_engines` DMAs
between start and landing, the earliest start first and ties to the load queue. The epilogue's operands are loaded per output tile
(`KernelWork.epilogue_loads`). What KernelWork does not say is left out, as in the
closed form: the zero tiles an epilogue's prologue loads, and the on-chip transpose of
an operand whose rows are contiguous in DRAM (a producer that wrote NHWC).
"""

from __future__ import annotations

import math
from typing import Protocol

from . import timing
from .dtypes import ITEMSIZE
from .gemm_steps import gemm_step_cycles, gemv_kernel  # the array's or the vector unit's
from .hardware import Hardware

LOAD, COMPUTE, STORE, VECTOR = 0, 1, 2, 3  # isa.QUEUES order
MAX_INSTRUCTIONS = 4000  # larger loops keep the closed form (see instruction_count)


class QueueProgram:
    """Abstract instructions: queue, cycles (queue occupancy) and the instructions
    whose completion (a DMA's: its landing) each one waits for; `vector_unit`: whether
    it holds the vector unit (which the compute and vector queues share)."""

    def __init__(self) -> None:
        self.queue: list[int] = []
        self.cycles: list[int] = []
        self.deps: list[tuple[int, ...]] = []
        self.vector_unit: list[bool] = []

    def add(
        self, queue: int, cycles: int, deps: tuple[int, ...] = (), vector_unit: bool | None = None
    ) -> int:
        self.queue.append(queue)
        self.cycles.append(cycles)
        self.deps.append(deps)
        self.vector_unit.append(queue == VECTOR if vector_unit is None else vector_unit)
        return len(self.queue) - 1


class _Pipe:
    """backend/emit.py's Pipeline on abstract instructions: generation g of a channel
    waits for the release of generation g - 2; a compute waits for the loads issued
    since the last compute; an output tile's compute for the store `out_slots` back."""

    def __init__(self, prog: QueueProgram, out_slots: int = 2, queue: int = COMPUTE) -> None:
        self.p, self.nout, self.queue = prog, out_slots, queue
        self.gens: dict[str, int] = {}
        self.released: dict[tuple[str, int], int] = {}
        self.pending: list[int] = []
        self.waits: list[int] = []  # loads the next output tile's epilogue waits for
        self.last_compute = -1
        self.stores: list[int] = []

    def load(self, ch: str, cycles: list[int], pend: bool = True) -> tuple[str, int] | None:
        if not cycles:
            return None
        g = self.gens.get(ch, 0)
        self.gens[ch] = g + 1
        before = self.released.get((ch, g - 2))
        for j, c in enumerate(cycles):
            deps = (before,) if j == 0 and before is not None else ()
            i = self.p.add(LOAD, c, deps)
            if pend:
                self.pending.append(i)
            else:
                self.waits.append(i)
        return ch, g

    def load_more(self, cycles: list[int]) -> None:
        """More loads of a generation already issued (backend/emit.py load_more)."""
        for c in cycles:
            self.pending.append(self.p.add(LOAD, c))

    def compute(self, cycles: int, deps: tuple[int, ...] = (), vector_unit: bool = False) -> None:
        unit = vector_unit or self.queue == VECTOR
        self.last_compute = self.p.add(self.queue, cycles, (*self.pending, *deps), unit)
        self.pending = []

    def release(self, gen: tuple[str, int] | None) -> None:
        if gen is not None:
            self.released[gen] = self.last_compute

    def finish(self, compute: int, store: int | None, egen: tuple[str, int] | None = None) -> None:
        """An output tile: its epilogue (after its operands' loads `egen`), then its store
        (None: the tile stays on chip, backend/chain.py)."""
        if store is None:
            self.compute(compute, tuple(self.waits), vector_unit=True)
            self.waits = []
            self.release(egen)
            return
        k = len(self.stores)
        slot = (self.stores[k - self.nout],) if k >= self.nout else ()
        self.compute(compute, (*self.waits, *slot), vector_unit=True)
        self.waits = []
        self.release(egen)
        self.stores.append(self.p.add(STORE, store, (self.last_compute,)))


class RowsTail(Protocol):
    """An output tile's epilogue run on the vector queue, beside the next products
    (a normalization in the epilogue: eqsat/norm_epilogue.py, backend/gemm.py
    OutWriter): `pieces(rows)`, the row pieces the last K step of the kernel's last
    output tile is cut into, each its own matmul whose rows the vector queue takes on
    while the array multiplies the next; `chunks(rows)`, the (vector cycles, store
    cycles) of each chunk a piece of `rows` rows is finished and stored in, after the
    epilogue expression; `param_loads`, the cycles of the loads of the rows it keeps
    resident (issued after the first output tile's operands, waited for by its first
    epilogue instruction); `out_slots`, the output slots it writes in turn. The next
    output tile's first product waits until the expression has read the
    accumulator."""

    param_loads: tuple[int, ...]
    out_slots: int

    def pieces(self, rows: int) -> tuple[int, ...]: ...

    def chunks(self, rows: int) -> list[tuple[int, int]]: ...


def segments(start: int, size: int, run: int) -> list[tuple[int, int]]:
    """(first, count) of the pieces [start, start + size) splits into at multiples of
    `run` (a patch's rows of pixels or kernel rows; a folded operand's runs of rows)."""
    out, p, end = [], start, start + size
    while p < end:
        q = min(end, (p // run + 1) * run)
        out.append((p, q - p))
        p = q
    return out


def _patch_dmas(hw: Hardware, s: int, patch: tuple, r0: int, rn: int, c0: int, cn: int):
    """backend/contract.py PatchLoader: one DMA per (output-row run, kernel-row run)."""
    rows, cols = segments(r0, rn, patch[0]), segments(c0, cn, patch[1])
    return [timing.dma_cycles(hw, r * c * s) for _, r in rows for _, c in cols]


def first_pieces(
    hw: Hardware, dtype: str, rm: int, rn: int, rk: int, a_whole: bool, b_res: bool, gemms: int = 1
) -> int:
    """Into how many K pieces the first K step of a matrix kernel's first output tile is
    cut (backend/gemm.py emit_gemm's `split_first`), so that the array starts on the
    first piece while the rest land: each piece a multiple of the array's rows, its
    operand tiles loaded as a step of its own (a resident A panel in the same pieces,
    unless `a_whole`: its rows are normalized whole on the way in). The count
    minimises the transfer before the first product plus the fill and drain each
    further matmul instruction pays. 1 when B is resident (loaded once, whole)."""
    rows, s = hw.array_rows, ITEMSIZE[dtype]
    if b_res or rk < 2 * rows:
        return 1
    best, best_cycles = 1, math.inf
    for p in range(1, rk // rows + 1):
        if rk % p or (rk // p) % rows:
            continue
        kp = rk // p
        first = gemms * kp * rn * s + (0 if a_whole else rm * kp * s)
        instrs = p * timing.matmul_cycles(hw, dtype, rm, rn, kp) - timing.matmul_cycles(
            hw, dtype, rm, rn, rk
        )
        cycles = first / hw.dram_bytes_per_cycle + gemms * instrs
        if cycles < best_cycles:
            best, best_cycles = p, cycles
    return best


def instruction_count(w, tile: tuple[int, int, int], loads: int) -> int:
    """The instructions gemm_program generates, from the DMA count the closed form
    already has: a compute per k step, a compute and a store per output tile."""
    tm, tn, tk = tile
    out_tiles = w.batch * math.ceil(w.m / tm) * math.ceil(w.n / tn)
    return loads + out_tiles * (2 + math.ceil(w.k / tk))


def gemm_program(
    hw: Hardware,
    w,
    tile: tuple[int, int, int],
    engine: str = "",
    split_first: bool | None = None,
    prog: QueueProgram | None = None,
    tail: RowsTail | None = None,
) -> QueueProgram:
    """The instructions of backend/gemm.py emit_gemm for KernelWork `w` (matmul or conv
    as implicit GEMM) at `tile`, with the compute the closed form prices per output
    tile (the accumulator's move and the epilogue's share of the vector ops).
    `engine`: "" the kernel's own choice of unit for its products (gemm_step_cycles),
    "matrix" the array, "vector" vector-unit GEMV steps on the vector queue (the two
    shares of a split product: hwsim/gemv_split.py). `split_first`: the first K step
    of the first output tile in pieces (first_pieces); by default for a matmul's GEMM
    of plain weights, as backend/contract.py emit_matmul emits it. `tail`: each output
    tile's epilogue on the vector queue (RowsTail), never with GEMV steps. `prog`:
    append to it (a kernel of several GEMM loops, eqsat/chain_plan.py), else a new one.
    A work with `a_onchip` loads no A, one with `out_onchip` stores nothing."""
    tm, tn, tk = min(tile[0], w.m), min(tile[1], w.n), min(tile[2], w.k)
    s = ITEMSIZE[w.dtype]
    s_out = _out_itemsize(w)
    nk, nn = math.ceil(w.k / tk), math.ceil(w.n / tn)
    a_res, b_res = nk == 1, nk == 1 and nn == 1
    outputs = w.batch * w.m * w.n
    prog = QueueProgram() if prog is None else prog
    slots = tail.out_slots if tail is not None else 2
    pipe = _Pipe(prog, slots, VECTOR if engine == "vector" else COMPUTE)
    step = gemm_step_cycles(hw, w, tile)
    # GEMV steps: products into h partial-sum rows, folded at an output tile's last k step
    gemv = engine == "vector" or (not engine and gemv_kernel(hw, w, tile))
    h = timing.gemv_kernel_rows(hw, w.n, w.k, tn, tk) if gemv else 0
    if split_first is None:
        split_first = split_first_step(w) and not engine and not gemv
    if engine == "matrix":
        step = lambda m, n, k: timing.matmul_cycles(hw, w.dtype, m, n, k)  # noqa: E731

    def a_dmas(m0: int, rm: int, k0: int, rk: int) -> list[int]:
        if w.a_onchip:
            return []
        if w.patch:
            return _patch_dmas(hw, s, w.patch, m0, rm, k0, rk)
        return [timing.dma_cycles(hw, rm * rk * s)]

    def b_dmas(k0: int, rk: int, n0: int, rn: int) -> list[int]:
        if w.patch_b:  # loaded pixel-major, then transposed on chip
            return _patch_dmas(hw, s, w.patch_b, n0, rn, k0, rk)
        if w.b_bits:  # its group scales, then the packed bytes through the dequantizer
            groups = (k0 % w.b_group + rk - 1) // w.b_group + 1
            scales = timing.dma_cycles(hw, groups * rn * w.b_scale_bytes)
            return [scales, timing.dma_cycles(hw, rk * rn * w.b_bits // 8)] * w.gemms
        return [timing.dma_cycles(hw, rk * rn * s)] * w.gemms

    def b_turn(rk: int, rn: int) -> int:
        turned = w.patch_b or w.b_transposed  # B tiles turned on chip
        return w.gemms * timing.vector_cycles(hw, rk * rn, "transpose") if turned else 0

    def operand_dmas(m0: int, rm: int, rn: int) -> list[int]:
        out = []
        for j, (on_m, on_n, size) in enumerate(w.epilogue_loads):
            row = (rn if on_n else 1) * size
            run = w.epilogue_runs[j] if j < len(w.epilogue_runs) else 0
            if on_m and run:  # one DMA per run of rows (KernelWork.epilogue_runs)
                out += [timing.dma_cycles(hw, r * row) for _, r in segments(m0, rm, run)]
            else:
                out.append(timing.dma_cycles(hw, (rm if on_m else 1) * row))
        return out

    ops_per_output = round(w.vector_ops / outputs)

    def epilogue(rm: int, rn: int) -> int:
        """The accumulator moved out (a convolution's: transposed) unless vector ops
        read it where it is, then an instruction per op of the epilogue."""
        cycles = 0
        if w.kind == "conv" or not w.vector_ops:
            cycles += timing.vector_cycles(hw, rm * rn, "move")
        if w.vector_ops:
            share = w.vector_ops * rm * rn / outputs
            cycles += math.ceil(share / hw.vector_lanes) + hw.issue_cycles * max(1, ops_per_output)
        if w.channel_axis:  # one instruction per channel of the tile (per-channel requantize)
            cycles += hw.issue_cycles * (rn if w.channel_axis == "n" else rm)
        return cycles

    pieces = 1
    if split_first:
        pieces = first_pieces(hw, w.dtype, tm, tn, tk, a_res and w.a_whole, b_res, w.gemms)
    a_split = pieces > 1 and a_res and not w.a_whole  # the resident panel in pieces too
    params: list[int] | None = None  # a tail's parameter row loads
    acc_free: list[int] = []  # each tile's epilogue instruction that last reads the acc
    products: list[int] = []  # the last K step's matmuls of the current tile
    for bi in range(w.batch):
        bgen: tuple[str, int] | None = None
        b_done = False
        for m0 in range(0, w.m, tm):
            rm = min(tm, w.m - m0)
            parts = None  # the first panel's pieces, each loaded before its product's B
            if a_split and bi == 0 and m0 == 0:
                parts = [a_dmas(m0, rm, k0, rk) for k0, rk in k_steps(w.k, tk, pieces)]
                agen = pipe.load("a", parts[0])
            else:
                agen = pipe.load("a", a_dmas(m0, rm, 0, w.k)) if a_res else None
            if agen is not None and w.a_prologue:  # the panel's program, then it is free
                pipe.compute(dict(w.a_prologue)[rm], vector_unit=True)
                pipe.release(agen)
                agen = None
            for n0 in range(0, w.n, tn):
                rn = min(tn, w.n - n0)
                if b_res and bgen is None and not b_done and m0 == 0:
                    bgen = pipe.load("b", b_dmas(0, w.k, n0, rn))
                    if b_turn(w.k, rn):
                        pipe.compute(b_turn(w.k, rn))
                        pipe.release(bgen)
                        bgen, b_done = None, True
                first = bi == 0 and m0 == 0 and n0 == 0
                last_tile = bi == w.batch - 1 and m0 + tm >= w.m and n0 + tn >= w.n
                rows = tail.pieces(rm) if tail is not None and last_tile else (rm,)
                if engine == "vector" and tail is not None:
                    raise ValueError("a vector-queue epilogue beside vector-queue products")
                steps = k_steps(w.k, tk, pieces if first else 1)
                for j, (k0, rk) in enumerate(steps):
                    if first and parts is not None and j > 0:
                        pipe.load_more(parts[j])
                    dmas = [] if a_res else a_dmas(m0, rm, k0, rk)
                    if not b_res:
                        dmas += b_dmas(k0, rk, n0, rn)
                    kgen = pipe.load("k", dmas)
                    if j == 0:  # the epilogue's operands after what the first product needs
                        egen = pipe.load("e", operand_dmas(m0, rm, rn), pend=False)
                        if tail is not None and params is None:  # loaded once
                            params = [prog.add(LOAD, c) for c in tail.param_loads]
                    turn = 0 if b_res else b_turn(rk, rn)
                    last = k0 + rk >= w.k
                    if engine == "vector":  # each instruction: the array's moves
                        # take the vector unit between them (hwsim/gemv_split.py)
                        each: list[int] = []
                        for _ in range(w.gemms):
                            each += timing.gemv_product_cycles(hw, rn, rk, h)
                            each += timing.gemv_fold_cycles(hw, rn, h) if last else []
                        pipe.compute(turn + each[0])
                        for c in each[1:]:
                            pipe.compute(c)
                    else:  # a tail: the last step in row pieces, each its own matmul
                        fold = sum(timing.gemv_fold_cycles(hw, rn, h)) if gemv and last else 0
                        wait = (acc_free[-1],) if j == 0 and acc_free else ()
                        for p, rp in enumerate(rows if last else (rm,)):
                            cycles = w.gemms * (step(rp, rn, rk) + fold)
                            pipe.compute((turn if p == 0 else 0) + cycles, wait, gemv)
                            wait = ()
                            if tail is not None and last:
                                products.append(pipe.last_compute)
                    pipe.release(kgen)
                if agen is not None and n0 + tn >= w.n:
                    pipe.release(agen)
                if bgen is not None and m0 + tm >= w.m:
                    pipe.release(bgen)
                if tail is None:
                    store = None if w.out_onchip else timing.dma_cycles(hw, rm * rn * s_out)
                    pipe.finish(epilogue(rm, rn), store, egen)
                    continue
                # the tile's epilogue on the vector queue, piece by piece
                done = len(pipe.stores)
                waits = (*pipe.waits, *(params or ()))
                waits += (pipe.stores[done - pipe.nout],) if done >= pipe.nout else ()
                pipe.waits, params = [], []
                for p, (rp, product) in enumerate(zip(rows, products, strict=True)):
                    ins = prog.add(VECTOR, epilogue(rp, rn), (product, *waits))
                    waits = ()
                    if p == len(rows) - 1:
                        acc_free.append(ins)
                        if egen is not None:
                            pipe.released[egen] = ins
                    for cycles, store in tail.chunks(rp):
                        ins = prog.add(VECTOR, cycles)
                        last_store = prog.add(STORE, store, (ins,))
                pipe.stores.append(last_store)
                products = []
    return prog


def k_steps(k: int, tk: int, pieces: int = 1) -> list[tuple[int, int]]:
    """(k0, rk) of a K loop of step tk, its first step cut into `pieces` equal ones."""
    steps = [(k0, min(tk, k - k0)) for k0 in range(0, k, tk)]
    if pieces > 1:
        k0, rk = steps[0]
        kp = rk // pieces
        steps[:1] = [(k0 + j * kp, kp) for j in range(pieces)]
    return steps


def split_first_step(w) -> bool:
    """Whether a kernel of work `w` cuts its first K step (first_pieces): a matmul's
    GEMM of one plain B operand (not a convolution's, a gated or a quantized product)."""
    return w.kind == "matmul" and w.gemms == 1 and not w.b_bits and not w.patch_b


def _out_itemsize(w) -> int:
    outs = w.batch * w.m * w.n
    return max(1, round(w.bytes_out / outs)) if w.bytes_out and outs else ITEMSIZE[w.dtype]


def run_queues(hw: Hardware, prog: QueueProgram, starts: list[float] | None = None) -> float:
    """Cycles from the first instruction's start to the last one's completion, as
    hwsim/simulator.py `_segment` schedules them (`starts`, if given, receives each
    instruction's start)."""
    lists: list[list[int]] = [[], [], [], []]
    for i, q in enumerate(prog.queue):
        lists[q].append(i)
    heads = [0, 0, 0, 0]
    free = [0.0, 0.0, 0.0, 0.0]
    done: list[float | None] = [None] * len(prog.queue)
    channel, inflight, end = 0.0, [], 0.0
    lat, issue, engines = hw.dram_latency_cycles, hw.issue_cycles, hw.dma_engines
    deps, cycles, on_vector = prog.deps, prog.cycles, prog.vector_unit
    vector_free = 0.0  # the vector unit: one instruction at a time, from either queue
    while True:
        best, best_t = -1, math.inf
        for q in (LOAD, COMPUTE, STORE, VECTOR):
            if heads[q] >= len(lists[q]):
                continue
            i = lists[q][heads[q]]
            t = free[q]
            for d in deps[i]:
                at = done[d]
                if at is None:
                    break
                t = max(t, at)
            else:
                if on_vector[i]:
                    t = max(t, vector_free)
                if q in (LOAD, STORE):
                    t = max(t, channel - issue)
                    busy = sorted(x for x in inflight if x > t)
                    if len(busy) >= engines:
                        t = busy[len(busy) - engines]
                if t < best_t:
                    best, best_t = q, t
        if best < 0:
            break
        i = lists[best][heads[best]]
        heads[best] += 1
        if starts is not None:
            starts[i] = best_t
        finish = best_t + cycles[i]
        free[best] = finish
        if on_vector[i]:
            vector_free = finish
        if best in (LOAD, STORE):
            channel = finish
            finish += lat
            inflight = [x for x in inflight if x > best_t] + [finish]
        done[i] = finish
        end = max(end, finish)
    return end
