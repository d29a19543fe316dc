"""Two chained products in one kernel (eqsat/ops/chain.py), planned once for the
backend (backend/chain.py) and the cost model (eqsat/costs.py).

The kernel runs the GEMM loop of the first product (matmul_bias_gelu or _relu) with
its output on chip: each output tile's epilogue writes into an SRAM tile h that holds
the whole intermediate, nothing is stored. Then the GEMM loop of the second product
(matmul_bias, matmul_bias_add, or matmul_bias_add_layernorm at a tile of whole output
rows) whose A operand is h: no A loads. Both loops are in one instruction stream, each
with its own operand slots, so the second loop's first weight panels load while the
first loop still computes, and one kernel launch is paid, not two. A layernorm of a
pre-norm block runs in the first loop's A loader (eqsat/norm_prologue.py), one of a
post-norm block beside the second loop's products on the vector queue, its last
tile in the row pieces eqsat/norm_epilogue.py plans. The price is the two loops
replayed on the simulator's queues one after the other (hwsim/gemm_queues.py), with
those row programs. It is unrunnable when h and both loops' tiles do not fit SRAM
together.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from eqsat.ir.types import TensorType
from eqsat.norm_epilogue import (
    NORM_EPILOGUE,
    NormTail,
    epilogue_sram_bytes,
    replayable,
    rows_cycles,
    tail_plan,
    whole_rows_apply,
)
from eqsat.norm_prologue import NORM_MATMUL, panel_cycles, prologue_sram_bytes
from eqsat.ops import REGISTRY, AttrValue
from eqsat.ops.chain import CHAINS
from eqsat.tiling import SRAM_MARGIN
from hwsim.costmodel import (
    KernelCost,
    KernelWork,
    matmul_tiling_cost,
    pow2_multiples,
    tile_splits,
)
from hwsim.dtypes import ITEMSIZE
from hwsim.gemm_queues import (
    MAX_INSTRUCTIONS,
    QueueProgram,
    gemm_program,
    run_queues,
    split_first_step,
)
from hwsim.hardware import Hardware
from hwsim.timing import OP_PASSES

REPLAYED = 3  # tiles of each loop's search replayed on the queues


@dataclass(frozen=True)
class ChainPlan:
    """The two loops: their works (the first with its output on chip, the second with
    its A on chip), tiles, the chain's parts, h's type and the price."""

    first: KernelWork
    second: KernelWork
    tile1: tuple[int, int, int]
    tile2: tuple[int, int, int]
    parts: Parts
    h: TensorType
    cost: KernelCost
    tail: NormTail | None = None  # a normalizing epilogue's queue plan (its row pieces)


@dataclass(frozen=True)
class Parts:
    """A chain op's pieces: the first product's op and its attributes (with the norm
    of its A panels, `prologue`, or ""), the second product's op (with the norm of its
    output rows, `epilogue`, or ""), and where their operands are among the chain's:
    the first product's (x, w1, b1), the second's after h, each norm's parameters."""

    product1: str
    attrs1: dict
    prologue: str
    product2: str
    epilogue: str
    inputs1: tuple[int, ...]
    inputs2: tuple[int, ...]
    prologue_params: tuple[int, ...]
    epilogue_params: tuple[int, ...]


def chain_parts(op_name: str, attrs: Mapping[str, AttrValue]) -> Parts:
    chain = CHAINS[op_name]
    names = {a.name for a in REGISTRY[chain.first].attrs}
    attrs1 = {k: v for k, v in attrs.items() if k in names}
    product1, prologue = chain.first, ""
    if chain.first in NORM_MATMUL:
        prologue, product1, _ = NORM_MATMUL[chain.first]
        known = {a.name for a in REGISTRY[product1].attrs}
        attrs1 = {k: v for k, v in attrs1.items() if k in known}
    product2, epilogue, count = chain.second, "", len(chain.second_inputs) + 1
    if chain.second in NORM_EPILOGUE:
        epilogue, product2, count = NORM_EPILOGUE[chain.second]
    return Parts(
        product1,
        attrs1,
        prologue,
        product2,
        epilogue,
        chain.first_inputs[:3],
        chain.second_inputs[: count - 1],
        chain.first_inputs[3:],
        chain.second_inputs[count - 1 :],
    )


def _works(op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs, kernel_work):
    p = chain_parts(op_name, attrs)
    ins1 = [in_types[j] for j in p.inputs1]
    h = REGISTRY[p.product1].type_of(ins1, REGISTRY[p.product1].bind_attrs(p.attrs1))
    w1 = kernel_work(p.product1, ins1, h, p.attrs1)
    second_in = [h, *(in_types[j] for j in p.inputs2)]
    w2 = kernel_work(p.product2, second_in, out, {})
    if w1 is None or w2 is None or w1.kind != "matmul" or w2.kind != "matmul":
        return None
    params1 = sum(in_types[j].nbytes for j in p.prologue_params)
    params2 = sum(in_types[j].nbytes for j in p.epilogue_params)
    passes = _epilogue_passes(p.product1, p.attrs1)
    w1 = replace(
        w1,
        out_onchip=True,
        bytes_out=0,
        vector_ops=passes * h.numel,
        bytes_in=w1.bytes_in + params1,
        a_whole=bool(p.prologue),
    )
    w2 = replace(w2, a_onchip=True, a_whole=True, bytes_in=w2.bytes_in - h.nbytes + params2)
    return w1, w2, h, second_in, p


def _epilogue_passes(first: str, attrs: Mapping[str, AttrValue]) -> int:
    """Lane passes per element of the first product's epilogue (bias, activation) as
    the backend's tile expression runs it (backend/ewise_ops.py: gelu's exact form is
    gelu_erf), which KernelWork.vector_ops counts: not the ops' FLOPs."""
    op = REGISTRY[first]
    exact = op.bind_attrs(dict(attrs)).get("approximate") == "none"
    names = {"add": "add", "relu": "relu", "gelu": "gelu_erf" if exact else "gelu"}
    total = 0

    def walk(e) -> None:
        nonlocal total
        if isinstance(e, str) or e.op == "matmul":
            return
        total += OP_PASSES[names[e.op]]
        for a in e.args:
            walk(a)

    walk(op.composition)
    return total


def loop_sram_bytes(w: KernelWork, tile, out_slots: int, extra_per_output: int) -> int:
    """SRAM one GEMM loop allocates at `tile` (backend/gemm.py emit_gemm): A slots
    unless A is on chip, B slots, `out_slots` output slots and `extra_per_output`
    bytes per output element (epilogue operands), each a 64-byte aligned tile."""
    tm, tn, tk = min(tile[0], w.m), min(tile[1], w.n), min(tile[2], w.k)
    s = ITEMSIZE[w.dtype]
    a = 0 if w.a_onchip else 2 * tm * tk * s
    b = 2 * tk * tn * s
    return a + b + (out_slots * s + extra_per_output) * tm * tn + 64 * 8


def _candidates(hw: Hardware, w: KernelWork, whole_n: bool, fits) -> list[tuple[int, int, int]]:
    return [
        (tm, tn, tk)
        for tm in pow2_multiples(hw.array_rows, w.m)
        for tn in ([w.n] if whole_n else pow2_multiples(hw.array_cols, w.n))
        if 4 * tm * tn <= hw.acc_bytes // 2
        for tk in pow2_multiples(hw.array_rows, w.k)
        if fits((tm, tn, tk))
    ]


def _best(hw: Hardware, w: KernelWork, tiles) -> tuple[int, int, int] | None:
    closed = sorted(
        (matmul_tiling_cost(hw, w, t, replay=False) for t in tiles),
        key=lambda c: (c.cycles, c.dram_bytes),
    )
    if not closed:
        return None
    costs = [matmul_tiling_cost(hw, w, c.tile) for c in closed[:REPLAYED]]  # type: ignore[arg-type]
    return min(costs, key=lambda c: (c.cycles, c.dram_bytes)).tile


def epilogue_bytes(types: Sequence[TensorType], out: TensorType) -> int:
    """SRAM bytes per output element of an epilogue's operands of the output's size
    (a residual: two slots), as eqsat/costs.py _epilogue_bytes counts them."""
    return sum(2 * t.dtype.itemsize for t in types[2:] if t.numel == out.numel)


def h_bytes(h: TensorType) -> int:
    return -(-h.numel * 4 // 64) * 64  # f32: the fused body computes in f32


@functools.lru_cache(maxsize=1 << 12)
def _plan(hw: Hardware, op_name: str, in_types: tuple, out: TensorType, attrs: tuple, work_of):
    found = _works(op_name, in_types, out, dict(attrs), work_of)
    if found is None:
        return None
    w1, w2, h, second_in, parts = found
    x, wa, wb = (in_types[j] for j in (*parts.inputs1[:2], parts.inputs2[0]))
    kind = parts.epilogue
    if kind and not whole_rows_apply(second_in, out):
        return None
    if wa.rank != 2 or wb.rank != 2:
        return None  # batched weights: h would not be one matrix of rows
    if any(t.dtype.value != "f32" for t in (x, wa, wb)):
        return None  # h is computed in f32: the second product's operands must be f32
    dtype = out.dtype.value
    epi1 = epilogue_bytes([in_types[j] for j in parts.inputs1], h)
    epi2 = epilogue_bytes(second_in, out)
    budget = hw.sram_bytes - h_bytes(h) - SRAM_MARGIN
    if parts.prologue:  # the row program of each A panel (eqsat/norm_prologue.py)
        tms = pow2_multiples(hw.array_rows, w1.m)
        panels = {r for tm in tms for r, _ in tile_splits(w1.m, tm)}
        w1 = replace(
            w1,
            a_prologue=tuple(
                (r, panel_cycles(hw, parts.prologue, r, w1.k, x.dtype.value))
                for r in sorted(panels)
            ),
        )

    def need1(tile) -> int:
        pro = parts.prologue
        extra = prologue_sram_bytes(tile[0], w1.k, x.dtype.value, pro) if pro else 0
        return loop_sram_bytes(w1, tile, 0, epi1) + extra

    def need2(tile) -> int:
        extra = epilogue_sram_bytes(tile[0], w2.n, dtype, kind) if kind else 0
        return loop_sram_bytes(w2, tile, 2, epi2) + extra

    smallest = min(
        (need2(t) for t in _candidates(hw, w2, bool(kind), lambda t: True)), default=None
    )
    if smallest is None or budget <= 0:
        return None
    tiles1 = _candidates(hw, w1, False, lambda t: need1(t) + smallest <= budget)
    if parts.prologue:  # the rows are normalized whole: one K step
        tiles1 = [t for t in tiles1 if t[2] >= w1.k]
    tile1 = _best(hw, w1, tiles1)
    if tile1 is None:
        return None
    left = budget - need1(tile1)
    tile2 = _best(hw, w2, _candidates(hw, w2, bool(kind), lambda t: need2(t) <= left))
    if tile2 is None:
        return None
    c1, c2 = (
        matmul_tiling_cost(hw, w1, tile1, replay=False),
        matmul_tiling_cost(hw, w2, tile2, replay=False),
    )
    tail = None
    if kind:  # each output tile's rows normalized on the vector queue (norm_epilogue.py)
        sizes = tuple(in_types[j].dtype.itemsize for j in parts.epilogue_params)
        tail = NormTail(hw, kind, w2.n, dtype, sizes, 2)
        tail = tail_plan(hw, w2, tile2, tail) if replayable(w2, tile2) else None
    rows, saved = rows_cycles(hw, kind, w2.m, w2.batch, tile2[0], w2.n, dtype) if kind else (0, 0)
    cycles = _replayed(hw, w1, tile1, w2, tile2, tail) if not kind or tail else None
    if cycles is None:  # too many instructions to replay: the closed forms, one launch,
        cycles = c1.cycles + c2.cycles - hw.launch_cycles + rows - saved  # rows after them
    compute, vector = c1.compute_cycles + c2.compute_cycles, c1.vector_cycles + c2.vector_cycles
    if parts.prologue:
        panels = w1.batch * sum(
            c * dict(w1.a_prologue)[r] for r, c in tile_splits(w1.m, min(w1.m, tile1[0]))
        )
        compute, vector = compute + panels, vector + panels
    compute, vector = compute + rows, vector + rows
    cost = KernelCost(
        cycles=cycles,
        compute_cycles=compute,
        matrix_cycles=c1.matrix_cycles + c2.matrix_cycles,
        vector_cycles=vector,
        dma_cycles=c1.dma_cycles + c2.dma_cycles,
        dram_bytes=c1.dram_bytes + c2.dram_bytes,
        tile=tile2,
    )
    return ChainPlan(w1, w2, tile1, tile2, parts, h, cost, tail)


def _replayed(hw: Hardware, w1: KernelWork, t1, w2: KernelWork, t2, tail=None) -> int | None:
    """Both loops in one instruction stream, replayed on the queues."""
    steps = sum(
        w.batch * math.ceil(w.m / t[0]) * math.ceil(w.n / t[1]) * (2 + math.ceil(w.k / t[2]))
        for w, t in ((w1, t1), (w2, t2))
    )
    if 3 * steps > MAX_INSTRUCTIONS:
        return None
    prog = QueueProgram()
    gemm_program(hw, w1, t1, split_first=split_first_step(w1), prog=prog)
    gemm_program(hw, w2, t2, split_first=split_first_step(w2), prog=prog, tail=tail)
    return math.ceil(hw.launch_cycles + run_queues(hw, prog))


def chain_plan(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    work_of: Callable,
) -> ChainPlan | None:
    """The kernel's plan, or None when it cannot run on `hw` (h and the tiles do not
    fit SRAM, weights with a batch, a norm whose rows the product does not give).
    `work_of`: eqsat/costs.py kernel_work (passed in: costs prices chains with this)."""
    return _plan(hw, op_name, tuple(in_types), out, tuple(sorted(attrs.items())), work_of)
