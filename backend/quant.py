"""Lowering of the quantization ops that are not plain tile expressions.

`requantize_pc` (per-channel requantization) becomes a `RequantCh` tile expression:
one hwsim `requantize` per tile column with that channel's fixed-point multiplier and
shift as immediates. Immediates need the channel scales at compile time, so its scale
operand must be a const or a param whose value the compiler was given
(`compile_graph(..., consts=)`; the quantization pass computes those params). It is a
standalone elementwise kernel or, inside a fused int8 kernel, part of the epilogue.

`observe` is an annotation (x itself): it lowers to x's value, no kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.graph import Node
from eqsat.ops.quant import requantize_pc_tables

from .errors import BackendError
from .expr import Expr, Leaf, Requant, RequantCh
from .operands import expr_value, operand_exprs
from .views import Imm, Value


def requantize_pc_expr(args: Sequence[Expr], attrs: dict, values: Sequence) -> Expr:
    """The tile expression of requantize_pc(x, s) with s's values known."""
    x, s = args[0], args[1]
    s_values = values[1]
    if s_values is None:
        raise BackendError(
            "requantize_pc needs its channel scales at compile time: the scale operand "
            "must be a const or a param given to compile_graph(consts=...)"
        )
    mult, shift = requantize_pc_tables(s_values, float(attrs["scale"]))
    zp, rounding = int(attrs["zero_point"]), str(attrs["rounding"])
    lo = max(-128, zp) if attrs["relu"] else -128
    table = tuple(zip(mult.reshape(-1).tolist(), shift.reshape(-1).tolist(), strict=True))
    if len(set(table)) == 1 or not isinstance(s, Leaf):
        m, k = table[0]
        expr: Expr = Requant(x, m, k, zp, rounding)
        if lo > -128:
            from .expr import Bin

            expr = Bin("max", expr, Imm(lo, "i32"))
        return expr
    return RequantCh(x, s, table, zp, lo, rounding)


def requantize_ch_expr(args: Sequence[Expr], attrs: dict, values: Sequence) -> Expr:
    """The tile expression of requantize_ch(x, s) with s's values known: one
    `requantize` per channel (row or column of a tile), then the clamp's bounds."""
    from eqsat.ops.quant_conv import clamp_bounds, requantize_ch_tables

    x, s = args[0], args[1]
    if values[1] is None:
        raise BackendError(
            "requantize_ch needs its channel scales at compile time: the scale operand "
            "must be a const or computed from params given to compile_graph(consts=...)"
        )
    mult, shift = requantize_ch_tables(values[1], float(attrs["scale"]))
    zp, rounding = int(attrs["zero_point"]), str(attrs["rounding"])
    lo, hi = clamp_bounds(float(attrs["scale"]), zp, attrs["min"], attrs["max"])
    table = tuple(zip(mult.reshape(-1).tolist(), shift.reshape(-1).tolist(), strict=True))
    if len(set(table)) == 1 or not isinstance(s, Leaf):
        from .expr import Bin

        m, k = table[0]
        expr: Expr = Requant(x, m, k, zp, rounding)
        if lo > -128:
            expr = Bin("max", expr, Imm(lo, "i32"))
        if hi < 127:
            expr = Bin("min", expr, Imm(hi, "i32"))
        return expr
    return RequantCh(x, s, table, zp, lo, rounding, hi)


VALUE_EXPR = {"requantize_pc": requantize_pc_expr, "requantize_ch": requantize_ch_expr}


def lower_requantize_pc(c, i: int, node: Node) -> Value:
    exprs, leaves = operand_exprs(c, node)
    s_node = node.inputs[1]
    if isinstance(c.value(s_node), Imm):
        values = [None, np.asarray(c.value(s_node).value)]  # type: ignore[union-attr]
    else:
        values = [None, c.compile_time_value(s_node)]
        v = leaves[-1]
        if v.shape and v.shape[-1] > 1 and v.strides[-1] != 1:
            leaves[-1] = c.materialize(v, c.label(i) + ".scales", i)
        if isinstance(exprs[0], Imm):  # one accumulator value, per-channel results: a tile
            x_type = c.graph.nodes[node.inputs[0]].type
            leaves.append(c.as_view(exprs[0], x_type.shape, c.label(i)))
            exprs = [Leaf(len(leaves) - 1), *exprs[1:]]
    build = VALUE_EXPR[node.op]
    return expr_value(c, i, node, build(exprs, node.attr_dict, values), leaves)


def lower_observe(c, i: int, node: Node) -> Value:
    return c.value(node.inputs[0])


LOWER_QUANT = {
    "requantize_pc": lower_requantize_pc,
    "requantize_ch": lower_requantize_pc,  # the same lowering: scales known, a leaf
    "observe": lower_observe,
}
