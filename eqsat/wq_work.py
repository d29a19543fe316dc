"""The cost model's view of a weight-only quantized product (`matmul_wq`): one GEMM of
all rows of x ([..., M, K] flattened to M' = prod of the leading dims, as the backend
runs it) against weights that DRAM holds packed (bits 4: two per byte) with their f32
group scales; the backend dequantizes them on the way into SRAM (backend/weight_only.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from eqsat.ir.types import TensorType
from hwsim.costmodel import KernelWork


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
    )
