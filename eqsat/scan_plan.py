"""How the backend runs cumsum, decided once for the backend and the cost model.

x is seen as [pre, n, post] (n: the scanned axis, row-major). A tile holds `lanes`
independent scans of `steps` positions each:

- along `cols` (post == 1): tile rows are lanes (rows of x), tile columns positions
  of the axis, contiguous in DRAM;
- along `rows` (post > 1): tile rows are positions of the axis, tile columns lanes
  (contiguous elements of `post`, for one index of `pre`), so no transposing copy is
  needed when the axis is not the last.

Per block of lanes, chunks of `steps` positions are visited in scan order (from the
end of the axis when `reverse`), each adding the running total of the previous one
(the carry: one value per lane, kept in the compute dtype). Inside a chunk, in scan
order, one of two vector programs (`tile_ops`), whichever the timing formulas price
lower for the tile:

- walk: r[j] = r[j-1] + x[j], one instruction per position over all lanes: no more
  adds than the reference does, and the same order, so floats round as numpy does;
  it wins when the lanes fill the vector unit;
- tree (Hillis-Steele): rounds d = 1, 2, 4, ...: t[j] = s[j] + s[j-d] for j >= d as
  one add of offset sub-tiles, t[j] = s[j] below d as a copy, alternating between two
  scratch tiles so that no instruction reads the region it writes; the last round
  writes the output tile. log2(steps) rounds instead of steps instructions, at the
  price of steps * log2(steps) adds in tree order (floats differ from numpy's
  sequential sum by rounding only).

The tree's partial sums are sums of windows, differences of two running sums: in
i32 they can saturate where every running sum fits (values near 2**31), so i32 scans
always walk (i8 sums run in i32, where windows of fewer than 2**24 terms cannot
overflow; f32 windows stay finite while running sums stay below half its range).

Reverse runs the same programs with positions mirrored (a sub-tile at offset d from
the end); nothing is flipped in memory. Exclusive is the inclusive scan of x shifted
by one position in scan order: the DMA loads x one position behind, and the first
position of the first chunk becomes 0 by a select of immediates (exact in every
dtype). Sums run in f32 for floats and i32 for integers; an i8 walk keeps its running
sums in the output tile itself (they are the results, so they fit unless the
reference wraps), a bf16 walk in f32 scratch copied out at the end.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from eqsat.ir.types import TensorType
from hwsim import timing
from hwsim.costmodel import KernelCost, LoopWork, loop_cycles, step_cycles, tile_splits
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware

COLS, ROWS = "cols", "rows"
WALK, TREE = "walk", "tree"
SRAM_SLACK = 1024  # bytes kept free: tile alignment of the kernel's seven tiles
ACC_BYTES = 4  # the compute dtype: f32 or i32
# the timing entry that prices each kind of scan instruction
LANE_OP = {"add": "add", "copy": "copy", "zero": "select"}


def scan_geometry(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(pre, n, post): the axes before the scanned one, its length, the axes after."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


# ----------------------------------------------------------------- tile programs


@dataclass(frozen=True)
class Run:
    """`length` consecutive positions of one tile from `start`, in scan order. Tiles:
    x (the loaded chunk), p and q (scratch in the compute dtype), out (the output
    slot), carry (one position: the running total per lane)."""

    tile: str
    start: int
    length: int


@dataclass(frozen=True)
class ScanOp:
    """One vector instruction over every lane: dst = a + b (add), dst = a (copy), or
    dst = 0 (zero: a select of immediates; `a` is only its condition)."""

    op: str
    dst: Run
    a: Run
    b: Run | None = None


def _add(dst: Run, a: Run, b: Run) -> ScanOp:
    return ScanOp("add", dst, a, b)


def _copy(dst: Run, a: Run) -> ScanOp:
    return ScanOp("copy", dst, a)


CARRY = Run("carry", 0, 1)


def _walk(n: int, carried: bool, last: bool, narrow_out: bool) -> list[ScanOp]:
    r = "p" if narrow_out else "out"
    first = Run(r, 0, 1)
    ops = [_add(first, Run("x", 0, 1), CARRY) if carried else _copy(first, Run("x", 0, 1))]
    ops += [_add(Run(r, j, 1), Run(r, j - 1, 1), Run("x", j, 1)) for j in range(1, n)]
    if narrow_out:
        ops.append(_copy(Run("out", 0, n), Run("p", 0, n)))
    if not last:
        ops.append(_copy(CARRY, Run(r, n - 1, 1)))
    return ops


def _tree(n: int, carried: bool, last: bool) -> list[ScanOp]:
    """Hillis-Steele on n >= 3 positions (at least two rounds, so round 0 writes p)."""
    rounds = math.ceil(math.log2(n))
    ops: list[ScanOp] = []
    src = "x"
    for s in range(rounds):
        d = 1 << s
        dst = "out" if s == rounds - 1 else ("p", "q")[s % 2]
        if s == 0 and carried:  # fold the carry into position 0 before anything reads it
            ops += [
                _add(Run(dst, 0, 1), Run(src, 0, 1), CARRY),
                _add(Run(dst, 1, 1), Run(src, 1, 1), Run(dst, 0, 1)),
                _add(Run(dst, 2, n - 2), Run(src, 2, n - 2), Run(src, 1, n - 2)),
            ]
        else:
            ops += [
                _copy(Run(dst, 0, d), Run(src, 0, d)),
                _add(Run(dst, d, n - d), Run(src, d, n - d), Run(src, 0, n - d)),
            ]
        if s == rounds - 1 and not last:  # the last sum again, in the compute dtype
            ops.append(_add(CARRY, Run(src, n - 1, 1), Run(src, n - 1 - d, 1)))
        src = dst
    return ops


def walks(n: int, method: str) -> bool:
    """Does a chunk of n positions run the walk? (A tree needs two rounds at least.)"""
    return method == WALK or n < 3


@functools.lru_cache(maxsize=64)
def tile_ops(
    n: int, method: str, first: bool, last: bool, exclusive: bool, narrow_out: bool
) -> tuple[ScanOp, ...]:
    """The instructions of one chunk of n positions: `first`/`last` in scan order (the
    first has no carry in, the last none out); `narrow_out`: the output dtype cannot
    hold running sums (bf16)."""
    ops: list[ScanOp] = []
    if exclusive and first:  # x was loaded one position on: position 0 is the empty sum
        ops.append(ScanOp("zero", Run("x", 0, 1), Run("x", 1, 1)))
    if walks(n, method):
        ops += _walk(n, not first, last, narrow_out)
    else:
        ops += _tree(n, not first, last)
    return tuple(ops)


@functools.lru_cache(maxsize=1 << 12)
def op_counts(
    n: int, method: str, first: bool, last: bool, exclusive: bool, narrow_out: bool
) -> tuple[tuple[tuple[str, int], int], ...]:
    """tile_ops counted for pricing: ((timing op, positions written), instructions).
    A walk is counted in closed form (its n instructions would be slow to list for
    every tile size the planner tries); tests/backend/test_backend_scan.py checks that
    both agree."""
    if not walks(n, method):
        ops = tile_ops(n, method, first, last, exclusive, narrow_out)
        return tuple(Counter((LANE_OP[o.op], o.dst.length) for o in ops).items())
    counts = Counter({("add", 1): n - 1})
    counts["copy" if first else "add", 1] += 1
    counts["select", 1] += exclusive and first
    counts["copy", n] += narrow_out
    counts["copy", 1] += not last
    return tuple((key, k) for key, k in counts.items() if k)


# ----------------------------------------------------------------- the plan


@dataclass(frozen=True)
class ScanPlan:
    """The tiling of one cumsum kernel: `lanes` scans of `steps` positions per tile,
    laid out `along` the tile's columns or rows, computed by `method`."""

    along: str
    lanes: int
    steps: int
    method: str

    def tile_shape(self, lanes: int, steps: int) -> tuple[int, int]:
        """(rows, cols) of a tile of `lanes` scans of `steps` positions."""
        return (lanes, steps) if self.along == COLS else (steps, lanes)


@dataclass(frozen=True)
class ScanShape:
    """What a plan depends on: the [pre, n, post] view, the dtype and the attributes."""

    pre: int
    n: int
    post: int
    dtype: str
    exclusive: bool

    @property
    def along(self) -> str:
        return COLS if self.post == 1 else ROWS

    @property
    def lanes_total(self) -> int:
        return self.pre if self.along == COLS else self.post

    @property
    def narrow_out(self) -> bool:
        return self.dtype == "bf16"


def _lane_blocks(s: ScanShape, lanes: int) -> list[tuple[int, int]]:
    """(lanes in the block, how many such blocks)."""
    per = tile_splits(s.lanes_total, lanes)
    return per if s.along == COLS else [(w, c * s.pre) for w, c in per]


def chunk_classes(n: int, steps: int) -> list[tuple[int, bool, bool, int]]:
    """(positions, first, last, count) of the chunks of one scan, in scan order."""
    if n <= steps:
        return [(n, True, True, 1)]
    full, rest = divmod(n, steps)
    last = (rest, False, True, 1) if rest else (steps, False, True, 1)
    middle = full - 1 if rest else full - 2
    return [(steps, True, False, 1), *([(steps, False, False, middle)] if middle else []), last]


def scan_loop(hw: Hardware, s: ScanShape, plan: ScanPlan) -> LoopWork:
    """The instructions of the kernel's tile loop, summed (backend/scan.py emit_scan):
    per tile one load, the chunk's vector program and one store."""
    isz = ITEMSIZE[s.dtype]
    steps = compute = load_cycles = store_cycles = transfer = dram = 0
    floor = 0.0
    for w, wc in _lane_blocks(s, plan.lanes):
        for length, first, last, cc in chunk_classes(s.n, plan.steps):
            count = wc * cc
            loaded = length - 1 if s.exclusive and first else length
            lq = timing.dma_cycles(hw, w * loaded * isz)
            lx = timing.dma_transfer_cycles(hw, w * loaded * isz)
            sq = timing.dma_cycles(hw, w * length * isz)
            sx = timing.dma_transfer_cycles(hw, w * length * isz)
            ops = op_counts(length, plan.method, first, last, s.exclusive, s.narrow_out)
            c = sum(k * timing.vector_cycles(hw, w * size, op) for (op, size), k in ops)
            floor += count * step_cycles(hw, c, 1, lq, lx, sq, sx)
            steps += count
            compute += count * c
            load_cycles += count * lq
            store_cycles += count * sq
            transfer += count * (lx + sx)
            dram += count * w * (loaded + length) * isz
    return LoopWork(
        steps, compute, steps, load_cycles, steps, store_cycles, transfer, dram, 1, math.ceil(floor)
    )


def tile_bytes(s: ScanShape, lanes: int, steps: int) -> int:
    """SRAM of the kernel's tiles: two input slots, p and q, two output slots, the
    carry column, and the alignment slack."""
    isz = ITEMSIZE[s.dtype]
    return lanes * steps * 2 * (2 * isz + ACC_BYTES) + lanes * ACC_BYTES + SRAM_SLACK


def _candidates(hw: Hardware, s: ScanShape) -> list[ScanPlan]:
    """Tiles to try: powers of two positions (and the whole axis) by as many lanes as
    fit, each chunk's in + out at most a quarter of SRAM as in every streaming kernel."""
    isz = ITEMSIZE[s.dtype]
    elements = hw.sram_bytes // 4 // (2 * isz)
    top = max(1, min(s.n, elements))
    sizes = sorted({top, *(1 << k for k in range(1, top.bit_length()) if 1 << k < top)})
    plans = []
    for steps in sizes:
        if steps < min(2, s.n):  # an exclusive scan's first chunk loads steps - 1
            continue
        lanes = min(s.lanes_total, max(1, elements // steps))
        while lanes > 1 and tile_bytes(s, lanes, steps) > hw.sram_bytes:
            lanes //= 2
        if tile_bytes(s, lanes, steps) > hw.sram_bytes:
            continue
        methods = (WALK, TREE) if steps >= 3 and s.dtype != "i32" else (WALK,)
        plans += [ScanPlan(s.along, lanes, steps, m) for m in methods]
    return plans


@functools.lru_cache(maxsize=1 << 10)
def scan_plan(hw: Hardware, s: ScanShape) -> ScanPlan | None:
    """The cheapest tiling by the timing formulas, or None if no tile fits SRAM."""
    best, best_cycles = None, math.inf
    for plan in _candidates(hw, s):
        cycles = loop_cycles(hw, scan_loop(hw, s, plan)).cycles
        if cycles < best_cycles:
            best, best_cycles = plan, cycles
    return best


def scan_shape(x: TensorType, attrs: Mapping[str, object]) -> ScanShape:
    """The ScanShape of cumsum(x, **attrs)."""
    axis = int(attrs["axis"]) % x.rank  # type: ignore[call-overload]
    pre, n, post = scan_geometry(x.shape, axis)
    return ScanShape(pre, n, post, x.dtype.value, bool(attrs["exclusive"]))


def scan_cost(
    hw: Hardware, x: TensorType, attrs: Mapping[str, object], unrunnable: int
) -> KernelCost | None:
    """The cumsum kernel priced instruction by instruction; None when the axis has one
    position (the backend emits no kernel: the result is x, or zeros if exclusive);
    `unrunnable` cycles, infeasible, when not even one tile fits SRAM."""
    s = scan_shape(x, attrs)
    if s.n == 1:
        return None
    plan = scan_plan(hw, s)
    if plan is None:
        return KernelCost(unrunnable, 0, 0, 0, 0, 2 * x.nbytes, feasible=False)
    return loop_cycles(hw, scan_loop(hw, s, plan))
