"""A normalization in a matrix product's prologue, decided once for the backend
(backend/norm_matmul.py) and the cost model (eqsat/costs.py).

layernorm_matmul*(x, w, ..., gamma[, beta]) and rmsnorm_matmul(x, w, gamma) run as
the GEMM of their inner product (matmul, matmul_bias, matmul_bias_gelu) whose A
operand is x's rows normalized on chip: the K loop has a single tile (a whole row of
x per A panel), and after each panel's load the vector unit runs the row program of
eqsat/row_plan.py on it into the A tile, the parameter rows (gamma, beta) loaded once
with the first panel. The normalized activations never go to DRAM and the norm's own
kernel (its launch, load and store) goes away. The price is the inner product's at a
full-K tile plus the row program of every panel, counted as if it ran alone (in the
simulator it can overlap the first B tile's transfer, so the price is an upper bound).
"""

from __future__ import annotations

import math
from dataclasses import replace

from eqsat.ir.types import TensorType
from eqsat.row_plan import PARAMS, RowTiles, row_program
from hwsim import timing
from hwsim.costmodel import KernelCost, tile_splits
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware
from hwsim.isa import Tile

# fused op -> (normalization, inner product op, number of the inner op's operands)
NORM_MATMUL = {
    "layernorm_matmul": ("layernorm", "matmul", 2),
    "layernorm_matmul_bias": ("layernorm", "matmul_bias", 3),
    "layernorm_matmul_bias_gelu": ("layernorm", "matmul_bias_gelu", 3),
    "rmsnorm_matmul": ("rmsnorm", "matmul", 2),
    "rmsnorm_matmul_swiglu": ("rmsnorm", "matmul_swiglu", 3),
}
GATED = ("matmul_swiglu",)  # inner products with two B operands (backend/gated.py)
MARGIN = 2048  # SRAM bytes kept free besides the tiles (backend/gemm_kernel.py MARGIN)


def prologue_sram_bytes(rows: int, k: int, dtype: str, kind: str) -> int:
    """SRAM the prologue adds to the GEMM's tiles for panels of `rows` rows of k: the
    f32 scratch t and u, the per-row columns, the normalized A tile, the parameter rows
    (each allocation aligned as the backend's KernelBuilder aligns them)."""
    tiles = [(rows, k, 4), (rows, k, 4), (rows, 1, 4), (rows, 1, 4), (rows, k, ITEMSIZE[dtype])]
    tiles += [(1, k, ITEMSIZE[dtype])] * len(PARAMS[kind])
    return sum(-(-r * c * isz // 64) * 64 for r, c, isz in tiles)


def panel_cycles(hw: Hardware, kind: str, rows: int, k: int, dtype: str) -> int:
    """Vector cycles of the row program on one panel of `rows` rows of k."""

    def tile(r: int, c: int, dt: str) -> Tile:
        return Tile("sram", 0, r, c, dt)

    tiles = RowTiles(
        x=tile(rows, k, dtype),
        t=tile(rows, k, "f32"),
        u=tile(rows, k, "f32"),
        c1=tile(rows, 1, "f32"),
        c2=tile(rows, 1, "f32"),
        out=tile(rows, k, dtype),
        params={p: tile(1, k, dtype) for p in PARAMS[kind]},
    )
    body, finish = row_program(kind, tiles, 1e-5)
    return sum(timing.instruction_cost(hw, ins)[1] for ins in body + finish)


def prologue_cycles(
    hw: Hardware, kind: str, m: int, batch: int, tm: int, k: int, dtype: str
) -> int:
    """The row program over every A panel of the GEMM: `batch` x ceil(m / tm) panels."""
    return batch * sum(c * panel_cycles(hw, kind, r, k, dtype) for r, c in tile_splits(m, tm))


def norm_matmul_cost(
    inner: KernelCost | None, hw: Hardware, op_name: str, x: TensorType, out: TensorType
) -> KernelCost | None:
    """The fused kernel's price from its inner product's (at the model's tile) and the
    prologue; infeasible (extraction takes the two kernels) when that tile cuts K or
    the prologue's scratch does not fit next to the tiles."""
    if inner is None:
        return None
    kind, inner_op, _ = NORM_MATMUL[op_name]
    weights = 2 if inner_op in GATED else 1  # B operands: each double buffered
    k = x.shape[-1]
    # x's rows times one weight matrix: all of them are one M (eqsat/costs.py
    # _matmul_dims, backend/gemm_kernel.py fold_batch_rows)
    m, batch = math.prod(out.shape[:-1]), 1
    tile = inner.tile or (min(m, hw.array_rows), hw.array_cols, k)
    tm, tn, tk = min(tile[0], m), min(tile[1], out.shape[-1]), tile[2]
    isz = ITEMSIZE[x.dtype.value]
    tiles = 2 * tm * k * isz + 2 * weights * k * tn * isz + 2 * tm * tn * ITEMSIZE[out.dtype.value]
    need = tiles + prologue_sram_bytes(tm, k, x.dtype.value, kind) + MARGIN
    feasible = inner.feasible and tk >= k and need <= hw.sram_bytes
    extra = prologue_cycles(hw, kind, m, batch, tm, k, x.dtype.value)
    return replace(
        inner,
        cycles=inner.cycles + extra,
        compute_cycles=inner.compute_cycles + extra,
        vector_cycles=inner.vector_cycles + extra,
        feasible=feasible,
    )
