"""A GEMM kernel's choices at compile time, shared by every matrix lowerer (matmul,
convolution forms, gated and weight-only products): the tile (the cost model's
cheapest among those whose real SRAM need fits), the epilogue's operands laid out on
the output tile space and their bytes, and the matmul kernel of a node itself
(`add_gemm_kernel`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from eqsat.norm_epilogue import tail_plan
from eqsat.tiling import node_tile
from hwsim.costmodel import KernelWork, cheapest_tiles, pow2_multiples
from hwsim.dtypes import ITEMSIZE
from hwsim.gemm_queues import split_first_step

from .contract import acc_dtype, emit_matmul, matrix_mode
from .errors import BackendError
from .expr import Expr
from .gemm import Gemm, sram_need
from .space import Operand, Space
from .tileexpr import bytes_per_element, leaf_class
from .views import RowsView, View

if TYPE_CHECKING:
    from .compiler import Compiler

MARGIN = 2048  # SRAM bytes for broadcast operand rows and alignment


def choose_tile(
    c: Compiler,
    work: KernelWork,
    g: Gemm,
    sizes,
    modes: str,
    fixed: tuple | None = None,
    accs: int = 1,
    prologue_bytes=None,
    rows_bytes=None,
) -> tuple[tuple, int]:
    """(tile, output slots): the tile the cost model prices cheapest among those whose
    real SRAM need (epilogue and transpose buffers included) fits - with two output
    slots if possible, else one - so the model's own choice whenever it fits. A
    `fixed` tile (the node's own) is taken as is, with as many slots as fit.
    `prologue_bytes(tm)`: SRAM an A prologue adds; then only K in one step is tried.
    `rows_bytes(tm)`: SRAM a normalizing epilogue adds; then only N in one step."""
    hw = c.hw
    if fixed is not None:
        tile = (min(fixed[0], g.m), min(fixed[1], g.n), min(fixed[2], g.k))
        for slots in (2, 1):
            fits = sram_need(g, tile, sizes, modes, slots) + MARGIN <= hw.sram_bytes
            if fits and 4 * accs * tile[0] * tile[1] <= hw.acc_bytes:
                return tile, slots
        return _fit(c, g, tile, sizes, modes), 1
    slots_of: dict[tuple[int, int, int], int] = {}
    for tm in pow2_multiples(hw.array_rows, g.m):
        for tn in [g.n] if rows_bytes is not None else pow2_multiples(hw.array_cols, g.n):
            if 4 * accs * tm * tn > hw.acc_bytes:
                continue
            extra = prologue_bytes(tm) if prologue_bytes is not None else 0
            extra += rows_bytes(tm) if rows_bytes is not None else 0
            depths = [g.k] if prologue_bytes is not None else pow2_multiples(hw.array_rows, g.k)
            for slots in (2, 1):
                fits = [
                    tk
                    for tk in depths
                    if sram_need(g, (tm, tn, tk), sizes, modes, slots) + MARGIN + extra
                    <= hw.sram_bytes
                ]
                if fits:
                    break
            # the largest k tile, as the model does; with whole output rows every k
            # tile (eqsat/norm_epilogue.py whole_row_tiles)
            for tk in fits if rows_bytes is not None else fits[-1:]:
                slots_of[(tm, tn, tk)] = slots
    # the closed form's best few, replayed on the queues, as the cost model searches
    costs = cheapest_tiles(hw, work, slots_of)
    if costs:
        best = min(costs, key=lambda c: (c.cycles, c.dram_bytes, -slots_of[c.tile]))
        return best.tile, slots_of[best.tile]
    return _fit(c, g, (hw.array_rows, hw.array_cols, hw.array_rows), sizes, modes), 1


def _fit(
    c: Compiler, g: Gemm, tile, sizes: tuple[int, int, int, int], modes: str
) -> tuple[int, int, int]:
    """The model's tile, shrunk until the epilogue fits too: N first (no extra DRAM
    traffic once B is re-read anyway), then M, then K (which makes A re-read)."""
    tm, tn, tk = min(tile[0], g.m), min(tile[1], g.n), min(tile[2], g.k)
    hw = c.hw
    while sram_need(g, (tm, tn, tk), sizes, modes, 1) + MARGIN > hw.sram_bytes or (
        4 * tm * tn > hw.acc_bytes
    ):
        if tn > hw.array_cols:
            tn = math.ceil(tn / 2)
        elif tm > hw.array_rows:
            tm = math.ceil(tm / 2)
        elif tk > hw.array_rows:
            tk = math.ceil(tk / 2)
        elif max(tm, tn, tk) > 1:
            tm, tn, tk = max(1, tm // 2), max(1, tn // 2), max(1, tk // 2)
        else:
            raise BackendError(f"{g}: no matmul tile fits the SRAM of {hw.name}")
    return tm, tn, tk


def epi_leaves(
    c: Compiler, i: int, leaves: list[View], space: Space, rt: int, ct: int
) -> list[View]:
    out = []
    for v in leaves:
        op = Operand.of(v, space.shape)
        if leaf_class(op, space, max(rt, 2), max(ct, 2)) is None:
            v = c.materialize(v.broadcast_to(space.shape), c.label(i), i)
        out.append(v)
    return out


def epi_bytes(epi: Expr | None, leaves: list[View], space: Space, out: str, acc: str) -> int:
    if epi is None:
        return 0
    ops = [None] + [Operand.of(v, space.shape) for v in leaves]
    return bytes_per_element(epi, ops, space, out, {0: acc})


def fold_batch_rows(
    a: View, bs: list[View], out: View, leaves: list[View], runs: bool = False
) -> tuple[View, View, list[View]] | None:
    """[..., M, K] @ [K, N] as one [rows, K] @ [K, N] product (rows: the batch's M rows
    together), where every B is one matrix for all batch indices and the views merge
    without a copy: B's panels are then loaded once, not once per batch index, as
    eqsat/costs.py prices such a product. (a, out, leaves) folded, or None. `runs`: an
    epilogue operand whose rows do not merge (a window of a padded map) is folded as
    a RowsView, loaded run by run (backend/tileexpr.py), where its tiles are full rows
    or columns."""
    if len(out.shape) <= 2 or any(len(b.shape) != 2 for b in bs):
        return None
    if a.shape[:-1] != out.shape[:-1]:
        return None
    a2, out2 = as_rows(a, a.shape), as_rows(out, out.shape)
    folded = [as_rows(v, out.shape) or (rows_of(v, out.shape) if runs else None) for v in leaves]
    if a2 is None or out2 is None or any(v is None for v in folded):
        return None
    if matrix_mode(a2) is None:
        return None
    return a2, out2, folded  # type: ignore[return-value]


def rows_of(v: View, shape: tuple[int, ...]) -> RowsView | None:
    """`v` broadcast to `shape` as [rows, last axis] in uniformly strided runs of rows
    (RowsView), or None where its runs would not load as tiles."""
    return RowsView.of(v.broadcast_to(shape))


def as_rows(v: View, shape: tuple[int, ...]) -> View | None:
    """`v` broadcast to `shape` as a [rows, last axis] view without a copy, or None."""
    return v.broadcast_to(shape).reshape((math.prod(shape[:-1]), shape[-1]))


def gemv_work(work: KernelWork) -> bool:
    """Whether the cost model lets this GEMM's one-row products run on the vector unit
    (hwsim.gemm_steps.gemv_kernel): a matmul's, not a convolution's."""
    return work.kind == "matmul" and not work.patch and not work.patch_b


def add_gemm_kernel(
    c, i, node, a: View, b: View, out: View, epi, leaves, work, prologue=None, norm=None
) -> None:
    """The matmul kernel of node i: out[..., M, N] = epilogue(a @ b) at the tile
    choose_tile picks for `work`, the epilogue's operands broadcast over out (with a
    `prologue`, at a tile of one K step, A's rows normalized on chip; with a `norm`, at
    a tile of one N step, the output's rows normalized on chip)."""
    folded = fold_batch_rows(a, [b], out, leaves, runs=True)
    if folded is not None:
        runs = tuple(
            f.run if isinstance(f, RowsView) else 0
            for v, f in zip(leaves, folded[2], strict=True)
            if v.numel > 1
        )
        a, out, leaves = folded
        if any(runs):  # as eqsat/program_cost.py prices them, for the same tile choice
            work = replace(work, epilogue_runs=runs)
    batch, (m, n), k = out.shape[:-2], out.shape[-2:], a.shape[-1]
    g = Gemm(batch, m, n, k, a.dtype, acc_dtype(a.dtype))
    space = Space(out.shape, len(batch), len(batch) + 1)
    leaves = epi_leaves(c, i, leaves, space, c.hw.array_rows, c.hw.array_cols)
    s = ITEMSIZE[a.dtype]
    # a normalizing epilogue's expression writes the f32 sum tile (backend/gemm.py)
    epi_dtype = "f32" if norm is not None else out.dtype
    sizes = (s, s, ITEMSIZE[out.dtype], epi_bytes(epi, leaves, space, epi_dtype, g.acc_dtype))
    modes = matrix_mode(a) + matrix_mode(b)  # type: ignore[operator]
    extra = None
    if prologue is not None:
        work = replace(work, a_whole=True)  # as eqsat/costs.py prices it

        def extra(tm: int) -> int:
            return prologue.sram_bytes(tm, k, a.dtype)

    rows = None
    if norm is not None:

        def rows(tm: int) -> int:
            return norm.sram_bytes(tm, n, out.dtype)

    tile, slots = choose_tile(c, work, g, sizes, modes, node_tile(node.attr_dict), 1, extra, rows)
    if prologue is not None and tile[2] < k:
        raise BackendError(f"{node.op}: no tile with whole rows of A ({k}) fits SRAM")
    if norm is not None and tile[1] < n:
        raise BackendError(f"{node.op}: no tile with whole output rows ({n}) fits SRAM")
    if norm is not None:  # the last tile's row pieces, as the cost model plans them
        norm.plan = tail_plan(c.hw, work, tile, norm.tail(c.hw, n, out.dtype, slots))
    zero = c.zero
    params = list(prologue.params.values()) if prologue is not None else []
    params += list(norm.params.values()) if norm is not None else []
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_matmul(
            kb,
            a,
            b,
            out,
            epi,
            leaves,
            tile,
            zero(),
            slots,
            gemv_work(work),
            prologue,
            norm,
            split_first_step(work),
        ),
        [a, b, *leaves, *params],
        [out],
    )
