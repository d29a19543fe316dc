"""Lowering of matrix products, convolutions and fused kernels.

A fused op is lowered from its composition (its registry body): the contraction in it
(matmul, matmul_nt, qmatmul, conv2d) becomes the GEMM kernel and everything above it
becomes the epilogue, a tile expression applied to the accumulator before the store -
bias, relu, gelu, residual add - so the intermediate never goes to DRAM. A body
without a contraction is one elementwise kernel. Where the epilogue broadcasts the
product to a larger shape, the product goes to an f32/i32 buffer and the epilogue
runs as its own elementwise kernel (same numbers, more traffic).

Tiles are the cost model's (hwsim.costmodel picks them for exactly this loop), shrunk
only if the epilogue's SRAM does not fit next to them. A node with a `tile` attribute
(chosen by extraction among the tiling rules' candidates) is emitted with exactly that
tile, clamped to the GEMM's dimensions; only a tile that cannot fit at all is shrunk
(gemm_kernel.py). The other forms are their own modules: gated products (gated.py),
depthwise (window.py), pointwise (conv_pointwise.py) and weights @ patches
(conv_transposed.py) convolutions; int8 zero points are epilogue terms (zero_points.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from eqsat.costs import conv_form, kernel_work
from eqsat.ir.graph import Node
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import AttrRef, Call
from eqsat.spatial_plan import group_share, is_depthwise
from eqsat.tiling import node_tile
from hwsim.costmodel import KernelWork
from hwsim.dtypes import ITEMSIZE

from .contract import acc_dtype, emit_conv, matrix_mode
from .conv_pointwise import lower_pointwise
from .conv_prep import conv_inputs
from .conv_transposed import lower_transposed
from .errors import BackendError
from .ewise_ops import EXPR
from .expr import Cvt, Expr, Leaf
from .gated import lower_gated
from .gemm import Gemm
from .gemm_kernel import add_gemm_kernel, choose_tile, epi_bytes, epi_leaves
from .layouts import contraction_op
from .operands import add_ewise_kernel, expr_value
from .quant import VALUE_EXPR
from .space import Space
from .views import Imm, Value, View
from .window import lower_depthwise
from .zero_points import conv_gemm_epilogue, weight_value, zero_point_epilogue

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_contraction(c: Compiler, i: int, node: Node, prologue=None) -> Value:
    """`prologue`: a NormPrologue (backend/norm_loader.py) that normalizes A's rows."""
    args = [c.value(j) for j in node.inputs]
    types = [c.graph.nodes[j].type for j in node.inputs]
    return contraction(c, i, node, node.op, args, types, node.attr_dict, None, [], prologue)


def lower_fused(c: Compiler, i: int, node: Node, prologue=None, norm=None) -> Value:
    """`norm`: a NormEpilogue (backend/norm_epilogue.py) that normalizes the output's rows."""
    env, products, expr, leaves, found = fused_parts(c, i, node)
    if not found:
        return expr_value(c, i, node, expr, leaves)
    if len(products) > 1:
        return lower_gated(c, i, node, products, env, expr, leaves, prologue)
    call = found[0]
    if not all(isinstance(a, str) for a in call.args):
        raise BackendError(f"fused op '{node.op}': its {call.op} must take operands directly")
    cattrs = {k: node.attr(v.name) if isinstance(v, AttrRef) else v for k, v in call.attrs.items()}
    cattrs = REGISTRY[call.op].bind_attrs(cattrs)
    args = [env[a][0] for a in call.args]  # type: ignore[index]
    types = [env[a][1] for a in call.args]  # type: ignore[index]
    return contraction(c, i, node, call.op, args, types, cattrs, expr, leaves, prologue, norm)


def fused_parts(c: Compiler, i: int, node: Node):
    """A fused node's operands by name (value, type), its products, the epilogue over
    them (Leaf(j): product j, then the leaves) and its leaves, the products found."""
    op = node.opdef
    env = {
        name: (c.value(j), c.graph.nodes[j].type)
        for name, j in zip(op.operands, node.inputs, strict=True)
    }
    cop = contraction_op(node.op)
    products = _products(op.composition)  # a gated body has two; its acc j is Leaf(j)
    first = len(products) if cop else 0
    leaves: list[View] = []
    index: dict[str, int] = {}
    found: list[Call] = []

    def walk(e, root: bool) -> Expr:
        if isinstance(e, str):
            v = env[e][0]
            if isinstance(v, Imm):
                return v
            if e not in index:
                index[e] = first + len(leaves)
                leaves.append(v)
            return Leaf(index[e])
        if REGISTRY[e.op].kind in (OpKind.MATMUL, OpKind.CONV):
            found.append(e)
            return Leaf(next(j for j, p in enumerate(products) if p is e))
        if e.op not in EXPR and e.op not in VALUE_EXPR:
            raise BackendError(f"fused op '{node.op}': no lowering for '{e.op}' in its body")
        args = [walk(a, False) for a in e.args]
        attrs = {k: node.attr(v.name) if isinstance(v, AttrRef) else v for k, v in e.attrs.items()}
        attrs = REGISTRY[e.op].bind_attrs(attrs)
        if e.op in VALUE_EXPR:  # needs operand values known at compile time
            values = [
                c.compile_time_value(node.inputs[op.operands.index(a)])
                if isinstance(a, str)
                else None
                for a in e.args
            ]
            return VALUE_EXPR[e.op](args, attrs, values)
        out = node.type.dtype.value if root else ("f32" if node.type.dtype.is_float else "i32")
        if e.op == "cast" and not root:  # a cast inside picks its own kind (i32 -> f32)
            out = "f32" if str(attrs["dtype"]) in ("f32", "bf16") else "i32"
        if e.op == "quantize" and not root:  # saturates to its own type inside a body too
            return Cvt(str(attrs["dtype"]), EXPR[e.op](args, attrs, [], "i32"))
        return EXPR[e.op](args, attrs, [], out)

    expr = walk(op.composition, True)
    return env, products, expr, leaves, found


def _products(body) -> list[Call]:
    """The distinct contractions of a fused body, in evaluation order (a call object
    used twice, as in mul(g, sigmoid(g)), is one product)."""
    out: list[Call] = []

    def walk(e) -> None:
        if isinstance(e, str):
            return
        if REGISTRY[e.op].kind in (OpKind.MATMUL, OpKind.CONV):
            if not any(e is p for p in out):
                out.append(e)
            return
        for a in e.args:
            walk(a)

    walk(body)
    return out


def contraction(
    c: Compiler,
    i: int,
    node: Node,
    cop: str,
    args: list[Value],
    types: list[TensorType],
    cattrs: dict,
    epi: Expr | None,
    leaves: list[View],
    prologue=None,
    norm=None,
) -> View:
    cdef = REGISTRY[cop]
    ctype = cdef.type_of(types, cattrs)
    views = [c.as_view(v, t.shape, c.label(i)) for v, t in zip(args, types, strict=True)]
    if cop in ("conv2d", "qconv2d") and is_depthwise(types[0], types[1], cattrs):
        return _depthwise(c, i, node, views, cattrs, ctype, epi, leaves)
    work = model_work(c, node, cop, types, cattrs)
    if norm is not None and (cop != "matmul" or epi is None or ctype.shape != node.type.shape):
        raise BackendError(
            f"{node.op}: a normalizing epilogue needs a matmul of the output's shape"
        )
    if epi is not None and ctype.shape != node.type.shape:
        acc = acc_dtype(types[0].dtype.value)
        tmp = c.new_buffer(acc, ctype.shape, c.label(i) + ".acc")
        _emit(c, i, node, cop, views, cattrs, tmp, None, [], work, prologue)
        out = c.alloc_value(i, node, keep_last=False)
        add_ewise_kernel(c, i, out, epi, [tmp, *leaves], ".epilogue")
        return out
    out = c.alloc_value(i, node, keep_last=True)
    _emit(c, i, node, cop, views, cattrs, out, epi, leaves, work, prologue, norm)
    return out


def _depthwise(c, i, node, views, cattrs, ctype, epi, leaves) -> View:
    """A depthwise convolution is a window kernel (window.py); an epilogue that
    broadcasts it to a larger shape runs as its own pass over an f32 result."""
    x, w = views
    # an integer one with a channel multiplier splits the channels of its output
    # view: a per-channel requantization there runs in the separate pass below
    split = ctype.dtype is DType.I32 and w.shape[0] != x.shape[1]
    if epi is None or (ctype.shape == node.type.shape and not split):
        return lower_depthwise(c, i, node, x, w, cattrs, epi, leaves, node.type)
    acc = DType.I32 if ctype.dtype is DType.I32 else DType.F32  # a qconv2d's i32 sums
    tmp = lower_depthwise(c, i, node, x, w, cattrs, None, [], ctype.with_dtype(acc))
    out = c.alloc_value(i, node, keep_last=False)
    add_ewise_kernel(c, i, out, epi, [tmp, *leaves], ".epilogue")
    return out


def model_work(c: Compiler, node: Node, cop: str, types, cattrs) -> KernelWork:
    """The cost model's view of this kernel: the contraction's GEMM dimensions with the
    fused node's bytes and epilogue work (eqsat.costs.kernel_work prices a fused conv
    with the inner op's default attributes, so the dimensions are taken from `cop`)."""
    ctype = REGISTRY[cop].type_of(types, cattrs)
    base = kernel_work(cop, types, ctype, cattrs)
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    flops = node.opdef.flops(in_types, node.type, node.attr_dict)
    fused = kernel_work(node.op, in_types, node.type, node.attr_dict)
    return replace(
        base,  # type: ignore[type-var]
        vector_ops=max(0, flops - 2 * base.macs),  # type: ignore[union-attr]
        bytes_in=node.opdef.bytes_read(in_types),
        bytes_out=node.opdef.bytes_written(node.type),
        epilogue_loads=fused.epilogue_loads if fused is not None else (),
    )


def _emit(
    c, i, node, cop, views, cattrs, out: View, epi, leaves, work, prologue=None, norm=None
) -> None:
    if prologue is not None and cop != "matmul":
        raise BackendError(f"{node.op}: a normalization prologue needs a matmul, not {cop}")
    if cop in ("conv2d", "qconv2d"):
        _conv(c, i, node, views, cattrs, out, epi, leaves, work)
        return
    a, b = views
    if cop == "matmul_nt":
        r = len(b.shape)
        b = b.permute((*range(r - 2), r - 1, r - 2))
    if matrix_mode(a) is None:
        a = c.materialize(a, c.label(i), i)
    if matrix_mode(b) is None:
        b = c.materialize(b, c.label(i), i)
    if cop == "qmatmul":
        epi, leaves = zero_point_epilogue(
            c, i, a, b, cattrs, epi, leaves, weight_value(c, node), node
        )
    add_gemm_kernel(c, i, node, a, b, out, epi, leaves, work, prologue, norm)


def _conv(c, i, node, views, attrs, out: View, epi, leaves, work) -> None:
    """The implicit GEMM of a convolution; with groups, one GEMM per group on its own
    channel slice of the (group-major) image, weight columns and output channels."""
    x, w = views
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    form = conv_form(c.hw, node.op, in_types, node.type, node.attr_dict)
    if form == "matmul":  # a pointwise convolution: a matmul on NCHW, no prep
        lower_pointwise(c, i, node, x, w, attrs, out, epi, leaves, work)
        return
    n, _, _, _ = x.shape
    o, cg, kh, kw = w.shape
    groups = int(attrs.get("groups", 1))
    og = o // groups
    ho, wo = out.shape[2], out.shape[3]
    za = int(attrs.get("a_zero", 0))
    xp, w2, geom = conv_inputs(
        c, i, x, w, tuple(attrs["stride"]), tuple(attrs["padding"]), (ho, wo), za, groups
    )
    # xp is padded with za
    out3, epi, l3 = conv_gemm_epilogue(c, i, node, w2.permute((1, 0)), za, out, epi, leaves)
    if form == "transposed":  # weights @ patches (conv_transposed.py)
        lower_transposed(c, i, node, x, w, w2, xp, geom, out3, epi, l3, work)
        return
    g = Gemm((n,), ho * wo, og, kh * kw * cg, x.dtype, acc_dtype(x.dtype))
    if groups > 1:
        work = group_share(work, groups)
    image = n * geom.hp * geom.wp * cg
    for j in range(groups):
        cols = (j * og, (j + 1) * og)
        xp_j = View(xp.buf, xp.offset + j * image, (n, geom.hp, geom.wp, cg), xp.strides[-4:])
        w2_j = w2.slice((0, cols[0]), (w2.shape[0], cols[1]))
        out_j = out3.slice((0, cols[0], 0), (n, cols[1], ho * wo))
        l3_j = [v.slice((0, cols[0], 0), (n, cols[1], ho * wo)) for v in l3]
        space = Space(out_j.shape, 1, 2)
        l3_j = epi_leaves(c, i, l3_j, space, c.hw.array_cols, c.hw.array_rows)
        s = ITEMSIZE[x.dtype]
        extra = epi_bytes(epi, l3_j, space, out.dtype, g.acc_dtype) + 4
        sizes = (s, s, ITEMSIZE[out.dtype], extra)
        modes = "n" + matrix_mode(w2_j)  # type: ignore[operator]
        tile, slots = choose_tile(c, work, g, sizes, modes, node_tile(node.attr_dict))
        c.add_kernel(
            c.kernel_name(i, f".g{j}" if groups > 1 else ""),
            i,
            "main",
            _conv_emit(xp_j, geom, w2_j, out_j, epi, l3_j, tile, c.zero, slots),
            [xp_j, w2_j, *l3_j],
            [out_j],
        )


def _conv_emit(xp, geom, w2, out3, epi, leaves, tile, zero, slots):
    return lambda kb: emit_conv(kb, xp, geom, w2, out3, epi, leaves, tile, zero(), slots)
