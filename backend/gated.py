"""Gated products (SwiGLU, GeGLU): act(x @ wg) * (x @ wu) as one GEMM kernel.

The two products share their A operand, so the GEMM loop (gemm.emit_gemm with
`more_b`) loads each A tile once and multiplies it into two accumulators, one per
weight matrix; the epilogue reads both (Leaf(0) the gate, Leaf(1) the up projection)
and writes the gated tile. Neither product nor the activation goes to DRAM, and x is
read once instead of twice. The cost model prices the same loop (KernelWork.gemms).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.costs import kernel_work
from eqsat.ir.graph import Node
from eqsat.ops.fused import Call
from hwsim.dtypes import ITEMSIZE

from .contract import acc_dtype, matrix_mode
from .errors import BackendError
from .expr import Expr
from .gemm import Gemm, OutWriter, StridedLoader, emit_gemm
from .gemm_kernel import choose_tile, epi_leaves, fold_batch_rows, gemv_work
from .norm_loader import NormLoader
from .space import Operand, Space
from .tileexpr import bytes_per_element
from .views import View

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_gated(
    c: Compiler,
    i: int,
    node: Node,
    products: list[Call],
    env: dict,
    epi: Expr,
    leaves: list[View],
    prologue=None,
) -> View:
    """Lower a fused node whose body holds two matmuls of the same first operand
    (`prologue`: a NormPrologue normalizing A's rows, backend/norm_loader.py)."""
    if len(products) != 2 or any(p.op != "matmul" for p in products):
        raise BackendError(f"fused op '{node.op}': a gated kernel takes two matmuls")
    names = [p.args for p in products]
    if not all(isinstance(a, str) for args in names for a in args) or names[0][0] != names[1][0]:
        raise BackendError(f"fused op '{node.op}': its two matmuls must share their input")
    (x_name, g_name), (_, u_name) = names
    label = c.label(i)
    views = [c.as_view(env[n][0], env[n][1].shape, label) for n in (x_name, g_name, u_name)]
    a, bg, bu = (v if matrix_mode(v) is not None else c.materialize(v, label, i) for v in views)
    out = c.alloc_value(i, node, keep_last=True)
    if out.shape[-1] != bg.shape[-1] or bg.shape != bu.shape:
        raise BackendError(f"fused op '{node.op}': gate and up weights must have one shape")
    value = out
    folded = fold_batch_rows(a, [bg, bu], out, leaves)
    if folded is not None:
        a, out, leaves = folded
    batch, (m, n), k = out.shape[:-2], out.shape[-2:], a.shape[-1]
    g = Gemm(batch, m, n, k, a.dtype, acc_dtype(a.dtype))
    space = Space(out.shape, len(batch), len(batch) + 1)
    leaves = epi_leaves(c, i, leaves, space, c.hw.array_rows, c.hw.array_cols)
    s = ITEMSIZE[a.dtype]
    ops = [Operand.of(v, space.shape) for v in leaves]
    accs = {0: g.acc_dtype, 1: g.acc_dtype}
    extra = bytes_per_element(epi, [None, None, *ops], space, out.dtype, accs)
    # two B operands of one mode: as one B of twice the item size in the SRAM need
    sizes = (s, 2 * s, ITEMSIZE[out.dtype], extra)
    modes = matrix_mode(a) + matrix_mode(bg)  # type: ignore[operator]
    if matrix_mode(bu) != matrix_mode(bg):
        bu = c.materialize(bu, label, i)
        modes = matrix_mode(a) + matrix_mode(bu)  # type: ignore[operator]
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    work = kernel_work(node.op, in_types, node.type, node.attr_dict)
    assert work is not None
    prologue_bytes = None
    if prologue is not None:

        def prologue_bytes(tm: int) -> int:
            return prologue.sram_bytes(tm, k, a.dtype)

    tile, slots = choose_tile(c, work, g, sizes, modes, None, 2, prologue_bytes)
    if prologue is not None and tile[2] < k:
        raise BackendError(f"{node.op}: no tile with whole rows of A ({k}) fits SRAM")
    params = list(prologue.params.values()) if prologue is not None else []
    zero = c.zero

    def emit(kb) -> None:
        nb = len(batch)
        a_ld = StridedLoader(Operand.of(a, (*batch, m, k)), nb, nb + 1, matrix_mode(a))  # type: ignore[arg-type]
        if prologue is not None:
            a_ld = NormLoader(a_ld, prologue)  # type: ignore[assignment]
        b_lds = [
            StridedLoader(Operand.of(b, (*batch, k, n)), nb, nb + 1, matrix_mode(b))  # type: ignore[arg-type]
            for b in (bg, bu)
        ]
        writer = OutWriter(
            Operand(out.buf, out.offset, out.strides),
            space,
            epi,
            [None, None, *ops],
            g.acc_dtype,
            out_slots=slots,
        )
        gemv = gemv_work(work)
        emit_gemm(kb, g, tile, a_ld, b_lds[0], writer, zero(), more_b=(b_lds[1],), gemv=gemv)

    c.add_kernel(c.kernel_name(i), i, "main", emit, [a, bg, bu, *leaves, *params], [out])
    return value
