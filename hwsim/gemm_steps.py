"""Which unit runs a GEMM kernel's k steps, and their cycles.

Shared by the closed form (costmodel.matmul_tiling_cost) and the queue replay
(gemm_queues.gemm_program), which both price the loop backend/gemm.py emit_gemm emits;
it sits below both so that neither imports the other for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import timing
from .hardware import Hardware

if TYPE_CHECKING:
    from .costmodel import KernelWork


def gemv_kernel(hw: Hardware, w: KernelWork, tile: tuple[int, int, int]) -> bool:
    """Whether a matmul kernel of one-row products runs them on the vector unit at this
    tile (timing.gemv_on_vector; backend/gemm.py emit_gemm's `gemv`)."""
    if w.kind != "matmul" or w.patch or w.patch_b:
        return False
    return timing.gemv_on_vector(hw, w.dtype, w.m, min(tile[1], w.n), min(tile[2], w.k))


def gemm_step_cycles(hw: Hardware, w: KernelWork, tile: tuple[int, int, int]):
    """Cycles of one k step of the GEMM loop, (m, n, k) -> cycles, per B operand: the
    array's matmul, or the vector unit's GEMV products where gemv_kernel says so (their
    partial sums' fold, once per output tile: timing.gemv_fold_cycles)."""
    if gemv_kernel(hw, w, tile):
        h = timing.gemv_kernel_rows(hw, w.n, w.k, tile[1], tile[2])
        return lambda m, n, k: sum(timing.gemv_product_cycles(hw, n, k, h))
    return lambda m, n, k: timing.matmul_cycles(hw, w.dtype, m, n, k)
