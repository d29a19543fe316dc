"""cumsum: a scan on the vector unit, tiled as eqsat/scan_plan.py plans it.

x is viewed as [pre, n, post] without copying where its strides allow (the scanned
axis contiguous when it is the last one, else the trailing axes contiguous), and
copied row-major otherwise. Per block of lanes, chunks of the axis are loaded in scan
order (double buffered), run through the chunk's vector program (scan_plan.tile_ops:
positions in scan order mapped onto offset sub-tiles, mirrored when reverse), and
stored; the carry tile holds each lane's running total from one chunk to the next.
An axis of length 1 needs no kernel: the result is x, or zeros when exclusive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.scan_plan import (
    COLS,
    Run,
    ScanOp,
    ScanPlan,
    ScanShape,
    scan_geometry,
    scan_plan,
    tile_ops,
)
from hwsim.dtypes import is_float
from hwsim.isa import Binary, DramRef, Instr, Select, Tile, Unary

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .errors import BackendError
from .space import Operand, dram
from .views import Imm, Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_cumsum(c: Compiler, i: int, node: Node) -> Value:
    t = c.graph.nodes[node.inputs[0]].type
    axis = int(node.attr("axis"))  # type: ignore[arg-type]
    exclusive, reverse = bool(node.attr("exclusive")), bool(node.attr("reverse"))
    pre, n, post = scan_geometry(t.shape, axis)
    v = c.value(node.inputs[0])
    if n == 1:
        return Imm(0.0, t.dtype.value) if exclusive else v
    shape3 = (pre, n, post)
    whole = c.as_view(v, t.shape, c.label(i))
    x = whole.reshape(shape3)
    if x is None or x.strides[2 if post > 1 else 1] != 1:  # DMA rows need unit strides
        x = c.materialize(whole, c.label(i), i).reshape(shape3)
    out = c.new_buffer(t.dtype.value, t.shape, c.label(i))
    out3 = out.reshape(shape3)
    s = ScanShape(pre, n, post, t.dtype.value, exclusive)
    plan = scan_plan(c.hw, s)
    if plan is None:
        raise BackendError(f"cumsum of {t}: not even one tile fits the SRAM of {c.hw.name}")
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_scan(kb, x, out3, plan, s, reverse),  # type: ignore[arg-type]
        [x],
        [out],
    )
    return out


class _Chunk:
    """The tiles of one chunk (`lanes` x `n` positions) and its scan-order runs."""

    def __init__(self, plan: ScanPlan, tiles: dict[str, Tile], lanes: int, n: int, reverse: bool):
        self.plan, self.lanes, self.n, self.reverse = plan, lanes, n, reverse
        rows, cols = plan.tile_shape(lanes, n)
        self.tiles = {k: sub(t, rows, cols) for k, t in tiles.items() if k != "carry"}
        carry = (lanes, 1) if plan.along == COLS else (1, lanes)
        self.tiles["carry"] = sub(tiles["carry"], *carry)

    def tile(self, run: Run) -> Tile:
        """The sub-tile of a run: positions mirrored from the end when reverse."""
        t = self.tiles[run.tile]
        if run.tile == "carry":
            return t
        start = self.n - run.start - run.length if self.reverse else run.start
        if self.plan.along == COLS:
            return offset_tile(t, 0, start, self.lanes, run.length)
        return offset_tile(t, start, 0, run.length, self.lanes)

    def instr(self, op: ScanOp) -> Instr:
        dst, a = self.tile(op.dst), self.tile(op.a)
        if op.op == "add":
            return Binary(op="add", dst=dst, a=a, b=self.tile(op.b))  # type: ignore[arg-type]
        if op.op == "copy":
            return Unary(op="copy", dst=dst, src=a)
        return Select(dst=dst, cond=a, imm_a=0.0, imm_b=0.0)


def _span(start: int, length: int, n: int, reverse: bool) -> int:
    """Where scan positions [start, start + length) begin along the axis in memory."""
    return n - start - length if reverse else start


def emit_scan(
    kb: KernelBuilder, x: View, out: View, plan: ScanPlan, s: ScanShape, reverse: bool
) -> None:
    """out = cumsum of x ([pre, n, post] views) along axis 1, as `plan` tiles it."""
    pre, n, post = x.shape
    compute = "f32" if is_float(x.dtype) else "i32"
    rows, cols = plan.tile_shape(plan.lanes, plan.steps)
    xs = kb.alloc2(rows, cols, x.dtype)
    scratch = {"p": kb.alloc(rows, cols, compute), "q": kb.alloc(rows, cols, compute)}
    outs = kb.alloc2(rows, cols, out.dtype)
    carry = kb.alloc(*plan.tile_shape(plan.lanes, 1), compute)
    xo, oo = Operand(x.buf, x.offset, x.strides), Operand(out.buf, out.offset, out.strides)
    shift = 1 if s.exclusive else 0  # output position j sums x up to j - shift
    pipe = Pipeline(kb, "s")
    if plan.along == COLS:  # (x offset, out offset, lanes) of each block of rows
        blocks = [
            (r0 * x.strides[0], r0 * out.strides[0], min(plan.lanes, pre - r0))
            for r0 in range(0, pre, plan.lanes)
        ]
    else:  # ... of each block of contiguous columns of one `pre` index
        blocks = [
            (p * x.strides[0] + c0, p * out.strides[0] + c0, min(plan.lanes, post - c0))
            for p in range(pre)
            for c0 in range(0, post, plan.lanes)
        ]
    starts = list(range(0, n, plan.steps))  # the chunks, in scan order
    for x_base, o_base, lanes in blocks:
        for k, start in enumerate(starts):
            length = min(plan.steps, n - start)
            first, last = k == 0, k == len(starts) - 1
            slot = pipe.slot("x")
            tiles = {"x": xs[slot], **scratch, "out": outs[pipe.out_slot()], "carry": carry}
            chunk = _Chunk(plan, tiles, lanes, length, reverse)
            # position j of the chunk sums x up to scan position start + j - shift: x
            # is loaded that far behind, from position 1 in an exclusive first chunk
            # (position 0 is the empty sum)
            skip = shift if first else 0
            loaded = length - skip
            src = x_base + _span(start + skip - shift, loaded, n, reverse) * x.strides[1]
            dst = chunk.tile(Run("x", skip, loaded))
            gen, _ = pipe.load("x", [(dst, _ref(xo, src, plan, lanes, loaded, x.strides))])
            pipe.begin_out()
            ops = tile_ops(length, plan.method, first, last, s.exclusive, s.narrow_out)
            pipe.compute([chunk.instr(op) for op in ops])
            pipe.release(gen)
            at = o_base + _span(start, length, n, reverse) * out.strides[1]
            ref = _ref(oo, at, plan, lanes, length, out.strides)
            pipe.store([(ref, chunk.tiles["out"])])


def _ref(
    op: Operand, offset: int, plan: ScanPlan, lanes: int, n: int, strides: tuple[int, ...]
) -> DramRef:
    """The DMA of `lanes` scans of n positions from `offset` (relative to the view)."""
    if plan.along == COLS:
        return dram(op, op.offset + offset, lanes, n, strides[0])
    return dram(op, op.offset + offset, n, lanes, strides[1])
