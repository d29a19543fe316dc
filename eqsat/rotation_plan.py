"""How the backend runs hadamard(x, block=B), decided once for the backend
(backend/rotation.py) and the cost model: a fast Walsh-Hadamard transform on the
vector unit.

x is viewed as [R, B] rows (R = numel / B). A tile holds rt whole rows, loaded and
stored double buffered (backend/emit.py Pipeline) like a row kernel's. On chip, stage
h = 1, 2, 4, ..., B/2 of the transform is two strided vector instructions over the
whole tile: with the tile seen as pairs of h-element halves (rows of h elements, 2h
apart), even = a + b and odd = a - b, ping-ponging between two f32 scratch tiles; a
last instruction scales by 1/sqrt(B) into the output slot. That is log2(B) + 1 lane
passes per element (8 for B = 128), against B multiply-adds per element for the
[R, B] @ [B, B] block matmul. The cost model prices exactly these instructions with
hwsim's timing formulas through the simulator's queues (eqsat/spatial_plan.py).
"""

from __future__ import annotations

import math

from eqsat.row_plan import _compute, _step
from eqsat.spatial_plan import Repeat, StreamPlan, largest_fitting, plans_cost, tiles_end
from hwsim.costmodel import KernelCost, tile_splits
from hwsim.hardware import Hardware
from hwsim.isa import Binary, Instr, Tile

ITEM = 4  # f32


def hadamard_tiles(rt: int, block: int) -> list[tuple[int, int, int]]:
    """The SRAM tiles (rows, cols, item size) the kernel allocates, in order: two
    input slots, the scratch tiles t and u, two output slots (all rt x block f32)."""
    return [(rt, block, ITEM)] * 6


def hadamard_rows_per_tile(hw: Hardware, rows: int, block: int) -> int:
    """Rows per tile: as many as fit SRAM, at most a streaming chunk (a quarter of SRAM
    for one tile's input and output); 0 when not even one row fits."""
    chunk = max(1, hw.sram_bytes // 4 // max(1, 2 * block * ITEM))

    def fits(rt: int) -> bool:
        return tiles_end(hadamard_tiles(rt, block)) <= hw.sram_bytes

    return largest_fitting(max(1, min(rows, chunk)), fits)


def _halves(t: Tile, h: int) -> tuple[Tile, Tile]:
    """The first and second h-element halves of every 2h-element group of a dense tile."""
    groups = t.rows * t.cols // (2 * h)
    a = Tile(t.space, t.addr, groups, h, t.dtype, 2 * h)
    b = Tile(t.space, t.addr + h * t.itemsize, groups, h, t.dtype, 2 * h)
    return a, b


def hadamard_program(x: Tile, t: Tile, u: Tile, out: Tile, block: int) -> list[Instr]:
    """The vector program of one tile (dense rn x block tiles): x -> t -> u -> ... by
    butterfly stages, then out = last * 1/sqrt(block)."""
    prog: list[Instr] = []
    src, h, stage = x, 1, 0
    while h < block:
        dst = (t, u)[stage % 2]
        sa, sb = _halves(src, h)
        da, db = _halves(dst, h)
        prog.append(Binary(op="add", dst=da, a=sa, b=sb))
        prog.append(Binary(op="sub", dst=db, a=sa, b=sb))
        src, h, stage = dst, 2 * h, stage + 1
    prog.append(Binary(op="mul", dst=out, a=src, imm=1.0 / math.sqrt(block)))
    return prog


def hadamard_plan(hw: Hardware, rows: int, block: int) -> StreamPlan:
    """The kernel's tiles in the order the backend emits them."""
    rt = max(1, hadamard_rows_per_tile(hw, rows, block))

    def step(rn: int):
        tile = Tile("sram", 0, rn, block, "f32")
        prog = hadamard_program(tile, tile, tile, tile, block)
        return _step(hw, rn * block * ITEM, _compute(hw, prog), rn * block * ITEM)

    order = Repeat(1, tuple(Repeat(c, (step(s),)) for s, c in tile_splits(rows, rt)))
    return StreamPlan((rt, block), order, None, hadamard_rows_per_tile(hw, rows, block) > 0)


def hadamard_cost(hw: Hardware, rows: int, block: int) -> KernelCost:
    """The kernel's cycles: the launch and its tiles through the simulator's queues."""
    return plans_cost(hw, [hadamard_plan(hw, rows, block)])
