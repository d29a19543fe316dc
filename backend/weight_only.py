"""Lowering of weight-only quantized products (eqsat/ops/weight_only.py).

`matmul_wq(x, wq, s)` is the GEMM loop of backend/gemm.py with x's rows (all leading
dims flattened) as A and a B loader that brings each weight tile through the load-path
dequantizer: an ordinary DMA of the tile's group scales (f32 or bf16, one row per group
the tile's rows touch), then one hwsim `loaddq` that moves the packed bytes from DRAM and
writes weight * scale into the B slot in x's dtype (f32 or bf16). The matrix unit (or
the vector unit's GEMV for one f32 row, as for any matmul) then runs unchanged. A
product of one row whose weights arrive faster than the array takes them (int4 on
edge) splits its columns between the array and the vector unit, the two running side
by side on the compute and vector queues (eqsat/wq_work.py wq_split).

`wq_pack` / `wq_scales` of weights known at compile time (a quantized program's params)
fold into constant buffers; `wobserve` is an annotation, x itself.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from eqsat.costs import kernel_work
from eqsat.interpreter import narrow
from eqsat.ir.graph import Node
from eqsat.wq_work import wq_split
from hwsim.dtypes import ITEMSIZE
from hwsim.gemv_split import GemvSplit, interleave, queue_program
from hwsim.isa import Binary, Fma, Instr, LoadDq, Move, Tile

from .contract import acc_dtype, matrix_mode
from .emit import KernelBuilder, sub
from .errors import BackendError
from .gemm import Gemm, OutWriter, StridedLoader, emit_gemm
from .gemm_kernel import choose_tile, gemv_work
from .space import Operand, Space, dram
from .views import Value, View


class DequantLoader:
    """B tiles of quantized weights: packed i8 storage [K * bits / 8, N] (row-major) and
    group scales [K / group, N] (row-major, f32 or bf16: `sdtype`), dequantized into
    `dtype` slots."""

    def __init__(
        self,
        wq: Operand,
        scales: Operand,
        n: int,
        bits: int,
        group: int,
        dtype: str,
        fmt: str,
        sdtype: str = "f32",
    ):
        self.wq, self.scales, self.n = wq, scales, n
        self.bits, self.group, self.dtype, self.fmt = bits, group, dtype, fmt
        self.sdtype = sdtype

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        self.slots = kb.alloc2(rows, cols, self.dtype)
        groups = (self.group - 1 + rows - 1) // self.group + 1  # most a tile can touch
        self.scale_slots = kb.alloc2(groups, cols, self.sdtype)

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        g0, phase = divmod(r0, self.group)
        groups = (phase + rn - 1) // self.group + 1
        scales = sub(self.scale_slots[slot], groups, cn)
        s_ref = dram(self.scales, self.scales.offset + g0 * self.n + c0, groups, cn, self.n)
        packed = dram(self.wq, self.wq.offset + r0 * self.bits // 8 * self.n + c0,
                      rn * self.bits // 8, cn, self.n)  # fmt: skip
        dst = sub(self.slots[slot], rn, cn)
        load = LoadDq(dst=dst, src=packed, scales=scales, bits=self.bits, group=self.group,
                      phase=phase, fmt=self.fmt)  # fmt: skip
        return [(scales, s_ref), load]

    def ready(self, slot: int, rn: int, cn: int) -> tuple[list, Tile]:
        return [], sub(self.slots[slot], rn, cn)


def _row_major(c, v: View, label: str, i: int) -> View:
    return v if v.is_row_major() else c.materialize(v, label, i)


def lower_matmul_wq(c, i: int, node: Node) -> Value:
    bits, group = int(node.attr("bits")), int(node.attr("group"))  # type: ignore[arg-type]
    fmt = str(node.attr("fmt"))
    types = [c.graph.nodes[j].type for j in node.inputs]
    x, wq, s = (
        c.as_view(c.value(j), t.shape, c.label(i)) for j, t in zip(node.inputs, types, strict=True)
    )
    k, n = types[0].shape[-1], types[2].shape[-1]
    m = math.prod(node.type.shape[:-1])
    a = x.reshape((m, k))
    if a is None or matrix_mode(a) is None:
        a = _row_major(c, x, c.label(i), i).reshape((m, k))
    wq = _row_major(c, wq, c.label(i) + ".wq", i)
    s = _row_major(c, s, c.label(i) + ".scales", i)
    out = c.alloc_value(i, node, keep_last=True)
    out2 = out.reshape((m, n)) if out.is_row_major() else None
    if out2 is None or a is None:
        raise BackendError(f"matmul_wq {c.label(i)}: x and its result must be row-major")
    work = kernel_work(node.op, types, node.type, node.attr_dict)
    dt = a.dtype
    plan = wq_split(c.hw, work)
    if plan is not None:
        weights = DequantLoader(
            Operand.of(wq, wq.shape), Operand.of(s, s.shape), n, bits, group, dt, fmt, s.dtype
        )
        x_op, out_op = Operand.of(a, (m, k)), Operand(out2.buf, out2.offset, out2.strides)
        emit_split = functools.partial(
            _emit_split, plan=plan, x=x_op, x_mode=matrix_mode(a), k=k, weights=weights, out=out_op
        )
        c.add_kernel(c.kernel_name(i), i, "main", emit_split, [a, wq, s], [out])
        return out
    g = Gemm((), m, n, k, dt, acc_dtype(dt))
    size = ITEMSIZE[dt]
    sizes = (size, size + 1, ITEMSIZE[out2.dtype], 0)  # + 1: the scale slots (cost model's b_bits)
    tile, slots = choose_tile(c, work, g, sizes, matrix_mode(a) + "n", None)  # type: ignore[operator]
    gemv = gemv_work(work)
    zero = c.zero

    def emit(kb: KernelBuilder) -> None:
        a_ld = StridedLoader(Operand.of(a, (m, k)), 0, 1, matrix_mode(a))  # type: ignore[arg-type]
        b_ld = DequantLoader(
            Operand.of(wq, wq.shape), Operand.of(s, s.shape), n, bits, group, dt, fmt, s.dtype
        )
        space = Space((m, n), 0, 1)
        writer = OutWriter(
            Operand(out2.buf, out2.offset, out2.strides), space, None, [None], g.acc_dtype,
            out_slots=slots,
        )  # fmt: skip
        emit_gemm(kb, g, tile, a_ld, b_ld, writer, zero(), gemv=gemv)

    c.add_kernel(c.kernel_name(i), i, "main", emit, [a, wq, s], [out])
    return out


def _emit_split(
    kb: KernelBuilder,
    *,
    plan: GemvSplit,
    x: Operand,
    x_mode: str,
    k: int,
    weights: DequantLoader,
    out: Operand,
) -> None:
    """One-row products split by columns (hwsim/gemv_split.py): the first n_matrix on
    the array, the rest as GEMV steps on the vector queue, each part its own GEMM loop
    (own slots and tokens) over its columns of the weights and the output, the two
    merged in the order the plan was priced in (gemv_split.interleave)."""
    w, dt = weights, weights.dtype
    acc = acc_dtype(dt)
    start = len(kb.instrs)
    bounds = []
    for c0, n, tile, vector in (
        (0, plan.n_matrix, plan.matrix_tile, False),
        (plan.n_matrix, plan.n_vector, plan.vector_tile, True),
    ):
        b_ld = DequantLoader(
            Operand(w.wq.buf, w.wq.offset + c0, w.wq.strides),
            Operand(w.scales.buf, w.scales.offset + c0, w.scales.strides),
            w.n, w.bits, w.group, dt, w.fmt, w.sdtype,
        )  # fmt: skip
        part = Operand(out.buf, out.offset + c0 * out.strides[1], out.strides)
        writer = OutWriter(part, Space((1, n), 0, 1), None, [None], acc, out_slots=2)
        a_ld = StridedLoader(x, 0, 1, x_mode)
        g = Gemm((), 1, n, k, dt, acc)
        emit_gemm(kb, g, tile, a_ld, b_ld, writer, None, vector_products=vector)
        bounds.append(len(kb.instrs))
    matrix = kb.instrs[start : bounds[0]]
    vector = [_on_vector_queue(ins) for ins in kb.instrs[bounds[0] :]]
    parts = (matrix, vector)
    order = interleave([queue_program(kb.hw, part) for part in parts], kb.hw)
    kb.instrs[start:] = [parts[p][j] for p, j in order]


def _on_vector_queue(ins: Instr) -> Instr:
    if ins.queue != "compute":
        return ins
    if not isinstance(ins, Binary | Fma | Move):
        raise BackendError(f"the vector queue runs binary, fma and move, not {type(ins).__name__}")
    return dataclasses.replace(ins, vector_queue=True)


def lower_folded(c, i: int, node: Node) -> Value:
    """wq_pack / wq_scales of weights known at compile time: a constant buffer."""
    value = c.compile_time_value(i)
    if value is None:
        raise BackendError(
            f"{node.op} {c.label(i)}: the weights must be known at compile time (the "
            "quantization pass computes them as params); it has no kernel"
        )
    return c.constant_buffer(c.label(i), node.type.dtype.value, narrow(value, node.type.dtype))


def lower_wobserve(c, i: int, node: Node) -> Value:
    return c.value(node.inputs[0])


LOWER_WEIGHT_ONLY = {
    "matmul_wq": lower_matmul_wq,
    "wq_pack": lower_folded,
    "wq_scales": lower_folded,
    "wobserve": lower_wobserve,
}
