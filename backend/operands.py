"""Operands of a node's kernel, shared by the lowerers: a node's inputs as leaves of a
tile expression, the value of such an expression (folded, or one streaming kernel),
a view whose rows a row kernel can load, and the parts of a norm fused with a
product."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.ops import REGISTRY

from .ewise import emit_ewise
from .expr import Cvt, Expr, Leaf, fold
from .views import Imm, Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def expr_value(c: Compiler, i: int, node: Node, expr: Expr, leaves: list[View]) -> Value:
    """Node i's value: `expr` over `leaves`, folded to an immediate when it reads none,
    else one streaming kernel into the node's buffer."""
    if not leaves:
        return fold(Cvt(node.type.dtype.value, expr))  # type: ignore[return-value]
    out = c.alloc_value(i, node, keep_last=False)
    add_ewise_kernel(c, i, out, expr, leaves)
    return out


def add_ewise_kernel(
    c: Compiler, i: int, out: View, expr: Expr, leaves: list[View], suffix: str = ""
) -> None:
    """Node i's streaming kernel (its main one, or `suffix`'s): out = expr(leaves)."""
    c.add_kernel(
        c.kernel_name(i, suffix),
        i,
        "main",
        lambda kb: emit_ewise(kb, out, expr, leaves, c.zero()),
        leaves,
        [out],
    )


def operand_exprs(c: Compiler, node: Node) -> tuple[list[Expr], list[View]]:
    """The node's inputs as expressions: immediates as they are, views as leaves."""
    exprs: list[Expr] = []
    leaves: list[View] = []
    for j in node.inputs:
        v = c.value(j)
        if isinstance(v, Imm):
            exprs.append(v)
        else:
            exprs.append(Leaf(len(leaves)))
            leaves.append(v)
    return exprs, leaves


def row_operand(c: Compiler, v: Value, shape: tuple[int, ...], label: str, i: int) -> View:
    """v as a view whose rows are contiguous, copied (a kernel of node i) if not."""
    v = c.as_view(v, shape, label)
    if v.shape and v.shape[-1] > 1 and v.strides[-1] != 1:
        v = c.materialize(v, label, i)
    return v


def norm_params(c: Compiler, i: int, node: Node, count: int, length: int) -> dict[str, View]:
    """A norm fused with a product: its per-row vectors (the operands after the
    product's first `count`, gamma and beta or the RMSNorm weight), `length` long each,
    as row views by operand name."""
    names = node.opdef.operands[count:]
    return {
        name: row_operand(c, c.value(j), (length,), f"{c.label(i)}.{name}", i)
        for name, j in zip(names, node.inputs[count:], strict=True)
    }


def inner_node(node: Node, inner: str, count: int) -> Node:
    """The product inside a fused norm as a node of its own: op `inner` on the first
    `count` inputs, with the attributes it knows."""
    known = {a.name for a in REGISTRY[inner].attrs}
    attrs = tuple((key, v) for key, v in node.attrs if key in known)
    return Node(inner, node.inputs[:count], attrs, node.type, node.name)
