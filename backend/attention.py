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
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from eqsat.attention_plan import (
    MASK_FULL,
    MASK_NONE,
    MASK_ROW,
    STATS,
    AttnOp,
    AttnPlan,
    AttnShape,
    attention_plan,
    key_blocks,
    op_gemv,
    part_region,
    sram_tiles,
    step_ops,
    tile_dims,
    zero_tiles,
)
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


def _instr(op: AttnOp, t: dict[str, Tile], part) -> Instr:
    """The hwsim instruction of one op of the tile program (`part(name, h)`: head h's
    region of a tile)."""

    def tile(name: str) -> Tile:
        return t[name] if op.part is None else part(name, op.part)

    if op.kind == "matmul":
        return Matmul(acc=tile(op.dst), a=tile(op.a), b=tile(op.b), mode=op.mode)  # type: ignore[arg-type]
    if op.kind == "transpose":
        return Transpose(dst=tile(op.dst), src=tile(op.a))
    if op.kind == "move":
        return Move(dst=tile(op.dst), src=tile(op.a))
    if op.kind == "unary":
        return Unary(op=op.op, dst=tile(op.dst), src=tile(op.a))
    if op.kind == "reduce":
        return Reduce(op=op.op, dst=tile(op.dst), src=tile(op.a))
    b = None if op.b is None else tile(op.b)
    return Binary(op=op.op, dst=tile(op.dst), a=tile(op.a), b=b, imm=op.imm, bcast=op.bcast)


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
    leading indices per step, side by side (kt and v block-diagonal)."""
    g = plan.heads
    slots: dict[str, tuple[Tile, ...]] = {}
    for name, rows, cols, count in sram_tiles(s, plan):
        dtype = "f32" if name == "s" or name in STATS else s.dtype
        slots[name] = tuple(kb.alloc(rows, cols, dtype) for _ in range(count))
    slots["sacc"] = (kb.alloc(plan.rq, g * plan.tk, "f32", "acc"),)
    slots["oacc"] = (kb.alloc(plan.rq, g * s.dv, "f32", "acc"),)
    ops = {(f, la): step_ops(s, f, la, g) for f in (True, False) for la in (True, False)}
    pipe = Pipeline(kb, "a")
    qo, ko, vo, oo = (Operand(x.buf, x.offset, x.strides) for x in (q, kt, v, out))
    mo = None if mask is None else Operand(mask.buf, mask.offset, mask.strides)
    names = zero_tiles(s, plan)
    if names:  # off-diagonal blocks: zero padding of a one-element load, once
        seen: dict[str, int] = {}
        pairs = []
        for name in names:
            j = seen.get(name, 0)
            seen[name] = j + 1
            pairs.append((slots[name][j], dram(qo, qo.offset, 1, 1, 1)))
        pipe.load("z", pairs)
    blocks = key_blocks(s.t, plan.tk)
    lead = out.shape[:-2]
    heads = list(itertools.product(*(range(n) for n in lead)))
    for g0 in range(0, len(heads), g):
        group = heads[g0 : g0 + g]
        bases = [
            {n: _lead_offset(x, idx) for n, x in (("q", qo), ("k", ko), ("v", vo), ("o", oo))}
            | ({"m": _lead_offset(mo, idx)} if mo is not None else {})
            for idx in group
        ]
        for r0 in range(0, s.s, plan.rq):
            rn = min(plan.rq, s.s - r0)
            qt = sub(slots["q"][pipe.slot("q")], rn, g * s.d)
            qgen, _ = pipe.load(
                "q",
                [
                    (offset_tile(qt, *part_region(s, "q", h, rn, 0)), _qref(qo, b, r0, rn, s, q))
                    for h, b in enumerate(bases)
                ],
            )
            k0 = 0
            for kn, first, last in blocks:
                dims = tile_dims(s, rn, kn, g)
                slot = pipe.slot("kv")
                t = {n: sub(ts[slot % len(ts)], *dims[n]) for n, ts in slots.items()}
                t["q"] = qt
                if last:
                    pipe.begin_out()
                    t["out"] = sub(slots["out"][pipe.out_slot()], *dims["out"])

                def part(name: str, h: int, t=t, rn=rn, kn=kn) -> Tile:
                    return offset_tile(t[name], *part_region(s, name, h, rn, kn))

                pairs = []
                for h, b in enumerate(bases):
                    if s.transpose_k:  # rows of k: [kn, d] at key k0, contiguous in d
                        ref = dram(ko, _at(ko, b["k"], 0, k0), kn, s.d, kt.strides[-1])
                        pairs.append((part("k", h), ref))
                    else:
                        ref = dram(ko, _at(ko, b["k"], 0, k0), s.d, kn, kt.strides[-2])
                        pairs.append((part("kt", h), ref))
                    ref = dram(vo, _at(vo, b["v"], k0, 0), kn, s.dv, v.strides[-2])
                    pairs.append((part("v", h), ref))
                    if mo is not None:
                        mrows = dims["mask"][0]
                        stride = mask.strides[-2] if s.mask == MASK_FULL else kn  # type: ignore[union-attr]
                        ref = dram(mo, _at(mo, b["m"], r0, k0), mrows, kn, stride)
                        pairs.append((part("mask", h), ref))
                gen, _ = pipe.load("kv", pairs)
                instrs: list[Instr] = []
                for op in ops[(first, last)]:
                    if op_gemv(kb.hw, s, op, dims):  # one query row: on the vector unit
                        instrs += gemv_step(kb.hw, t[op.dst], t[op.a], t[op.b], op.mode)  # type: ignore[index]
                    else:
                        instrs.append(_instr(op, t, part))
                pipe.compute(instrs)
                pipe.release(gen)
                k0 += kn
            pipe.release(qgen)
            pipe.store(
                [
                    (
                        dram(oo, _at(oo, b["o"], r0, 0), rn, s.dv, out.strides[-2]),
                        part("out", h),
                    )
                    for h, b in enumerate(bases)
                ]
            )


def _qref(qo: Operand, base: dict[str, int], r0: int, rn: int, s: AttnShape, q: View):
    return dram(qo, _at(qo, base["q"], r0, 0), rn, s.d, q.strides[-2])
