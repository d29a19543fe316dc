"""Two chained products in one kernel (eqsat/ops/chain.py), planned once for the
backend (backend/chain.py) and the cost model (eqsat/costs.py).

The kernel runs the GEMM loop of the first product (matmul_bias_gelu or _relu) with
its output on chip: each output tile's epilogue writes into an SRAM tile h that holds
the whole intermediate, nothing is stored. Then the GEMM loop of the second product
(matmul_bias, matmul_bias_add, or matmul_bias_add_layernorm at a tile of whole output
rows) whose A operand is h: no A loads. Both loops are in one instruction stream, each
with its own operand slots, so the second loop's first weight panels load while the
first loop still computes, and one kernel launch is paid, not two. The price is the
two loops replayed on the simulator's queues one after the other
(hwsim/gemm_queues.py), plus the row program of a normalizing epilogue as
eqsat/norm_epilogue.py prices it. It is unrunnable when h and both loops' tiles do
not fit SRAM together.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from eqsat.ir.types import TensorType
from eqsat.norm_epilogue import NORM_EPILOGUE, epilogue_sram_bytes, rows_cycles, whole_rows_apply
from eqsat.ops import REGISTRY, AttrValue
from eqsat.ops.chain import CHAINS
from eqsat.tiling import SRAM_MARGIN
from hwsim.costmodel import KernelCost, KernelWork, matmul_tiling_cost, pow2_multiples
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
    its A on chip), tiles, output slots of the second, the norm of its epilogue (or
    ""), the rows of h and the price."""

    first: KernelWork
    second: KernelWork
    tile1: tuple[int, int, int]
    tile2: tuple[int, int, int]
    norm: str
    h: TensorType
    cost: KernelCost


def chain_parts(op_name: str, attrs: Mapping[str, AttrValue]):
    """(first inner op and its attributes, second inner op, its product's op and the
    number of that op's operands, the norm kind or "")."""
    first, second = CHAINS[op_name]
    names = {a.name for a in REGISTRY[first].attrs}
    first_attrs = {k: v for k, v in attrs.items() if k in names}
    if second in NORM_EPILOGUE:
        kind, inner, count = NORM_EPILOGUE[second]
        return first, first_attrs, second, inner, count, kind
    return first, first_attrs, second, second, len(REGISTRY[second].operands), ""


def _works(op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs):
    from eqsat.costs import kernel_work

    first, first_attrs, _, inner, count, kind = chain_parts(op_name, attrs)
    h = REGISTRY[first].type_of(list(in_types[:3]), REGISTRY[first].bind_attrs(first_attrs))
    w1 = kernel_work(first, in_types[:3], h, first_attrs)
    second_in = [h, *in_types[3 : 3 + count - 1]]
    w2 = kernel_work(inner, second_in, out, {})
    if w1 is None or w2 is None or w1.kind != "matmul" or w2.kind != "matmul":
        return None
    params = sum(t.nbytes for t in in_types[3 + count - 1 :])
    passes = _epilogue_passes(first, first_attrs)
    w1 = replace(w1, out_onchip=True, bytes_out=0, vector_ops=passes * h.numel)
    w2 = replace(w2, a_onchip=True, a_whole=True, bytes_in=w2.bytes_in - h.nbytes + params)
    return w1, w2, h, second_in, kind


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
def _plan(hw: Hardware, op_name: str, in_types: tuple, out: TensorType, attrs: tuple):
    found = _works(op_name, in_types, out, dict(attrs))
    if found is None:
        return None
    w1, w2, h, second_in, kind = found
    if kind and not whole_rows_apply(second_in, out):
        return None
    if in_types[1].rank != 2 or in_types[3].rank != 2:
        return None  # batched weights: h would not be one matrix of rows
    if any(in_types[j].dtype.value != "f32" for j in (0, 1, 3)):
        return None  # h is computed in f32: the second product's operands must be f32
    dtype = out.dtype.value
    epi1 = epilogue_bytes(in_types[:3], h)
    epi2 = epilogue_bytes(second_in[: len(second_in)], out)
    budget = hw.sram_bytes - h_bytes(h) - SRAM_MARGIN

    def extra2(tile) -> int:
        return epilogue_sram_bytes(tile[0], w2.n, dtype, kind) if kind else 0

    def need2(tile) -> int:
        return loop_sram_bytes(w2, tile, 2, epi2) + extra2(tile)

    smallest = min(
        (need2(t) for t in _candidates(hw, w2, bool(kind), lambda t: True)), default=None
    )
    if smallest is None or budget <= 0:
        return None
    tile1 = _best(
        hw,
        w1,
        _candidates(hw, w1, False, lambda t: loop_sram_bytes(w1, t, 0, epi1) + smallest <= budget),
    )
    if tile1 is None:
        return None
    left = budget - loop_sram_bytes(w1, tile1, 0, epi1)
    tile2 = _best(hw, w2, _candidates(hw, w2, bool(kind), lambda t: need2(t) <= left))
    if tile2 is None:
        return None
    c1, c2 = (
        matmul_tiling_cost(hw, w1, tile1, replay=False),
        matmul_tiling_cost(hw, w2, tile2, replay=False),
    )
    cycles = _replayed(hw, w1, tile1, w2, tile2)
    if cycles is None:  # too many instructions to replay: the closed forms, one launch
        cycles = c1.cycles + c2.cycles - hw.launch_cycles
    compute, vector = c1.compute_cycles + c2.compute_cycles, c1.vector_cycles + c2.vector_cycles
    if kind:
        rows, saved = rows_cycles(hw, kind, w2.m, w2.batch, tile2[0], w2.n, dtype)
        cycles, compute, vector = cycles + rows - saved, compute + rows, vector + rows
    cost = KernelCost(
        cycles=cycles,
        compute_cycles=compute,
        matrix_cycles=c1.matrix_cycles + c2.matrix_cycles,
        vector_cycles=vector,
        dma_cycles=c1.dma_cycles + c2.dma_cycles,
        dram_bytes=c1.dram_bytes + c2.dram_bytes,
        tile=tile2,
    )
    return ChainPlan(w1, w2, tile1, tile2, kind, h, cost)


def _replayed(hw: Hardware, w1: KernelWork, t1, w2: KernelWork, t2) -> int | None:
    """Both loops in one instruction stream, replayed on the queues."""
    steps = sum(
        w.batch * math.ceil(w.m / t[0]) * math.ceil(w.n / t[1]) * (2 + math.ceil(w.k / t[2]))
        for w, t in ((w1, t1), (w2, t2))
    )
    if 3 * steps > MAX_INSTRUCTIONS:
        return None
    prog = QueueProgram()
    gemm_program(hw, w1, t1, split_first=split_first_step(w1), prog=prog)
    gemm_program(hw, w2, t2, split_first=split_first_step(w2), prog=prog)
    return math.ceil(hw.launch_cycles + run_queues(hw, prog))


def chain_plan(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> ChainPlan | None:
    """The kernel's plan, or None when it cannot run on `hw` (h and the tiles do not
    fit SRAM, weights with a batch, a norm whose rows the product does not give)."""
    return _plan(hw, op_name, tuple(in_types), out, tuple(sorted(attrs.items())))
