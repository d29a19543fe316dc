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
tile, clamped to the GEMM's dimensions; only a tile that cannot fit at all is shrunk.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from eqsat.costs import conv_form, kernel_work
from eqsat.ir.graph import Node
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import AttrRef, Call
from eqsat.spatial_plan import group_share, is_depthwise
from eqsat.tiling import node_tile
from hwsim.costmodel import KernelWork, cheapest_tiles
from hwsim.dtypes import ITEMSIZE
from hwsim.gemm_queues import split_first_step

from .compiler import Compiler
from .contract import acc_dtype, emit_conv, emit_matmul, matrix_mode
from .errors import BackendError
from .ewise import emit_ewise
from .ewise_ops import EXPR
from .expr import Bin, Cvt, Expr, Leaf
from .gemm import Gemm, sram_need
from .layouts import contraction_op
from .quant import VALUE_EXPR
from .rowwise import emit_reduce
from .space import Operand, Space
from .tileexpr import bytes_per_element, leaf_class
from .views import Imm, Value, View

MARGIN = 2048  # SRAM bytes for broadcast operand rows and alignment


def lower_contraction(c: Compiler, i: int, node: Node, prologue=None) -> Value:
    """`prologue`: a NormPrologue (backend/norm_matmul.py) that normalizes A's rows."""
    args = [c.value(j) for j in node.inputs]
    types = [c.graph.nodes[j].type for j in node.inputs]
    return contraction(c, i, node, node.op, args, types, node.attr_dict, None, [], prologue)


def lower_fused(c: Compiler, i: int, node: Node, prologue=None, norm=None) -> Value:
    """`norm`: a NormEpilogue (backend/norm_epilogue.py) that normalizes the output's rows."""
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

    from .lowering import expr_value

    expr = walk(op.composition, True)
    if not found:
        return expr_value(c, i, node, expr, leaves)
    if len(products) > 1:
        from .gated import lower_gated

        return lower_gated(c, i, node, products, env, expr, leaves, prologue)
    call = found[0]
    if not all(isinstance(a, str) for a in call.args):
        raise BackendError(f"fused op '{node.op}': its {call.op} must take operands directly")
    cattrs = {k: node.attr(v.name) if isinstance(v, AttrRef) else v for k, v in call.attrs.items()}
    cattrs = REGISTRY[call.op].bind_attrs(cattrs)
    args = [env[a][0] for a in call.args]  # type: ignore[index]
    types = [env[a][1] for a in call.args]  # type: ignore[index]
    return contraction(c, i, node, call.op, args, types, cattrs, expr, leaves, prologue, norm)


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
        ins = [tmp, *leaves]
        c.add_kernel(
            c.kernel_name(i, ".epilogue"),
            i,
            "main",
            lambda kb: emit_ewise(kb, out, epi, ins, c.zero()),
            ins,
            [out],
        )
        return out
    out = c.alloc_value(i, node, keep_last=True)
    _emit(c, i, node, cop, views, cattrs, out, epi, leaves, work, prologue, norm)
    return out


def _depthwise(c, i, node, views, cattrs, ctype, epi, leaves) -> View:
    """A depthwise convolution is a window kernel (window.py); an epilogue that
    broadcasts it to a larger shape runs as its own pass over an f32 result."""
    from .window import lower_depthwise

    x, w = views
    # an integer one with a channel multiplier splits the channels of its output
    # view: a per-channel requantization there runs in the separate pass below
    split = ctype.dtype is DType.I32 and w.shape[0] != x.shape[1]
    if epi is None or (ctype.shape == node.type.shape and not split):
        return lower_depthwise(c, i, node, x, w, cattrs, epi, leaves, node.type)
    acc = DType.I32 if ctype.dtype is DType.I32 else DType.F32  # a qconv2d's i32 sums
    tmp = lower_depthwise(c, i, node, x, w, cattrs, None, [], ctype.with_dtype(acc))
    out = c.alloc_value(i, node, keep_last=False)
    ins = [tmp, *leaves]
    c.add_kernel(
        c.kernel_name(i, ".epilogue"),
        i,
        "main",
        lambda kb: emit_ewise(kb, out, epi, ins, c.zero()),
        ins,
        [out],
    )
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


def _pow2(unit: int, limit: int) -> list[int]:
    sizes, s = [], unit
    while s < limit:
        sizes.append(s)
        s *= 2
    return [*sizes, limit]


def choose_tile(
    c: Compiler,
    work: KernelWork,
    g: Gemm,
    sizes,
    modes: str,
    fixed: tuple | None = None,
    accs: int = 1,
    prologue_bytes=None,
    rows_bytes=None,
) -> tuple[tuple, int]:
    """(tile, output slots): the tile the cost model prices cheapest among those whose
    real SRAM need (epilogue and transpose buffers included) fits - with two output
    slots if possible, else one - so the model's own choice whenever it fits. A
    `fixed` tile (the node's own) is taken as is, with as many slots as fit.
    `prologue_bytes(tm)`: SRAM an A prologue adds; then only K in one step is tried.
    `rows_bytes(tm)`: SRAM a normalizing epilogue adds; then only N in one step."""
    hw = c.hw
    if fixed is not None:
        tile = (min(fixed[0], g.m), min(fixed[1], g.n), min(fixed[2], g.k))
        for slots in (2, 1):
            fits = sram_need(g, tile, sizes, modes, slots) + MARGIN <= hw.sram_bytes
            if fits and 4 * accs * tile[0] * tile[1] <= hw.acc_bytes:
                return tile, slots
        return _fit(c, g, tile, sizes, modes), 1
    slots_of: dict[tuple[int, int, int], int] = {}
    for tm in _pow2(hw.array_rows, g.m):
        for tn in [g.n] if rows_bytes is not None else _pow2(hw.array_cols, g.n):
            if 4 * accs * tm * tn > hw.acc_bytes:
                continue
            extra = prologue_bytes(tm) if prologue_bytes is not None else 0
            extra += rows_bytes(tm) if rows_bytes is not None else 0
            depths = [g.k] if prologue_bytes is not None else _pow2(hw.array_rows, g.k)
            for slots in (2, 1):
                fits = [
                    tk
                    for tk in depths
                    if sram_need(g, (tm, tn, tk), sizes, modes, slots) + MARGIN + extra
                    <= hw.sram_bytes
                ]
                if fits:
                    break
            # the largest k tile, as the model does; with whole output rows every k
            # tile (eqsat/norm_epilogue.py whole_row_tiles)
            for tk in fits if rows_bytes is not None else fits[-1:]:
                slots_of[(tm, tn, tk)] = slots
    # the closed form's best few, replayed on the queues, as the cost model searches
    costs = cheapest_tiles(hw, work, slots_of)
    if costs:
        best = min(costs, key=lambda c: (c.cycles, c.dram_bytes, -slots_of[c.tile]))
        return best.tile, slots_of[best.tile]
    return _fit(c, g, (hw.array_rows, hw.array_cols, hw.array_rows), sizes, modes), 1


def _fit(
    c: Compiler, g: Gemm, tile, sizes: tuple[int, int, int, int], modes: str
) -> tuple[int, int, int]:
    """The model's tile, shrunk until the epilogue fits too: N first (no extra DRAM
    traffic once B is re-read anyway), then M, then K (which makes A re-read)."""
    tm, tn, tk = min(tile[0], g.m), min(tile[1], g.n), min(tile[2], g.k)
    hw = c.hw
    while sram_need(g, (tm, tn, tk), sizes, modes, 1) + MARGIN > hw.sram_bytes or (
        4 * tm * tn > hw.acc_bytes
    ):
        if tn > hw.array_cols:
            tn = math.ceil(tn / 2)
        elif tm > hw.array_rows:
            tm = math.ceil(tm / 2)
        elif tk > hw.array_rows:
            tk = math.ceil(tk / 2)
        elif max(tm, tn, tk) > 1:
            tm, tn, tk = max(1, tm // 2), max(1, tn // 2), max(1, tk // 2)
        else:
            raise BackendError(f"{g}: no matmul tile fits the SRAM of {hw.name}")
    return tm, tn, tk


def _epi_leaves(
    c: Compiler, i: int, leaves: list[View], space: Space, rt: int, ct: int
) -> list[View]:
    out = []
    for v in leaves:
        op = Operand.of(v, space.shape)
        if leaf_class(op, space, max(rt, 2), max(ct, 2)) is None:
            v = c.materialize(v.broadcast_to(space.shape), c.label(i), i)
        out.append(v)
    return out


def _epi_bytes(epi: Expr | None, leaves: list[View], space: Space, out: str, acc: str) -> int:
    if epi is None:
        return 0
    ops = [None] + [Operand.of(v, space.shape) for v in leaves]
    return bytes_per_element(epi, ops, space, out, {0: acc})


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
        epi, leaves = _zero_points(c, i, a, b, cattrs, epi, leaves, _weight_value(c, node), node)
    add_gemm_kernel(c, i, node, a, b, out, epi, leaves, work, prologue, norm)


def gemv_work(work: KernelWork) -> bool:
    """Whether the cost model lets this GEMM's one-row products run on the vector unit
    (hwsim.costmodel.gemv_kernel): a matmul's, not a convolution's."""
    return work.kind == "matmul" and not work.patch and not work.patch_b


def add_gemm_kernel(
    c, i, node, a: View, b: View, out: View, epi, leaves, work, prologue=None, norm=None
) -> None:
    """The matmul kernel of node i: out[..., M, N] = epilogue(a @ b) at the tile
    choose_tile picks for `work`, the epilogue's operands broadcast over out (with a
    `prologue`, at a tile of one K step, A's rows normalized on chip; with a `norm`, at
    a tile of one N step, the output's rows normalized on chip)."""
    batch, (m, n), k = out.shape[:-2], out.shape[-2:], a.shape[-1]
    g = Gemm(batch, m, n, k, a.dtype, acc_dtype(a.dtype))
    space = Space(out.shape, len(batch), len(batch) + 1)
    leaves = _epi_leaves(c, i, leaves, space, c.hw.array_rows, c.hw.array_cols)
    s = ITEMSIZE[a.dtype]
    sizes = (s, s, ITEMSIZE[out.dtype], _epi_bytes(epi, leaves, space, out.dtype, g.acc_dtype))
    modes = matrix_mode(a) + matrix_mode(b)  # type: ignore[operator]
    extra = None
    if prologue is not None:
        work = replace(work, a_whole=True)  # as eqsat/costs.py prices it

        def extra(tm: int) -> int:
            return prologue.sram_bytes(tm, k, a.dtype)

    rows = None
    if norm is not None:

        def rows(tm: int) -> int:
            return norm.sram_bytes(tm, n, out.dtype)

    tile, slots = choose_tile(c, work, g, sizes, modes, node_tile(node.attr_dict), 1, extra, rows)
    if prologue is not None and tile[2] < k:
        raise BackendError(f"{node.op}: no tile with whole rows of A ({k}) fits SRAM")
    if norm is not None and tile[1] < n:
        raise BackendError(f"{node.op}: no tile with whole output rows ({n}) fits SRAM")
    zero = c.zero
    params = list(prologue.params.values()) if prologue is not None else []
    params += list(norm.params.values()) if norm is not None else []
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_matmul(
            kb,
            a,
            b,
            out,
            epi,
            leaves,
            tile,
            zero(),
            slots,
            gemv_work(work),
            prologue,
            norm,
            split_first_step(work),
        ),
        [a, b, *leaves, *params],
        [out],
    )


def _weight_value(c: Compiler, node: Node) -> np.ndarray | None:
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
        ws = _weight_sums(c, i, wmat, _weight_value(c, node), (1, 2, 3), ".wsum", node)
        q: Expr = Bin("sub", Leaf(0), Bin("mul", Leaf(1 + len(leaves)), Imm(za, "i32")))
        epi = q if epi is None else _substitute(epi, q)
        leaves = [*leaves, ws.reshape((o, 1, 1))]
    out3 = out.reshape((n, o, out.shape[2] * out.shape[3]))
    assert out3 is not None
    l3 = []
    for v in leaves:
        b = v.broadcast_to(out.shape)
        r = b.reshape(out3.shape)
        l3.append(r if r is not None else c.materialize(b, c.label(i), i).reshape(out3.shape))
    return out3, epi, l3


def _weight_sums(
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
    if j is not None and (c.graph.nodes[j].op == "param" or j in c.prepared):
        return c.prepared_sums(j, axes, c.label(i) + suffix)
    return _row_sums(c, i, w, suffix)


def _zero_points(c, i, a: View, b: View, attrs, epi, leaves, b_value=None, node=None):
    """(a - za) @ (b - zb) = a@b - za*colsum(b) - zb*rowsum(a) + K*za*zb."""
    za, zb = int(attrs["a_zero"]), int(attrs["b_zero"])
    k = a.shape[-1]
    q: Expr = Leaf(0)
    extra: list[View] = []
    base = 1 + len(leaves)
    if za:
        bt = b.permute((*range(len(b.shape) - 2), len(b.shape) - 1, len(b.shape) - 2))
        cs = _weight_sums(c, i, bt, b_value, -2, ".colsum", node)
        extra.append(cs.reshape((*cs.shape[:-1], 1, cs.shape[-1])))  # type: ignore[arg-type]
        q = Bin("sub", q, Bin("mul", Leaf(base), Imm(za, "i32")))
    if zb:
        rs = _row_sums(c, i, a, ".rowsum")
        extra.append(rs.reshape((*rs.shape, 1)))  # type: ignore[arg-type]
        q = Bin("sub", q, Bin("mul", Leaf(base + len(extra) - 1), Imm(zb, "i32")))
    if za and zb:
        q = Bin("add", q, Imm(k * za * zb, "i32"))
    if epi is not None:
        q = _substitute(epi, q)
    return q, [*leaves, *extra]


def _row_sums(c: Compiler, i: int, x: View, suffix: str) -> View:
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


def _substitute(e: Expr, by: Expr) -> Expr:
    from dataclasses import fields, replace

    if e == Leaf(0):
        return by
    if isinstance(e, Leaf | Imm):
        return e
    return replace(
        e,
        **{
            f.name: _substitute(getattr(e, f.name), by)
            for f in fields(e)
            if f.name in ("x", "a", "b", "c", "cond")
        },
    )


def _conv(c, i, node, views, attrs, out: View, epi, leaves, work) -> None:
    """The implicit GEMM of a convolution; with groups, one GEMM per group on its own
    channel slice of the (group-major) image, weight columns and output channels."""
    from .conv_prep import conv_inputs

    x, w = views
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    form = conv_form(c.hw, node.op, in_types, node.type, node.attr_dict)
    if form == "matmul":  # a pointwise convolution: a matmul on NCHW, no prep
        from .conv_pointwise import lower_pointwise

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
        from .conv_transposed import lower_transposed

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
        l3_j = _epi_leaves(c, i, l3_j, space, c.hw.array_cols, c.hw.array_rows)
        s = ITEMSIZE[x.dtype]
        extra = _epi_bytes(epi, l3_j, space, out.dtype, g.acc_dtype) + 4
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
