"""GEMM tile candidates drawn from the hardware, and the tile a kernel is priced with.

The tiling rules (rules/tiling.rules) are hardware-independent: they read the
candidates through the predicate guard `tile_candidate(D, TM, TN, TK)`, whose rows the
pipeline adds to the e-graph from `candidate_rows(hw)` before saturation. A rule
clamps a candidate to the product's dimensions, so a matmul gets at most one variant
per candidate and a small one gets few.

Candidates, per input dtype D (item size s; outputs of s_out bytes, 4 for i8's i32):
  - TM, TN: the array's rows R and columns C times a power of two, with the
    accumulator holding the output tile (4*TM*TN <= acc_bytes) and an aspect ratio of
    at most MAX_ASPECT;
  - TK: the largest multiple of R for which A and B tiles double buffered and the
    output fit SRAM (so K up to TK runs in one step: A's row panel stays resident):
        2*(TM*TK + TK*TN)*s + out_bytes*TM*TN <= sram_bytes
    with out_bytes = 2*s_out (two output slots: the cost model's own fit) for
    `tile_candidate`, and s_out + EPILOGUE_ROOM plus the backend's margin for
    `tile_candidate_epilogue`, the tiles of kernels whose epilogue holds tiles of its
    own (a residual add, a convolution's transposed accumulator): the backend runs
    those with one output slot and that room, so what extraction picks is what runs;
  - only tiles whose output area is at least a 1/MIN_AREA_FRACTION of the largest one:
    smaller ones re-read A and B more often and lose on a large product, and a small
    product clamps a large candidate down to its own dimensions anyway.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache

from hwsim.costmodel import (
    SPILL_FACTOR,
    KernelCost,
    KernelWork,
    cheapest_tiles,
    matmul_tiling_cost,
    pow2_multiples,
)
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import MATRIX_DTYPES, Hardware

SRAM_MARGIN = 2048  # bytes the backend keeps for broadcast rows and alignment
EPILOGUE_ROOM = 12  # bytes per output element: a double-buffered f32 residual + an f32 tile
MAX_ASPECT = 4  # TM/TN and TN/TM at most this
MIN_AREA_FRACTION = 16  # TM*TN at least the largest candidate area / this
Tile = tuple[int, int, int]


def out_itemsize(dtype: str) -> int:
    return 4 if dtype == "i8" else ITEMSIZE[dtype]


def max_tk(hw: Hardware, dtype: str, tm: int, tn: int, epilogue: bool = False) -> int:
    """The largest multiple of the array's rows that fits SRAM with a tm x tn tile (0: none)."""
    s, so = ITEMSIZE[dtype], out_itemsize(dtype)
    if epilogue:
        free = hw.sram_bytes - SRAM_MARGIN - (so + EPILOGUE_ROOM) * tm * tn
    else:
        free = hw.sram_bytes - 2 * so * tm * tn
    if free <= 0:
        return 0
    return free // (2 * (tm + tn) * s) // hw.array_rows * hw.array_rows


@cache
def tile_candidates(hw: Hardware, dtype: str, epilogue: bool = False) -> tuple[Tile, ...]:
    """The (TM, TN, TK) tiles offered for GEMMs with inputs of `dtype` on `hw`
    (`epilogue`: with room for an epilogue's own tiles)."""
    R, C = hw.array_rows, hw.array_cols
    shapes = []
    tm = R
    while 4 * tm * C <= hw.acc_bytes:
        tn = C
        while 4 * tm * tn <= hw.acc_bytes:
            if max(tm / tn, tn / tm) <= MAX_ASPECT and max_tk(hw, dtype, tm, tn, epilogue) >= R:
                shapes.append((tm, tn))
            tn *= 2
        tm *= 2
    if not shapes:
        return ()
    largest = max(tm * tn for tm, tn in shapes)
    return tuple(
        (tm, tn, max_tk(hw, dtype, tm, tn, epilogue))
        for tm, tn in shapes
        if tm * tn * MIN_AREA_FRACTION >= largest
    )


def candidate_rows(hw: Hardware, epilogue: bool = False) -> list[tuple[str, int, int, int]]:
    """Rows of the `TileCandidate` (or `TileCandidateEpilogue`) relation: (D, TM, TN, TK)."""
    return [(d, *t) for d in MATRIX_DTYPES for t in tile_candidates(hw, d, epilogue)]


def clamp(tile: Sequence[int], work: KernelWork) -> Tile:
    tm, tn, tk = (int(v) for v in tile)
    return min(tm, work.m), min(tn, work.n), min(tk, work.k)


def tile_sram_bytes(
    work: KernelWork, tile: Tile, epilogue: int = 0, transposed_b: bool = False
) -> int:
    """The least SRAM the backend runs `tile` in: A and B double buffered (B triple
    when read transposed), one output slot, `epilogue` bytes per output element for
    the operands and intermediates of a fused epilogue, the resident working set and
    the margin."""
    tm, tn, tk = tile
    s = ITEMSIZE[work.dtype]
    b_buffers = 3 if transposed_b else 2
    return (
        2 * tm * tk * s
        + work.gemms * b_buffers * tk * tn * s
        + (out_itemsize(work.dtype) + epilogue) * tm * tn
        + work.working_set_bytes
        + SRAM_MARGIN
    )


def tiled_cost(
    hw: Hardware,
    work: KernelWork,
    tile: Sequence[int],
    epilogue: int = 0,
    transposed_b: bool = False,
) -> KernelCost:
    """The cost of a matmul/conv kernel run with exactly `tile` (clamped to its dims).

    A tile that overflows SRAM (see tile_sram_bytes) or the accumulator is priced as
    the cost model prices a kernel that does not fit: its spill traffic is added and
    the result doubled.
    """
    t = clamp(tile, work)
    tm, tn, _ = t
    need = tile_sram_bytes(work, t, epilogue, transposed_b)
    if need <= hw.sram_bytes and 4 * tm * tn * work.gemms <= hw.acc_bytes:
        return matmul_tiling_cost(hw, work, t)
    spill = 2 * math.ceil(need / hw.sram_bytes) * (work.bytes_in + work.bytes_out + need)
    cost = matmul_tiling_cost(hw, work, t, spill)
    return KernelCost(**{**cost.__dict__, "cycles": cost.cycles * SPILL_FACTOR, "feasible": False})


def node_tile(attrs: Mapping[str, object]) -> Tile | None:
    """The explicit tile of a node's attributes, or None (the backend chooses)."""
    tile = attrs.get("tile")
    if not tile:
        return None
    tm, tn, tk = tile  # type: ignore[misc]
    return int(tm), int(tn), int(tk)


def prefer_explicit_tiles(priced, extraction):
    """Where extraction chose a kernel without a tile and the same e-class holds the
    same kernel with an explicit tile at no higher cost, take the tiled one: the
    choice is then made in the e-graph and the backend emits it as is. The children
    are the same, so the term DAG and its order stay valid."""
    from dataclasses import replace

    from eqsat.ops import REGISTRY

    choice = dict(extraction.choice)
    saved = 0.0
    for eclass, nid in extraction.choice.items():
        node = priced.by_id[nid]
        if REGISTRY[node.op].attr_spec("tile") is None or node_tile(dict(node.attrs)):
            continue
        rest = tuple(a for a in node.attrs if a[0] != "tile")
        best = None
        for sib in priced.decoded.classes[eclass]:
            tile = node_tile(dict(sib.attrs))
            if (
                tile is None
                or sib.id not in priced.costs
                or (sib.op, sib.children) != (node.op, node.children)
                or tuple(a for a in sib.attrs if a[0] != "tile") != rest
            ):
                continue
            key = (priced.costs[sib.id], -math.prod(tile), tile)
            if key[0] <= priced.costs[nid] and (best is None or key < best[0]):
                best = (key, sib.id)
        if best is not None:
            choice[eclass] = best[1]
            saved += priced.costs[nid] - best[0][0]
    return replace(extraction, choice=choice, dag_cost=extraction.dag_cost - saved)


def fitting_search_cost(
    hw: Hardware, work: KernelWork, epilogue: int = 0, transposed_b: bool = False
) -> KernelCost | None:
    """The cheapest tile of the cost model's search space (powers of two times the
    array, or the whole dimension; the largest fitting K step) among those the backend
    can run (tile_sram_bytes): what the backend picks for a kernel without a tile."""
    tiles = []
    for tm in pow2_multiples(hw.array_rows, work.m):
        for tn in pow2_multiples(hw.array_cols, work.n):
            if 4 * tm * tn * work.gemms > hw.acc_bytes:
                continue
            fits = [
                tk
                for tk in pow2_multiples(hw.array_rows, work.k)
                if tile_sram_bytes(work, (tm, tn, tk), epilogue, transposed_b) <= hw.sram_bytes
            ]
            if fits:
                tiles.append((tm, tn, fits[-1]))
    return min(
        cheapest_tiles(hw, work, tiles), key=lambda c: (c.cycles, c.dram_bytes), default=None
    )
