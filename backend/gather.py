"""gather: an embedding lookup as indexed DMA, reading only the rows the indices select.

The table is seen as [A, n, B] (A: the axes before `axis`, n: the indexed axis, B: the
contiguous row after it) and the output as [A, K, B] (K: the indices, flattened).
Per chunk of R indices: load them (an i32 column), normalize them on the vector unit
(i + n where i < 0, then clamped to [0, n - 1]: n * min(relu(-i), 1) is the wrap),
then for each a and each column chunk of B one `gather` instruction fetches R rows
into SRAM and one store writes them out. Index chunks and data tiles are double
buffered; the next chunk's indices are fetched and normalized while this chunk's
rows move (eqsat/spatial_plan.py: gather_plan is the same loop in numbers).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.spatial_plan import gather_plan
from hwsim.isa import Binary, DramRef, Gather, Instr, Load, Store, Unary

from .emit import KernelBuilder, sub
from .views import Imm, Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_gather(c: Compiler, i: int, node: Node) -> Value:
    xj, ij = node.inputs
    tx, ti = c.graph.nodes[xj].type, c.graph.nodes[ij].type
    axis = int(node.attr("axis"))  # type: ignore[arg-type]
    x, idx = c.value(xj), c.value(ij)
    if isinstance(x, Imm):  # every row of a uniform table is the same
        return x
    pre, n, post = math.prod(tx.shape[:axis]), tx.shape[axis], math.prod(tx.shape[axis + 1 :])
    table = x.reshape((pre, n, post))
    if table is None or (post > 1 and table.strides[2] != 1):
        table = c.materialize(x, c.label(i) + ".table", i).reshape((pre, n, post))
    indices = c.as_view(idx, ti.shape, c.label(i) + ".idx").reshape((max(1, ti.numel),))
    if indices is None or (ti.numel > 1 and indices.strides[0] != 1):
        flat = c.materialize(c.as_view(idx, ti.shape, c.label(i)), c.label(i) + ".idx", i)
        indices = flat.reshape((max(1, ti.numel),))
    out = c.new_buffer(tx.dtype.value, node.type.shape, c.label(i))
    out3 = out.reshape((pre, ti.numel, post))
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_gather(kb, table, indices, out3),  # type: ignore[arg-type]
        [table, indices],
        [out],
    )
    return out


def _normalize(raw, tmp, dst, n: int) -> list[Instr]:
    """dst = clamp(i + n * (i < 0), 0, n - 1) with integer ALU ops only."""
    return [
        Unary(op="neg", dst=tmp, src=raw),
        Unary(op="relu", dst=tmp, src=tmp),
        Binary(op="min", dst=tmp, a=tmp, imm=1.0),
        Binary(op="mul", dst=tmp, a=tmp, imm=float(n)),
        Binary(op="add", dst=dst, a=raw, b=tmp),
        Binary(op="max", dst=dst, a=dst, imm=0.0),
        Binary(op="min", dst=dst, a=dst, imm=float(n - 1)),
    ]


def emit_gather(kb: KernelBuilder, table: View, indices: View, out: View) -> None:
    """out[a, k, :] = table[a, clamp(indices[k]), :] (out and table rows contiguous)."""
    pre, n, post = table.shape
    k_total = indices.shape[0]
    plan = gather_plan(kb.hw, pre, n, post, k_total, table.dtype)
    rt, ct = plan.rows, plan.cols
    raw, norm = kb.alloc2(rt, 1, "i32"), kb.alloc2(rt, 1, "i32")
    tmp = kb.alloc(rt, 1, "i32")
    data = kb.alloc2(rt, ct, table.dtype)
    ib, tb, ob = indices.buf, table.buf, out.buf
    assert ib.phys and tb.phys and ob.phys
    tok = {name: kb.token(kb.fresh(name)) for name in ("rl", "rf", "nr", "nf", "dr", "df")}

    def t(name: str, slot: int) -> str:
        return f"{tok[name]}.{slot}"

    chunks = [(k0, min(rt, k_total - k0)) for k0 in range(0, k_total, rt)]

    def prepare(g: int) -> None:
        k0, rn = chunks[g]
        slot = g % 2
        ref = DramRef(ib.phys, ib.base + indices.offset + k0, rn, 1, 1)  # type: ignore[arg-type]
        wait = (t("rf", slot),) if g >= 2 else ()
        kb.emit(Load(dst=sub(raw[slot], rn, 1), src=ref, wait=wait, signal=(t("rl", slot),)))
        body = _normalize(sub(raw[slot], rn, 1), sub(tmp, rn, 1), sub(norm[slot], rn, 1), n)
        # the indices have landed, and (two chunks on) the gathers reading this slot are done
        wait = (t("rl", slot), *((t("nf", slot),) if g >= 2 else ()))
        body[0] = dataclasses.replace(body[0], wait=wait)
        body[-1] = dataclasses.replace(body[-1], signal=(t("rf", slot), t("nr", slot)))
        for ins in body:
            kb.emit(ins)

    step = 0
    for g, (k0, rn) in enumerate(chunks):
        if g == 0:
            prepare(0)
        if g + 1 < len(chunks):
            prepare(g + 1)
        slot = g % 2
        pieces = [(a, c0, min(ct, post - c0)) for a in range(pre) for c0 in range(0, post, ct)]
        for p, (a, c0, cn) in enumerate(pieces):
            d = step % 2
            wait = ((t("nr", slot),) if p == 0 else ()) + ((t("df", d),) if step >= 2 else ())
            signal = (t("dr", d), *((t("nf", slot),) if p == len(pieces) - 1 else ()))
            src = DramRef(
                tb.phys,  # type: ignore[arg-type]
                tb.base + table.offset + a * table.strides[0] + c0,
                n,
                cn,
                table.strides[1] if n > 1 else cn,
            )
            tile = sub(data[d], rn, cn)
            kb.emit(
                Gather(dst=tile, src=src, index=sub(norm[slot], rn, 1), wait=wait, signal=signal)
            )
            dst = DramRef(
                ob.phys,  # type: ignore[arg-type]
                ob.base + out.offset + a * out.strides[0] + k0 * out.strides[1] + c0,
                rn,
                cn,
                out.strides[1] if rn > 1 else cn,
            )
            kb.emit(Store(dst=dst, src=tile, wait=(t("dr", d),), signal=(t("df", d),)))
            step += 1
