"""Zero-point corrections of integer products, as terms of the GEMM's epilogue:
(a - za) @ (b - zb) = a@b - za*colsum(b) - zb*rowsum(a) + K*za*zb. The weight sums
are folded at compile time, fed by the host at load time, or computed by a reduction
kernel (`weight_sums`); a convolution's epilogue and its leaves are laid out on its
GEMM output with them (`conv_gemm_epilogue`).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import TYPE_CHECKING

import numpy as np

from eqsat.ir.graph import Node
from eqsat.ops import REGISTRY, OpKind

from .expr import Bin, Expr, Leaf
from .rowwise import emit_reduce
from .views import Imm, View

if TYPE_CHECKING:
    from .compiler import Compiler


def weight_value(c: Compiler, node: Node) -> np.ndarray | None:
    """The value of the contraction's second operand (the weights) if the compiler
    knows it (a quantized program's params), else None."""
    j = _weight_node(node)
    return None if j is None else c.compile_time_value(j)


def _weight_node(node: Node) -> int | None:
    """The graph node of the contraction's second operand (the weights)."""

    def find(body):
        if isinstance(body, str):
            return None
        if REGISTRY[body.op].kind in (OpKind.MATMUL, OpKind.CONV):
            return body
        return next((f for a in body.args if (f := find(a)) is not None), None)

    op = node.opdef
    if op.kind is not OpKind.FUSED:
        return node.inputs[1]
    call = find(op.composition)
    name = call.args[1] if call is not None else None
    if not isinstance(name, str):
        return None
    return node.inputs[op.operands.index(name)]


def conv_gemm_epilogue(
    c: Compiler, i: int, node, wmat: View, za: int, out: View, epi, leaves: list
) -> tuple[View, Expr | None, list[View]]:
    """A convolution's GEMM output [N, O, pixels] with its epilogue and leaves laid out
    on it. With a zero point za: sum((x - za) * w) = sum(x * w) - za * sum(w), the
    weight sums (of `wmat`, [O, C*KH*KW]) a leaf of the epilogue."""
    n, o = out.shape[0], out.shape[1]
    if za:
        ws = weight_sums(c, i, wmat, weight_value(c, node), (1, 2, 3), ".wsum", node)
        q: Expr = Bin("sub", Leaf(0), Bin("mul", Leaf(1 + len(leaves)), Imm(za, "i32")))
        epi = q if epi is None else substitute_acc(epi, q)
        leaves = [*leaves, ws.reshape((o, 1, 1))]
    out3 = out.reshape((n, o, out.shape[2] * out.shape[3]))
    assert out3 is not None
    l3 = []
    for v in leaves:
        b = v.broadcast_to(out.shape)
        r = b.reshape(out3.shape)
        l3.append(r if r is not None else c.materialize(b, c.label(i), i).reshape(out3.shape))
    return out3, epi, l3


def weight_sums(
    c: Compiler, i: int, w: View, known: np.ndarray | None, axes, suffix: str, node=None
):
    """Sums of the weights over `axes` (a zero-point correction): computed here when
    the weights are known at compile time, as TFLite folds them offline; by the host at
    load time when they are params (or weights prepared from params: eqsat/weights.py),
    whose values are fixed for every inference; else by a reduction kernel over `w`
    (its last axis summed). The cost model prices the first two at nothing."""
    if known is not None:
        sums = np.asarray(known, dtype=np.int64).sum(axis=axes).astype(np.int32)
        return c.constant_buffer(c.label(i) + suffix, "i32", sums)
    j = None if node is None else _weight_node(node)
    if j is not None and j in c.weights:  # params, or computed from them (a view of one)
        return c.prepared_sums(j, axes, c.label(i) + suffix)
    return row_sums(c, i, w, suffix)


def zero_point_epilogue(c, i, a: View, b: View, attrs, epi, leaves, b_value=None, node=None):
    """(a - za) @ (b - zb) = a@b - za*colsum(b) - zb*rowsum(a) + K*za*zb."""
    za, zb = int(attrs["a_zero"]), int(attrs["b_zero"])
    k = a.shape[-1]
    q: Expr = Leaf(0)
    extra: list[View] = []
    base = 1 + len(leaves)
    if za:
        bt = b.permute((*range(len(b.shape) - 2), len(b.shape) - 1, len(b.shape) - 2))
        cs = weight_sums(c, i, bt, b_value, -2, ".colsum", node)
        extra.append(cs.reshape((*cs.shape[:-1], 1, cs.shape[-1])))  # type: ignore[arg-type]
        q = Bin("sub", q, Bin("mul", Leaf(base), Imm(za, "i32")))
    if zb:
        rs = row_sums(c, i, a, ".rowsum")
        extra.append(rs.reshape((*rs.shape, 1)))  # type: ignore[arg-type]
        q = Bin("sub", q, Bin("mul", Leaf(base + len(extra) - 1), Imm(zb, "i32")))
    if za and zb:
        q = Bin("add", q, Imm(k * za * zb, "i32"))
    if epi is not None:
        q = substitute_acc(epi, q)
    return q, [*leaves, *extra]


def row_sums(c: Compiler, i: int, x: View, suffix: str) -> View:
    """The i32 sums of x over its last axis: a reduction kernel (a prep kernel of node i)."""
    if x.shape[-1] > 1 and x.strides[-1] != 1:
        x = c.materialize(x, c.label(i) + suffix, i)
    out = c.new_buffer("i32", x.shape[:-1], c.label(i) + suffix)
    c.add_kernel(
        c.kernel_name(i, suffix),
        i,
        "prep",
        lambda kb: emit_reduce(kb, x, out, "sum", False),
        [x],
        [out],
    )
    return out


def substitute_acc(e: Expr, by: Expr) -> Expr:
    """The epilogue e with its accumulator, Leaf(0), replaced by `by` (the corrected
    accumulator)."""
    if e == Leaf(0):
        return by
    if isinstance(e, Leaf | Imm):
        return e
    return replace(
        e,
        **{
            f.name: substitute_acc(getattr(e, f.name), by)
            for f in fields(e)
            if f.name in ("x", "a", "b", "c", "cond")
        },
    )
