"""attention / attention_masked: one kernel, scores kept on chip (flash attention).

The plan (tile shape) and the tile program come from eqsat/attention_plan.py, which
the cost model prices; this module walks the blocks and emits that program one
instruction per op. Operands are read in place where their strides allow: q and v
need contiguous rows, kt either contiguous rows ([d, T]) or, as exporters write it, a
transposed view of k (contiguous in d: loaded as [tk, d] and turned on chip); a mask
broadcast over the queries is one row per key block. Leading axes (batch, heads)
broadcast with stride 0, so grouped-query k/v written as a broadcast view are read in
place. Anything else is first copied row-major. Several heads per step (the plan's
`heads`) are loaded side by side, each head's DMA into its part of the tile.

The steps are software-pipelined over the compute and vector queues (the module doc of
eqsat/attention_plan.py); every cross-queue read is ordered by a token (scores ready,
probabilities ready, output accumulated, keys turned), and the loads go in the order
their slots come free: keys two steps ahead, q, mask and v one.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from eqsat.attention_plan import (
    F32_TILES,
    MASK_FULL,
    MASK_NONE,
    MASK_ROW,
    AttnOp,
    AttnPlan,
    AttnShape,
    AttnStep,
    attention_steps,
    op_gemv,
    part_region,
    pipelined,
    rescales_output,
    sram_tiles,
    step_events,
    step_phases,
    tile_dims,
    zero_tiles,
)
from eqsat.attention_price import attention_plan
from eqsat.ir.graph import Node
from hwsim.isa import Binary, Instr, Matmul, Move, Reduce, Tile, Transpose, Unary

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .errors import BackendError
from .gemm import gemv_step
from .space import Operand, dram
from .views import Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def _unit(v: View, axis: int) -> bool:
    return v.shape[axis] == 1 or v.strides[axis] == 1


def _rows_view(c: Compiler, v: View, label: str) -> View:
    """v, or a row-major copy when its last axis is not contiguous."""
    return v if _unit(v, -1) else c.materialize(v, label)


def lower_attention(c: Compiler, i: int, node: Node) -> Value:
    ts = [c.graph.nodes[j].type for j in node.inputs]
    label = c.label(i)
    out_shape = node.type.shape
    batch = out_shape[:-2]
    views = [c.as_view(c.value(j), t.shape, label) for j, t in zip(node.inputs, ts, strict=True)]
    q = _rows_view(c, views[0], f"{label}.q")
    v = _rows_view(c, views[2], f"{label}.v")
    kt = views[1]
    transpose_k = not _unit(kt, -1)
    if transpose_k and not _unit(kt, -2):  # neither rows nor columns contiguous
        kt, transpose_k = c.materialize(kt, f"{label}.kt"), False
    s_len, t_len = out_shape[-2], kt.shape[-1]
    q = q.broadcast_to((*batch, *q.shape[-2:]))
    kt = kt.broadcast_to((*batch, *kt.shape[-2:]))
    v = v.broadcast_to((*batch, *v.shape[-2:]))
    mask, mask_kind = None, MASK_NONE
    if len(views) > 3:
        m = views[3]
        full = (*batch, s_len, t_len)
        if not _unit(m.broadcast_to(full), -1):  # broadcast over the keys: write it out
            m = c.materialize(m.broadcast_to(full), f"{label}.mask")
        mask = m.broadcast_to(full)
        row = len(m.shape) < 2 or m.shape[-2] == 1  # as attention_shape prices it
        mask_kind = MASK_ROW if row else MASK_FULL
    scale = float(node.attr("scale"))  # type: ignore[arg-type]
    s = AttnShape(
        batch=int(np.prod(batch, dtype=np.int64)),
        s=s_len,
        t=t_len,
        d=q.shape[-1],
        dv=v.shape[-1],
        dtype=q.dtype,
        mask=mask_kind,
        scale=scale,
        transpose_k=transpose_k,
    )
    plan = attention_plan(c.hw, s)
    if plan is None:
        raise BackendError(f"{node.op} of {node.type}: no tile fits {c.hw.name}")
    out = c.alloc_value(i, node, keep_last=True)
    reads = [x for x in (q, kt, v, mask) if x is not None]
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_attention(kb, q, kt, v, mask, out, s, plan),
        reads,
        [out],
    )
    return out


def _at(op: Operand, base: int, row: int, col: int) -> int:
    """Element (row, col) of the matrix starting at `base` in op's buffer."""
    return base + row * op.strides[-2] + col * op.strides[-1]


def _lead_offset(op: Operand, idx: tuple[int, ...]) -> int:
    """Where the [rows, cols] matrix of leading index `idx` starts in op's buffer."""
    return op.offset + sum(i * st for i, st in zip(idx, op.strides, strict=False))


PER_STEP = ("k", "kt", "mask", "v", "sacc", "s", "vt", "pt")  # slots alternating step by step


def _instr(op: AttnOp, t: dict[str, Tile], part, vector_queue: bool) -> Instr:
    """The hwsim instruction of one op of the tile program (`part(name, h)`: head h's
    region of a tile); a vector-unit op on the vector queue if `vector_queue`."""

    def tile(name: str) -> Tile:
        return t[name] if op.part is None else part(name, op.part)

    vq = {"vector_queue": vector_queue}
    if op.kind == "matmul":
        return Matmul(acc=tile(op.dst), a=tile(op.a), b=tile(op.b), mode=op.mode)  # type: ignore[arg-type]
    if op.kind == "transpose":
        return Transpose(dst=tile(op.dst), src=tile(op.a), **vq)
    if op.kind == "move":
        return Move(dst=tile(op.dst), src=tile(op.a), **vq)
    if op.kind == "unary":
        return Unary(op=op.op, dst=tile(op.dst), src=tile(op.a), **vq)
    if op.kind == "reduce":
        return Reduce(op=op.op, dst=tile(op.dst), src=tile(op.a), **vq)
    b = None if op.b is None else tile(op.b)
    return Binary(op=op.op, dst=tile(op.dst), a=tile(op.a), b=b, imm=op.imm, bcast=op.bcast, **vq)


@dataclass(frozen=True)
class _Step(AttnStep):
    """A step as emitted: where its heads' operands start, and its tiles, load
    generations and their tokens as the emission goes."""

    bases: list[dict[str, int]] = field(default_factory=list)  # per head: q, k, v, out, m
    tiles: dict[str, Tile] = field(default_factory=dict)
    gens: dict[str, tuple | None] = field(default_factory=dict)  # k, m(ask), v channels
    waits: dict[str, list[str]] = field(default_factory=dict)  # their loads' tokens


def emit_attention(
    kb: KernelBuilder,
    q: View,
    kt: View,
    v: View,
    mask: View | None,
    out: View,
    s: AttnShape,
    plan: AttnPlan,
) -> None:
    """out = attention over every leading index, as `plan` tiles it: `plan.heads`
    leading indices per step, side by side (kt and v block-diagonal), the steps
    software-pipelined over the compute and vector queues (attention_plan's module
    doc): in program order the loads, pre-phase and first matmul of step n + 1, then
    the softmax and second matmul of step n, then the division and store of step n - 1."""
    g = plan.heads
    slots: dict[str, tuple[Tile, ...]] = {}
    for name, rows, cols, count in sram_tiles(s, plan):
        dtype = "f32" if name in F32_TILES else s.dtype
        slots[name] = tuple(kb.alloc(rows, cols, dtype) for _ in range(count))
    for name, cols in (("sacc", g * plan.tk), ("oacc", g * s.dv)):
        slots[name] = tuple(kb.alloc(plan.rq, cols, "f32", "acc") for _ in range(2))
    phases = {
        (f, la): step_phases(s, f, la, g, plan.out_t) for f in (True, False) for la in (True, False)
    }
    pipe = Pipeline(kb, "a")
    tok = {n: kb.token(f"{pipe.tag}{n}") for n in ("kt", "sc", "pr", "ov", "od")}
    qo, ko, vo, oo = (Operand(x.buf, x.offset, x.strides) for x in (q, kt, v, out))
    mo = None if mask is None else Operand(mask.buf, mask.offset, mask.strides)
    zero: list[str] = []
    names = zero_tiles(s, plan)
    if names:  # off-diagonal blocks: zero padding of a one-element load, once
        seen: dict[str, int] = {}
        pairs = []
        for name in names:
            j = seen.get(name, 0)
            seen[name] = j + 1
            pairs.append((slots[name][j], dram(qo, qo.offset, 1, 1, 1)))
        zero = pipe.load("z", pairs, pend=False)[1]
    steps = _steps(s, plan, out, [("q", qo), ("k", ko), ("v", vo), ("o", oo), ("m", mo)])
    qgens: dict[int, tuple] = {}
    overlap = pipelined(kb.hw, s, plan)

    def part_of(t: dict[str, Tile], rn: int, kn: int):
        def part(name: str, h: int) -> Tile:
            return offset_tile(t[name], *part_region(s, name, h, rn, kn, plan.out_t))

        return part

    def run(st: _Step, ops: list[AttnOp], vector: bool, wait=(), signal=()) -> tuple[int, int]:
        """Emit `ops` of step st (the first waits on `wait`, the last signals `signal`);
        returns the indices of its first and last instruction."""
        t, part = st.tiles, part_of(st.tiles, st.rn, st.kn)
        dims = tile_dims(s, st.rn, st.kn, g, plan.out_t)
        instrs: list[Instr] = []
        rescale = True
        for op in ops:
            if op_gemv(kb.hw, s, op, dims):  # one query row: on the vector unit
                instrs += gemv_step(kb.hw, t[op.dst], t[op.a], t[op.b], op.mode)  # type: ignore[index]
            else:
                ins = _instr(op, t, part, vector)
                if rescale and rescales_output(op):  # after mm2(n - 1)
                    ins, rescale = dataclasses.replace(ins, wait=(tok["ov"],)), False
                instrs.append(ins)
        instrs[0] = dataclasses.replace(instrs[0], wait=(*instrs[0].wait, *wait))
        instrs[-1] = dataclasses.replace(instrs[-1], signal=(*instrs[-1].signal, *signal))
        start = len(kb.instrs)
        for ins in instrs:
            kb.emit(ins)
        return start, len(kb.instrs) - 1

    def load_k(n: int) -> None:
        """The keys of step n (two steps ahead: their slot is free once turned)."""
        st = steps[n]
        dims = tile_dims(s, st.rn, st.kn, g, plan.out_t)
        for name, ts in slots.items():  # per step, or per stream (q, statistics, output)
            j = n % 2 if name in PER_STEP else st.stream % 2
            st.tiles[name] = sub(ts[j], *dims[name])
        st.tiles["q"] = sub(slots["q"][st.stream % 2], st.rn, g * s.d)
        part = part_of(st.tiles, st.rn, st.kn)
        pairs = []
        for h, b in enumerate(st.bases):
            if s.transpose_k:  # rows of k: [kn, d] at key k0, contiguous in d
                ref = dram(ko, _at(ko, b["k"], 0, st.k0), st.kn, s.d, kt.strides[-1])
                pairs.append((part("k", h), ref))
            else:
                ref = dram(ko, _at(ko, b["k"], 0, st.k0), s.d, st.kn, kt.strides[-2])
                pairs.append((part("kt", h), ref))
        st.gens["k"], st.waits["k"] = pipe.load("k", pairs, pend=False)

    def load_rest(n: int) -> None:
        """q (at a stream's first step), mask and v of step n (one step ahead)."""
        st = steps[n]
        part = part_of(st.tiles, st.rn, st.kn)
        st.waits["q"] = []
        if st.first:
            qpairs = [
                (part("q", h), _qref(qo, b, st.r0, st.rn, s, q)) for h, b in enumerate(st.bases)
            ]
            qgens[st.stream], st.waits["q"] = pipe.load("q", qpairs, pend=False)
        mpairs, vpairs = [], []
        for h, b in enumerate(st.bases):
            if mo is not None:
                mrows = tile_dims(s, st.rn, st.kn, g, plan.out_t)["mask"][0]
                stride = mask.strides[-2] if s.mask == MASK_FULL else st.kn  # type: ignore[union-attr]
                ref = dram(mo, _at(mo, b["m"], st.r0, st.k0), mrows, st.kn, stride)
                mpairs.append((part("mask", h), ref))
            ref = dram(vo, _at(vo, b["v"], st.k0, 0), st.kn, s.dv, v.strides[-2])
            vpairs.append((part("v", h), ref))
        for ch, pairs in (("m", mpairs), ("v", vpairs)):
            st.gens[ch], st.waits[ch] = pipe.load(ch, pairs, pend=False)

    def front(n: int) -> None:
        """Step n's keys' transpose (vector) and first matmul (compute)."""
        st = steps[n]
        first_zero = zero if n == 0 else []
        pre, mm1 = phases[(st.first, st.last)][:2]
        if pre:  # keys turned on the vector unit: their slot is free after
            _, end = run(st, pre, overlap, (*st.waits["k"], *first_zero), (tok["kt"],))
            pipe.release(st.gens["k"], at=end)
            wait = [tok["kt"], *st.waits["q"]]
        else:
            wait = [*st.waits["k"], *first_zero, *st.waits["q"]]
        _, end = run(st, mm1, False, wait, (tok["sc"],))
        if not pre:
            pipe.release(st.gens["k"], at=end)
        if st.last:  # the stream's last scores: its q slot is free
            pipe.release(qgens.pop(st.stream), at=end)

    def back(n: int) -> None:
        """Softmax of step n (vector) and its second matmul (compute)."""
        st = steps[n]
        sm, mm2 = phases[(st.first, st.last)][2:4]
        vin = st.waits["v"] if plan.out_t else []  # v turned on the vector unit
        _, end = run(st, sm, overlap, (tok["sc"], *st.waits["m"], *vin), (tok["pr"],))
        pipe.release(st.gens["m"], at=end)  # the mask read: the next may load
        if plan.out_t:
            pipe.release(st.gens["v"], at=end)
        done = tok["od"] if st.last else tok["ov"]
        vin = [] if plan.out_t else st.waits["v"]
        _, end = run(st, mm2, False, (tok["pr"], *vin), (done,))
        if not plan.out_t:
            pipe.release(st.gens["v"], at=end)

    def post(n: int) -> None:
        """Division of step n's output by the row sums (vector), then its store."""
        st = steps[n]
        st.tiles["out"] = sub(slots["out"][pipe.out_slot()], st.rn, g * s.dv)
        free = pipe.begin_out(pend=False)
        ops = phases[(st.first, st.last)][4]
        _, end = run(st, ops, overlap, (tok["od"], *free))
        part = part_of(st.tiles, st.rn, st.kn)
        pipe.store(
            [
                (dram(oo, _at(oo, b["o"], st.r0, 0), st.rn, s.dv, out.strides[-2]), part("out", h))
                for h, b in enumerate(st.bases)
            ],
            at=end,
        )

    # loads in the order their slots come free: keys two steps ahead, the rest one
    parts = {"k": load_k, "rest": load_rest, "front": front, "back": back, "post": post}
    for part, n in step_events([st.last for st in steps], overlap):
        parts[part](n)


def _steps(s: AttnShape, plan: AttnPlan, out: View, operands) -> list[_Step]:
    """attention_steps, each with where its heads' operands start in DRAM."""
    lead = out.shape[:-2]
    heads = list(itertools.product(*(range(n) for n in lead)))
    steps = []
    for a in attention_steps(s, plan):
        bases = [
            {n: _lead_offset(x, idx) for n, x in operands if x is not None}
            for idx in heads[a.group : a.group + plan.heads]
        ]
        steps.append(_Step(**{f.name: getattr(a, f.name) for f in fields(a)}, bases=bases))
    return steps


def _qref(qo: Operand, base: dict[str, int], r0: int, rn: int, s: AttnShape, q: View):
    return dram(qo, _at(qo, base["q"], r0, 0), rn, s.d, q.strides[-2])
