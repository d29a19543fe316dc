"""The cost model's view of a weight-only quantized product (`matmul_wq`): one GEMM of
all rows of x ([..., M, K] flattened to M' = prod of the leading dims, as the backend
runs it) against weights that DRAM holds packed (bits 4: two per byte) with their f32
or bf16 group scales; the backend dequantizes them on the way into SRAM (backend/weight_only.py).
A product of one row may split its columns between the array and the vector unit
(`wq_split`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from eqsat.ir.types import TensorType
from hwsim import timing
from hwsim.costmodel import KernelCost, KernelWork, kernel_cycles, matmul_tiling_cost
from hwsim.gemv_split import GemvSplit, part_work, plan_split
from hwsim.hardware import Hardware


def matmul_wq_work(
    in_types: Sequence[TensorType], out: TensorType, attrs: Mapping, bytes_in: int, bytes_out: int
) -> KernelWork:
    x = in_types[0]
    m, k, n = math.prod(out.shape[:-1]), x.shape[-1], out.shape[-1]
    return KernelWork(
        kind="matmul",
        dtype=x.dtype.value,
        macs=m * n * k,
        m=m,
        n=n,
        k=k,
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        b_bits=int(attrs["bits"]),
        b_group=int(attrs["group"]),
        b_scale_bytes=in_types[2].dtype.itemsize,
    )


SPLIT_GAIN = 0.01


def wq_split(hw: Hardware, work: KernelWork) -> GemvSplit | None:
    """The split of a one-row product between the array and the vector unit
    (hwsim/gemv_split.py) where it saves at least SPLIT_GAIN of the array alone's
    cycles (both parts read x), else None: the one decision the cost model prices and
    backend/weight_only.py emits."""
    plan = plan_split(hw, work)
    if plan is None or plan.cycles > (1 - SPLIT_GAIN) * kernel_cycles(hw, work).cycles:
        return None
    return plan


def split_cost(hw: Hardware, work: KernelWork, plan: GemvSplit) -> KernelCost:
    """The split kernel's cost: its replayed cycles, each part's work and traffic."""
    mat = matmul_tiling_cost(hw, part_work(work, plan.n_matrix), plan.matrix_tile, replay=False)
    vec = matmul_tiling_cost(hw, part_work(work, plan.n_vector), plan.vector_tile, replay=False)
    _, tn, tk = plan.vector_tile  # the vector part's products, step by step, and folds
    rn, rk = min(tn, plan.n_vector), min(tk, work.k)
    h = timing.gemv_kernel_rows(hw, plan.n_vector, work.k, tn, tk)
    tiles = math.ceil(plan.n_vector / tn)
    vec_products = tiles * math.ceil(work.k / tk) * sum(timing.gemv_product_cycles(hw, rn, rk, h))
    vec_products += tiles * sum(timing.gemv_fold_cycles(hw, rn, h))
    return KernelCost(
        cycles=plan.cycles,
        compute_cycles=max(mat.compute_cycles, vec.vector_cycles + vec_products),
        matrix_cycles=mat.matrix_cycles,
        vector_cycles=mat.vector_cycles + vec.vector_cycles + vec_products,
        dma_cycles=mat.dma_cycles + vec.dma_cycles,
        dram_bytes=mat.dram_bytes + vec.dram_bytes,
        tile=plan.matrix_tile,
    )
