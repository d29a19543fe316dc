"""Two chained products in one kernel (eqsat/ops/chain.py): a feed-forward block whose
intermediate h never goes to DRAM.

The kernel is two GEMM loops (backend/gemm.py emit_gemm) in one instruction stream.
The first, x @ w1 with its epilogue (bias, activation), has an `SramWriter`: each
output tile's epilogue writes into its place in an f32 SRAM tile holding all of h,
and nothing is stored; a pre-norm block's layernorm normalizes x's rows in its A
loader (a NormLoader: backend/norm_loader.py). The second, h @ w2 with its epilogue
(bias, residual, and a NormEpilogue for a post-norm block's layernorm, on the vector
queue beside the products: backend/norm_epilogue.py), reads A through an
`OnChipLoader`: tiles of h where they lie, no loads. Each loop has its own slots, so
the second loop's first weight loads (which wait for nothing) are issued as soon as
the first loop's last loads are, and land while it computes. The first loop's
epilogues and both loops' products are on the compute queue, in order: the second
loop's products come after the last write of h. Tiles are eqsat/chain_plan.py's,
which prices this.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from eqsat.chain_plan import chain_plan
from eqsat.costs import kernel_work
from eqsat.ir.graph import Node
from hwsim.gemm_queues import split_first_step
from hwsim.isa import Instr, Tile

from .contract import acc_dtype, matrix_mode
from .emit import KernelBuilder, Pipeline, offset_tile
from .errors import BackendError
from .gemm import Gemm, OutWriter, StridedLoader, emit_gemm
from .gemm_kernel import as_rows, epi_leaves, fold_batch_rows, gemv_work
from .lower_contract import fused_parts
from .norm_epilogue import NormEpilogue
from .norm_loader import NormLoader, NormPrologue
from .operands import norm_params
from .space import Operand, Pos, Space
from .tileexpr import TileExpr
from .views import View

if TYPE_CHECKING:
    from .compiler import Compiler


def _row(batch: tuple[int, ...], bidx: tuple, m: int, r0: int) -> int:
    """Row of h of row r0 of batch index `bidx` (h holds the batch's rows in order)."""
    flat = 0
    for i, d in zip(bidx, batch, strict=True):
        flat = flat * d + i
    return flat * m + r0


class SramWriter(OutWriter):
    """The first loop's epilogue: each output tile, through the epilogue expression,
    into its place in h (SRAM, f32); nothing is stored."""

    def __init__(self, h: Tile, batch: tuple[int, ...], m: int, space: Space, expr, operands):
        super().__init__(None, space, expr, operands, "f32", out_slots=0)  # type: ignore[arg-type]
        self.h, self.batch, self.m = h, batch, m

    def alloc(self, kb: KernelBuilder, tm: int, tn: int, zero: Operand | None) -> None:
        self.kb, self.act, self.outs = kb, None, []
        given = {j: self.acc_dtype for j, op in enumerate(self.operands) if op is None}
        self.tx = TileExpr(kb, self.space, self.expr, self.operands, given, "f32", tm, tn, zero)  # type: ignore[arg-type]

    def finish(
        self,
        pipe: Pipeline,
        pos: Pos,
        gen,
        tokens: list[str],
        acc: Tile,
        more: tuple = (),
        products: tuple[tuple[int, int], ...] = (),
    ) -> None:
        slot = (gen[1] % 2) if gen is not None else 0
        pipe.wait_for(tokens)
        *bidx, m0, n0 = pos.index
        dst = offset_tile(self.h, _row(self.batch, tuple(bidx), self.m, m0), n0, pos.rows, pos.cols)
        pipe.compute(self.tx.compute(pos, slot, dst, {0: acc}))  # type: ignore[union-attr]
        pipe.release(gen)


class OnChipLoader:
    """The second loop's A: tiles of h where the first loop wrote them (no loads)."""

    whole_rows = True  # never loaded in pieces (backend/gemm.py split_first)
    dtype = "f32"

    def __init__(self, h: Tile, batch: tuple[int, ...], m: int) -> None:
        self.h, self.batch, self.m = h, batch, m
        self.at: dict[int, tuple[int, int]] = {}

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        return None

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        self.at[slot] = (_row(self.batch, bidx, self.m, r0), c0)
        return []

    def ready(self, slot: int, rn: int, cn: int) -> tuple[list[Instr], Tile]:
        r, c = self.at[slot]
        return [], offset_tile(self.h, r, c, rn, cn)


def lower_chain(c: Compiler, i: int, node: Node) -> View:
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    plan = chain_plan(c.hw, node.op, in_types, node.type, node.attr_dict, kernel_work)
    if plan is None:  # priced unrunnable: extraction takes the two kernels instead
        raise BackendError(
            f"{node.op}: its intermediate and its tiles do not fit the SRAM of "
            f"{c.hw.name} (or its operands are not f32 matrices); write the two "
            "products as separate ops"
        )
    p = plan.parts
    inputs1 = tuple(node.inputs[j] for j in p.inputs1)
    inputs2 = tuple(node.inputs[j] for j in p.inputs2)
    one = Node(p.product1, inputs1, tuple(p.attrs1.items()), plan.h, node.name)
    two = Node(p.product2, (inputs1[0], *inputs2), (), node.type, node.name)  # its A: h
    _, _, expr1, leaves1, _ = fused_parts(c, i, one)
    _, _, expr2, leaves2, _ = fused_parts(c, i, two)
    types = [c.graph.nodes[j].type for j in (inputs1[0], inputs1[1], inputs2[0])]
    x, w1, w2 = (
        c.as_view(c.value(j), t.shape, c.label(i))
        for j, t in zip((inputs1[0], inputs1[1], inputs2[0]), types, strict=True)
    )
    x, w1, w2 = (v if matrix_mode(v) else c.materialize(v, c.label(i), i) for v in (x, w1, w2))
    out = value = c.alloc_value(i, node, keep_last=True)
    h_shape = plan.h.shape
    folded = fold_batch_rows(x, [w1, w2], out, leaves2)
    h_leaves = [as_rows(v, h_shape) for v in leaves1] if folded is not None else []
    if folded is not None and None not in h_leaves:
        x, out, leaves2 = folded
        leaves1 = h_leaves  # type: ignore[assignment]
        h_shape = (math.prod(h_shape[:-1]), h_shape[-1])
    batch, m, k = h_shape[:-2], h_shape[-2], types[0].shape[-1]
    n1, n = h_shape[-1], node.type.shape[-1]
    space1 = Space(h_shape, len(batch), len(batch) + 1)
    space2 = Space(out.shape, len(batch), len(batch) + 1)
    leaves1 = epi_leaves(c, i, leaves1, space1, c.hw.array_rows, c.hw.array_cols)
    leaves2 = epi_leaves(c, i, leaves2, space2, c.hw.array_rows, c.hw.array_cols)
    eps = float(node.attr("eps")) if p.prologue or p.epilogue else 0.0  # type: ignore[arg-type]
    norm = prologue = None
    if p.epilogue:
        params = norm_params(c, i, node, p.epilogue_params[0], n)
        norm = NormEpilogue(p.epilogue, params, eps, plan=plan.tail)
    if p.prologue:
        prologue = NormPrologue(p.prologue, norm_params(c, i, node, p.prologue_params[0], k), eps)
    zero = c.zero
    rows = math.prod(batch) * m

    def emit(kb: KernelBuilder) -> None:
        h = kb.alloc(rows, n1, "f32")
        nb = len(batch)
        a1 = StridedLoader(Operand.of(x, (*batch, m, k)), nb, nb + 1, matrix_mode(x))  # type: ignore[arg-type]
        if prologue is not None:  # x's rows normalized on the way in (norm_loader.py)
            a1 = NormLoader(a1, prologue)  # type: ignore[assignment]
        b1 = StridedLoader(Operand.of(w1, (*batch, k, n1)), nb, nb + 1, matrix_mode(w1))  # type: ignore[arg-type]
        ops1 = [None] + [Operand.of(v, h_shape) for v in leaves1]
        writer1 = SramWriter(h, batch, m, space1, expr1, ops1)
        g1 = Gemm(batch, m, n1, k, x.dtype, acc_dtype(x.dtype))
        z = zero()
        first_split = split_first_step(plan.first)
        gemv = gemv_work(plan.first)
        emit_gemm(kb, g1, plan.tile1, a1, b1, writer1, z, gemv=gemv, split_first=first_split)
        a2 = OnChipLoader(h, batch, m)
        b2 = StridedLoader(Operand.of(w2, (*batch, n1, n)), nb, nb + 1, matrix_mode(w2))  # type: ignore[arg-type]
        ops2 = [None] + [Operand.of(v, out.shape) for v in leaves2]
        writer2 = OutWriter(
            Operand(out.buf, out.offset, out.strides), space2, expr2, ops2, "f32", norm=norm
        )
        g2 = Gemm(batch, m, n, n1, "f32", "f32")
        emit_gemm(
            kb,
            g2,
            plan.tile2,
            a2,  # type: ignore[arg-type]
            b2,
            writer2,
            z,
            gemv=gemv_work(plan.second),
            split_first=split_first_step(plan.second),
        )

    params = [
        *(norm.params.values() if norm else ()),
        *(prologue.params.values() if prologue else ()),
    ]
    c.add_kernel(c.kernel_name(i), i, "main", emit, [x, w1, w2, *leaves1, *leaves2, *params], [out])
    return value
