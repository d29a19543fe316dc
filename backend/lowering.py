"""The lowering table: one entry per registry op (DESIGN: "adding an op is one entry
plus its lowering"). Each entry maps (compiler, node index, node) to the node's value.

Families: leaves become input buffers or immediates; layout ops become views (a copy
only where a view cannot express the result); elementwise, cast and quantization ops
become one streaming kernel of a tile expression (ewise_ops.py); reductions, softmax
and layernorm are row kernels; cumsum is a scan kernel (scan.py); matmul/conv and
every fused kernel go through lower_contract.py. Ops whose inputs are all immediates
are folded by the reference semantics when the result is again uniform.

Imports point one way: the driver (compiler.py) -> this table -> the per-family
lowerers -> shared helpers (operands.py, gemm_kernel.py, zero_points.py) -> kernel
emitters (ewise, rowwise, gemm, contract) and views; the lowerers name `Compiler` for
type checking only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from eqsat.custom_instr.derive import InstructionOp
from eqsat.interpreter import narrow
from eqsat.ir.graph import Node
from eqsat.ir.strides import inverse_perm
from eqsat.norm_epilogue import NORM_EPILOGUE
from eqsat.norm_prologue import NORM_MATMUL
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.chain import CHAINS
from eqsat.ops.quant_ort import ROW_QUANT_OPS, row_quant_steps
from eqsat.row_plan import RowQuant

from .attention import lower_attention
from .chain import lower_chain
from .ewise import emit_ewise
from .ewise_ops import EXPR
from .expr import Cust, Leaf
from .gather import lower_gather
from .lower_contract import lower_contraction, lower_fused
from .norm_epilogue import lower_norm_epilogue
from .norm_matmul import lower_norm_matmul
from .operands import expr_value, operand_exprs, row_operand
from .pad import lower_pad
from .quant import LOWER_QUANT
from .rotation import lower_hadamard
from .rowwise import emit_column_reduce, emit_reduce, emit_rows
from .scan import lower_cumsum
from .views import Imm, Value, View
from .weight_only import LOWER_WEIGHT_ONLY
from .window import lower_avg_pool, lower_max_pool
from .winograd import LOWER_WINOGRAD

if TYPE_CHECKING:
    from .compiler import Compiler

# ---------------------------------------------------------------- leaves


def lower_leaf(c: Compiler, i: int, node: Node) -> Value:
    t = node.type
    perm = c.prefs.get(i) if node.op in ("param", "literal") else None  # fed by the host
    return c.input_buffer(str(node.attr("name")), t.dtype.value, t.shape, perm)


def lower_iota(c: Compiler, i: int, node: Node) -> Value:
    """Positions are known at compile time: a constant buffer (the program's data)."""
    value = narrow(node.opdef.ref([], node.attr_dict), node.type.dtype)
    return c.constant_buffer(c.label(i), node.type.dtype.value, value)


def lower_const(c: Compiler, i: int, node: Node) -> Value:
    value = node.opdef.ref([], {**node.attr_dict, "shape": ()})
    stored = narrow(value, node.type.dtype)
    return Imm(float(np.asarray(stored, dtype=np.float64)), node.type.dtype.value)


def fold_node(c: Compiler, node: Node) -> Imm | None:
    """The node's value if all operands are immediates and the result is uniform."""
    args = [c.value(j) for j in node.inputs]
    if not args or not all(isinstance(a, Imm) for a in args):
        return None
    arrays = []
    for a, j in zip(args, node.inputs, strict=True):
        t = c.graph.nodes[j].type
        compute = np.float32 if t.dtype.is_float else t.dtype.np_dtype
        arrays.append(np.full(t.shape, a.value, dtype=compute))  # type: ignore[union-attr]
    with np.errstate(all="ignore"):
        out = np.asarray(narrow(node.opdef.ref(arrays, node.attr_dict), node.type.dtype))
    flat = out.reshape(-1).astype(np.float64)
    if flat.size == 0 or not (np.all(flat == flat[0]) or np.all(np.isnan(flat))):
        return None
    return Imm(float(flat[0]), node.type.dtype.value)


# ---------------------------------------------------------------- elementwise


def lower_ewise(c: Compiler, i: int, node: Node) -> Value:
    exprs, leaves = operand_exprs(c, node)
    dts = [c.graph.nodes[j].type.dtype.value for j in node.inputs]
    expr = EXPR[node.op](exprs, node.attr_dict, dts, node.type.dtype.value)
    return expr_value(c, i, node, expr, leaves)


# ---------------------------------------------------------------- layout


def _x(c: Compiler, node: Node) -> Value:
    return c.value(node.inputs[0])


def lower_reshape(c: Compiler, i: int, node: Node) -> Value:
    v, shape = _x(c, node), tuple(node.attr("shape"))  # type: ignore[arg-type]
    if isinstance(v, Imm):
        return v
    r = v.reshape(shape)
    return r if r is not None else c.materialize(v, c.label(i), i).reshape(shape)  # type: ignore[return-value]


def lower_transpose(c: Compiler, i: int, node: Node) -> Value:
    v = _x(c, node)
    return v if isinstance(v, Imm) else v.permute(tuple(node.attr("perm")))  # type: ignore[arg-type]


def lower_slice(c: Compiler, i: int, node: Node) -> Value:
    v = _x(c, node)
    if isinstance(v, Imm):
        return v
    return v.slice(tuple(node.attr("starts")), tuple(node.attr("ends")))  # type: ignore[arg-type]


def lower_broadcast(c: Compiler, i: int, node: Node) -> Value:
    v = _x(c, node)
    return v if isinstance(v, Imm) else v.broadcast_to(node.type.shape)


def lower_concat(c: Compiler, i: int, node: Node) -> Value:
    """One kernel copying each part into its slice of the output; a part whose producer
    wrote it there (eqsat/concat_placement.py), or that an earlier concat of the same
    buffer copied there, is not copied again, and a concat with nothing left to copy
    has no kernel."""
    axis = int(node.attr("axis"))  # type: ignore[arg-type]
    out = c.alloc_value(i, node, keep_last=False)
    copied = set(c.placement.copied_parts(c.graph, i))
    pieces, start = [], 0
    for k, j in enumerate(node.inputs):
        t = c.graph.nodes[j].type
        starts = tuple(start if a == axis else 0 for a in range(t.rank))
        ends = tuple(start + t.shape[a] if a == axis else out.shape[a] for a in range(t.rank))
        dst, v = out.slice(starts, ends), c.value(j)
        if k in copied or not _written(dst, v, c.placed(j)):  # (unplaced: every k copied)
            pieces.append((dst, v))
        start += t.shape[axis]
    if not pieces:
        return out

    def emit(kb) -> None:
        for k, (dst, v) in enumerate(pieces):
            if k:
                kb.fence()
            leaves = [] if isinstance(v, Imm) else [v]
            emit_ewise(kb, dst, v if isinstance(v, Imm) else Leaf(0), leaves, c.zero())

    reads = [v for _, v in pieces if isinstance(v, View)]
    c.add_kernel(c.kernel_name(i), i, "main", emit, reads, [out])
    return out


def _written(dst: View, value: Value, placed: View | None) -> bool:
    """Does the part's block already hold its value: written there by its producer
    (`value` is that block), or copied there by an earlier concat (the part is not
    placed there: eqsat/concat_placement.py Placement.copied_parts)?"""
    if placed is None or placed.buf is not dst.buf or placed.offset != dst.offset:
        return True  # a block an earlier concat filled
    return isinstance(value, View) and value.buf is dst.buf and value.offset == dst.offset


# ---------------------------------------------------------------- rows


def lower_reduce(c: Compiler, i: int, node: Node) -> Value:
    x = c.as_view(_x(c, node), c.graph.nodes[node.inputs[0]].type.shape, c.label(i))
    axes = tuple(node.attr("axes"))  # type: ignore[arg-type]
    kept = tuple(a for a in range(len(x.shape)) if a not in axes)
    if not axes:
        return expr_value(c, i, node, Leaf(0), [x])
    kshape = tuple(x.shape[a] for a in kept)
    k = int(np.prod([x.shape[a] for a in axes]))
    xv = x.permute(kept + axes)
    xr = xv.reshape((*kshape, k))
    out = c.new_buffer(node.type.dtype.value, kshape, c.label(i))
    op = "max" if node.op == "reduce_max" else "sum"
    mean = node.op == "reduce_mean"
    emit = emit_reduce
    if xr is None or (k > 1 and xr.strides[-1] != 1):
        # the last kept axis contiguous (a channels-last image pooled over its pixels):
        # reduce across rows as stored, else copy x into rows first
        xc = None
        if kept and kshape[-1] > 1:
            xc = x.permute((*kept[:-1], *axes, kept[-1])).reshape((*kshape[:-1], k, kshape[-1]))
        if xc is not None and xc.strides[-1] == 1:
            xr, emit = xc, emit_column_reduce
        else:
            xr = c.materialize(xv, c.label(i), i).reshape((*kshape, k))
    c.add_kernel(c.kernel_name(i), i, "main", lambda kb: emit(kb, xr, out, op, mean), [xr], [out])
    return out.reshape(node.type.shape)  # type: ignore[return-value]


def _rows_input(c: Compiler, i: int, node: Node, axis: int) -> tuple[View, tuple[int, ...]]:
    """A row kernel's input with `axis` moved last, and that permutation."""
    shape = node.type.shape
    perm = (*(a for a in range(len(shape)) if a != axis), axis)
    x = c.as_view(_x(c, node), shape, c.label(i)).permute(perm)
    return row_operand(c, x, x.shape, c.label(i), i), perm


def _rows_output(
    c: Compiler, i: int, node: Node, x: View, perm: tuple[int, ...]
) -> tuple[View, Value]:
    """The row kernel's output in its input's order, and the value the graph sees (the
    output permuted back, or itself when nothing moved)."""
    if perm == tuple(range(len(perm))):
        out = c.alloc_value(i, node, keep_last=True)
        return out, out
    out = c.new_buffer(node.type.dtype.value, x.shape, c.label(i))
    return out, out.permute(inverse_perm(perm))


def lower_softmax(c: Compiler, i: int, node: Node) -> Value:
    x, perm = _rows_input(c, i, node, int(node.attr("axis")))  # type: ignore[arg-type]
    out, value = _rows_output(c, i, node, x, perm)
    c.add_kernel(
        c.kernel_name(i), i, "main", lambda kb: emit_rows(kb, x, out, "softmax", {}), [x], [out]
    )
    return value


def lower_layernorm(c: Compiler, i: int, node: Node) -> Value:
    shape = node.type.shape
    x = row_operand(c, _x(c, node), shape, c.label(i), i)
    d = (shape[-1],)
    gamma = row_operand(c, c.value(node.inputs[1]), d, c.label(i) + ".gamma", i)
    beta = row_operand(c, c.value(node.inputs[2]), d, c.label(i) + ".beta", i)
    out = c.alloc_value(i, node, keep_last=True)
    params = {"gamma": gamma, "beta": beta, "eps": float(node.attr("eps"))}  # type: ignore[arg-type]
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_rows(kb, x, out, "layernorm", params),
        [x, gamma, beta],
        [out],
    )
    return out


def lower_row_quant(c: Compiler, i: int, node: Node) -> Value:
    """A softmax or layernorm with its int8 edges (eqsat/ops/quant_ort.py
    ROW_QUANT_OPS): the row kernel of lower_softmax / lower_layernorm, dequantizing
    its i8 input in the prologue and quantizing in the epilogue."""
    kind = ROW_QUANT_OPS[node.op]
    pre, post = row_quant_steps(node.op, node.attr_dict)
    quant = RowQuant(pre, post)
    shape = node.type.shape
    axis = int(node.attr("axis")) % len(shape) if kind == "softmax" else len(shape) - 1  # type: ignore[arg-type]
    x, perm = _rows_input(c, i, node, axis)
    params: dict = {}
    reads = [x]
    if kind == "layernorm":
        d = (shape[-1],)
        gamma = row_operand(c, c.value(node.inputs[1]), d, c.label(i) + ".gamma", i)
        beta = row_operand(c, c.value(node.inputs[2]), d, c.label(i) + ".beta", i)
        params = {"gamma": gamma, "beta": beta, "eps": float(node.attr("eps"))}  # type: ignore[arg-type]
        reads += [gamma, beta]
    out, value = _rows_output(c, i, node, x, perm)
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_rows(kb, x, out, kind, params, quant),
        reads,
        [out],
    )
    return value


def lower_rmsnorm(c: Compiler, i: int, node: Node) -> Value:
    shape = node.type.shape
    x = row_operand(c, _x(c, node), shape, c.label(i), i)
    gamma = row_operand(c, c.value(node.inputs[1]), (shape[-1],), c.label(i) + ".gamma", i)
    out = c.alloc_value(i, node, keep_last=True)
    params = {"gamma": gamma, "eps": float(node.attr("eps"))}  # type: ignore[arg-type]
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_rows(kb, x, out, "rmsnorm", params),
        [x, gamma],
        [out],
    )
    return out


# ---------------------------------------------------------------- the table

LOWER = {
    "input": lower_leaf,
    "param": lower_leaf,
    "literal": lower_leaf,
    "const": lower_const,
    "iota": lower_iota,
    **dict.fromkeys(EXPR, lower_ewise),
    "reshape": lower_reshape,
    "transpose": lower_transpose,
    "slice": lower_slice,
    "broadcast": lower_broadcast,
    "concat": lower_concat,
    "reduce_sum": lower_reduce,
    "reduce_max": lower_reduce,
    "reduce_mean": lower_reduce,
    "softmax": lower_softmax,
    "layernorm": lower_layernorm,
    "rmsnorm": lower_rmsnorm,
    "cumsum": lower_cumsum,
    "hadamard": lower_hadamard,  # a fast Walsh-Hadamard transform (rotation.py)
    "gather": lower_gather,
    "pad": lower_pad,
    "max_pool2d": lower_max_pool,
    "avg_pool2d": lower_avg_pool,
    "matmul": lower_contraction,
    "matmul_nt": lower_contraction,
    "qmatmul": lower_contraction,
    "conv2d": lower_contraction,
    "qconv2d": lower_contraction,
    **{
        n: lower_fused
        for n, op in REGISTRY.items()
        if op.kind is OpKind.FUSED and not isinstance(op, InstructionOp)  # those come and go
    },
    "attention": lower_attention,  # scores on chip (attention.py), not a GEMM epilogue
    **dict.fromkeys(NORM_MATMUL, lower_norm_matmul),  # the norm in A's loader (norm_matmul.py)
    **dict.fromkeys(NORM_EPILOGUE, lower_norm_epilogue),  # in the writer (norm_epilogue.py)
    **dict.fromkeys(CHAINS, lower_chain),  # two products in one kernel (chain.py)
    "attention_masked": lower_attention,
    **LOWER_QUANT,  # requantize_pc, observe
    **dict.fromkeys(ROW_QUANT_OPS, lower_row_quant),  # softmax/layernorm on int8 edges
    **LOWER_WEIGHT_ONLY,  # matmul_wq, wq_pack, wq_scales, wobserve (weight_only.py)
    **LOWER_WINOGRAD,  # F(m, 3) input and output transforms (winograd.py)
}

_FOLDABLE_SKIP = {
    "input",
    "param",
    "literal",
    "const",
    "iota",
    "reshape",
    "transpose",
    "slice",
    "broadcast",
}


def lower_instruction(c: Compiler, i: int, node: Node) -> Value:
    """A hardware's declared instruction (eqsat/custom_instr): the streaming kernel with
    one `custom.NAME` instruction per tile, every operand a loaded tile."""
    leaves = []
    for j in node.inputs:
        t = c.graph.nodes[j].type
        leaves.append(c.as_view(c.value(j), t.shape or (1,), c.label(i)))
    expr = Cust(node.op, tuple(Leaf(k) for k in range(len(leaves))))
    return expr_value(c, i, node, expr, leaves)


def lower_node(c: Compiler, i: int, node: Node) -> Value:
    """Fold constant subgraphs, else dispatch on the table."""
    if node.op not in _FOLDABLE_SKIP:
        folded = fold_node(c, node)
        if folded is not None:
            return folded
    if isinstance(node.opdef, InstructionOp):
        return lower_instruction(c, i, node)
    return LOWER[node.op](c, i, node)
