"""Window kernels: max and average pooling and depthwise convolution on the vector unit.

Where windows touch padding or step over columns (eqsat/spatial_plan.py
window_layout), or a depthwise convolution has a channel multiplier, the row-block kernel
(window_block.py) runs it: blocks of image rows loaded once, every tap a strided SRAM
view of them, the epilogue (bias, clip, residual, requantization, an average's
division) in the same pass. Otherwise tap (i, j) of every window is one strided view
of the image (x itself, or the padded NHWC image a prep kernel writes,
conv_prep.nhwc_image), and the kernel is one streaming elementwise kernel (ewise.py)
over KH*KW such views: max, sum (divided by the window's count), or the sum of taps
times their per-channel weight, the fused epilogue on top. eqsat/window_plan.py plans
and prices both, so the cost model prices what is emitted here.

An average pool whose windows do not all have the same number of taps on the input
divides by a [HO, WO] map of counts, written by a `count` kernel as rectangles of
equal count (the count is a product of a row count and a column count).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.ir.types import DType, TensorType
from eqsat.ops.spatial import Window2d, lowest, window2d
from eqsat.spatial_plan import NHWC, conv_window, count_runs, window_layout

from .conv_prep import PACK, nhwc_image
from .ewise import emit_ewise
from .expr import Bin, Expr, Leaf
from .operands import add_ewise_kernel
from .views import Imm, Value, View
from .window_block import add_block_kernel, plan_block, row_planes
from .zero_points import weight_sums, weight_value

if TYPE_CHECKING:
    from .compiler import Compiler


def map_leaves(e: Expr, fn) -> Expr:
    """`e` with every Leaf(k) replaced by fn(k)."""
    if isinstance(e, Leaf):
        return fn(e.index)
    if isinstance(e, Imm):
        return e
    changes = {
        f.name: map_leaves(v, fn)
        for f in dataclasses.fields(e)  # type: ignore[arg-type]
        if dataclasses.is_dataclass(v := getattr(e, f.name)) and not isinstance(v, type)
    }
    return dataclasses.replace(e, **changes)  # type: ignore[type-var]


class Image:
    """Where the taps of a window kernel come from and where its output goes."""

    def __init__(self, c: Compiler, i: int, x: View, g: Window2d, fill: Imm, mult: int = 1):
        self.c, self.i, self.x, self.fill = c, i, x, fill
        self.g, self.mult = g, mult
        self.layout = window_layout(g, mult)
        n, ch = x.shape[:2]
        self.n, self.ch = n, ch
        self.src: View | None = None

    def source(self) -> View:
        """The image the taps read: the padded NHWC image (its prep kernel is added on
        the first call) or x itself (made unit-stride along columns if it is not)."""
        if self.src is not None:
            return self.src
        c, i, x, g, ch = self.c, self.i, self.x, self.g, self.ch
        (sh, sw), wo = g.stride, g.out_hw[1]
        if self.layout == NHWC:
            src = nhwc_image(c, i, x, (g.pads[0], g.pads[1]), (g.rows, g.cols), self.fill)
            img, row = g.rows * g.cols * ch, g.cols * ch
            self.base, self.src = src.offset, src
            self.tap_strides = (img, 1, sh * row, sw * ch)
            self.tap_offset = lambda a, b: (a * g.cols + b) * ch
        else:
            if wo > 1 and x.strides[3] != 1:
                x = c.materialize(x, c.label(i), i)
            s = x.strides
            self.base, self.src = x.offset, x
            self.tap_strides = (s[0], s[1], sh * s[2], sw * s[3])
            self.tap_offset = lambda a, b: a * s[2] + b * s[3]
        return self.src

    def taps(self) -> list[View]:
        """[N, C, HO, WO] views (with a multiplier: [N, C, M, HO, WO]), one per tap."""
        src = self.source()
        shape = (self.n, self.ch, *self.g.out_hw)
        out = []
        for a, b in self.g.tap_offsets():
            off = self.base + self.tap_offset(a, b)
            strides = self.tap_strides
            if self.mult > 1:
                out.append(
                    View(
                        src.buf,
                        off,
                        (*shape[:2], self.mult, *shape[2:]),
                        (*strides[:2], 0, *strides[2:]),
                    )
                )
            else:
                out.append(View(src.buf, off, shape, strides))
        return out

    def output(self, c: Compiler, i: int, node: Node, out_type: TensorType) -> tuple[View, View]:
        """(the view the kernel writes, the node's NCHW value)."""
        n, o, ho, wo = out_type.shape
        dtype = out_type.dtype.value
        if self.layout != NHWC:
            if out_type == node.type:
                out = c.alloc_value(i, node, keep_last=False)
            else:
                out = c.new_buffer(dtype, out_type.shape, c.label(i))
            return out, out
        buf = c.new_buffer(dtype, (n, ho, wo, o), c.label(i))
        value = buf.permute((0, 3, 1, 2))
        if self.mult == 1:
            return value, value
        m = self.mult
        split = View(buf.buf, 0, (n, o // m, m, ho, wo), (ho * wo * o, m, 1, wo * o, o))
        return split, value


def _chain(op: str, leaves: list[Expr]) -> Expr:
    e = leaves[0]
    for x in leaves[1:]:
        e = Bin(op, e, x)
    return e


def _pool_input(c: Compiler, i: int, node: Node) -> tuple[View, TensorType, Window2d]:
    j = node.inputs[0]
    t = c.graph.nodes[j].type
    x = c.as_view(c.value(j), t.shape, c.label(i))
    return x, t, window2d(node.op, t, node.attr_dict)


def lower_max_pool(c: Compiler, i: int, node: Node) -> Value:
    x, t, g = _pool_input(c, i, node)
    dtype = node.type.dtype
    image = Image(c, i, x, g, Imm(float(lowest(dtype)), dtype.value))
    out, value = image.output(c, i, node, node.type)
    bw = None
    if image.layout == NHWC:
        bw = plan_block(c, t, g, "max", node.type, None, [], row_planes(x), image.fill.value)
    if bw is not None:
        src = x if bw.direct else image.source()
        add_block_kernel(c, i, bw, g, src, None, out, None, [], image.fill.value)
        return value
    taps = image.taps()
    expr = _chain("max", [Leaf(k) for k in range(len(taps))])
    add_ewise_kernel(c, i, out, expr, taps)
    return value


def lower_avg_pool(c: Compiler, i: int, node: Node) -> Value:
    x, t, g = _pool_input(c, i, node)
    image = Image(c, i, x, g, Imm(0.0, node.type.dtype.value))
    out, value = image.output(c, i, node, node.type)
    include_pad = bool(node.attr("count_include_pad"))
    counts = g.counts(include_pad)
    count_map = None
    if counts.min() != counts.max():
        count_map = _count_map(c, i, g, include_pad).broadcast_to(node.type.shape)
    if image.layout == NHWC:  # the row-block kernel: the sums, then + 0 and the division
        total: Expr = Leaf(0)
        if node.type.dtype.is_float:  # the reference sums from +0: a window of -0 gives +0
            total = Bin("add", total, Imm(0.0, node.type.dtype.value))
        divisor: Expr = Imm(float(counts.flat[0]), "f32") if count_map is None else Leaf(1)
        expr = Bin("div", total, divisor)
        extra = [] if count_map is None else [count_map]
        bw = plan_block(c, t, g, "avg", node.type, expr, extra, row_planes(x), 0.0)
        if bw is not None:
            src = x if bw.direct else image.source()
            add_block_kernel(c, i, bw, g, src, None, out, expr, extra, 0.0)
            return value
    taps = image.taps()
    total = _chain("add", [Leaf(k) for k in range(len(taps))])
    if node.type.dtype.is_float:  # the reference sums from +0: a window of -0 gives +0
        total = Bin("add", total, Imm(0.0, node.type.dtype.value))
    leaves = list(taps)
    if count_map is None:
        divisor = Imm(float(counts.flat[0]), "f32")
    else:
        leaves.append(count_map)
        divisor = Leaf(len(taps))
    add_ewise_kernel(c, i, out, Bin("div", total, divisor), leaves)
    return value


def _count_map(c: Compiler, i: int, g: Window2d, include_pad: bool) -> View:
    """A [HO, WO] f32 buffer of the taps each window has, written as rectangles."""
    ho, wo = g.out_hw
    counts = c.new_buffer("f32", (ho, wo), c.label(i) + ".count")
    rects = [
        (counts.slice((h0, w0), (h1, w1)), Imm(float(vh * vw), "f32"))
        for h0, h1, vh in count_runs(g.axis_counts(0, include_pad))
        for w0, w1, vw in count_runs(g.axis_counts(1, include_pad))
    ]

    def emit(kb) -> None:
        for k, (dst, value) in enumerate(rects):
            if k:
                kb.fence()
            emit_ewise(kb, dst, value, [], c.zero())

    c.add_kernel(c.kernel_name(i, ".count"), i, "prep", emit, [], [counts])
    return counts


def lower_depthwise(
    c: Compiler,
    i: int,
    node: Node,
    x: View,
    w: View,
    attrs: dict,
    epi: Expr | None,
    leaves: list[View],
    out_type: TensorType,
) -> View:
    """A depthwise conv2d (groups = C, w [C*M, 1, KH, KW]): out channel o is the sum
    over taps of x channel o // M times w[o, 0, i, j], then the epilogue `epi` (Leaf(0)
    the convolution, Leaf(k) leaves[k - 1]). A qconv2d's (i8, zero point za) pads with
    za and subtracts za * sum(w[o]) once: sum((x - za) * w) = sum(x * w) - za * sum(w)."""
    xt = TensorType(out_type.dtype, x.shape)
    wt = TensorType(out_type.dtype, w.shape)
    g = conv_window(xt, wt, attrs)
    o, _, kh, kw = w.shape
    mult = o // x.shape[1]
    za = int(attrs.get("a_zero", 0))
    image = Image(c, i, x, g, Imm(float(za), x.dtype), mult)
    packed = w.permute(PACK).reshape((kh * kw, o))
    if packed is None or (o > 1 and packed.strides[1] != 1):  # channels contiguous per tap
        packed = c.materialize(w.permute(PACK), c.label(i) + ".w", i).reshape((kh * kw, o))
    sums = None
    if za:  # sum(w[o]) of each output channel, over the output
        w2 = w.reshape((o, kh * kw))
        if w2 is None:
            w2 = c.materialize(w, c.label(i) + ".w", i).reshape((o, kh * kw))
        known = weight_value(c, node)
        sums = weight_sums(c, i, w2, known, (1, 2, 3), ".wsum", node)
        sums = sums.reshape((o, 1, 1)).broadcast_to(out_type.shape)  # type: ignore[union-attr]
    if image.layout == NHWC and (mult == 1 or row_planes(x)):
        x_type = TensorType(DType(x.dtype), x.shape)
        done = _block_depthwise(c, i, node, image, x_type, packed, za, sums, epi, leaves, out_type)
        if done is not None:
            return done
    taps = image.taps()
    shape = taps[0].shape
    s0, s1 = packed.strides  # type: ignore[union-attr]
    inner = (0, mult * s1, s1, 0, 0) if mult > 1 else (0, s1, 0, 0)
    weights = [View(packed.buf, packed.offset + t * s0, shape, inner) for t in range(len(taps))]  # type: ignore[union-attr]
    out, value = image.output(c, i, node, out_type)
    n_taps = len(taps)
    products = [Bin("mul", Leaf(t), Leaf(n_taps + t)) for t in range(n_taps)]
    conv = _chain("add", products)
    if out_type.dtype.is_float:  # the reference sums from +0: all -0 products give +0
        conv = Bin("add", conv, Imm(0.0, out_type.dtype.value))
    extra: list[View] = []
    if sums is not None:
        conv = Bin("sub", conv, Bin("mul", Leaf(2 * n_taps), Imm(za, "i32")))
        split = sums.reshape(out.shape) if mult > 1 else sums
        if split is None:
            split = c.materialize(sums, c.label(i), i).reshape(out.shape)
        extra.append(split)  # type: ignore[arg-type]
    expr = conv
    if epi is not None:
        first = 2 * n_taps + len(extra)
        expr = map_leaves(epi, lambda k: conv if k == 0 else Leaf(first + k - 1))
        for v in leaves:
            b = v.broadcast_to(out_type.shape)
            if mult > 1:
                split = b.reshape(out.shape)
                b = (
                    split
                    if split is not None
                    else c.materialize(b, c.label(i), i).reshape(out.shape)
                )  # type: ignore[union-attr]
            extra.append(b)  # type: ignore[arg-type]
    add_ewise_kernel(c, i, out, expr, [*taps, *weights, *extra])
    return value


def _block_depthwise(
    c: Compiler,
    i: int,
    node: Node,
    image: Image,
    x_type: TensorType,
    packed: View,
    za: int,
    sums: View | None,
    epi: Expr | None,
    leaves: list[View],
    out_type: TensorType,
) -> View | None:
    """lower_depthwise as the row-block kernel (window_block.py): the epilogue over
    the sums Leaf(0), a qconv2d's - za * sum(w) first; None where it does not run."""
    conv: Expr = Leaf(0)
    extra: list[View] = []
    if sums is not None:
        extra.append(sums)
        conv = Bin("sub", conv, Bin("mul", Leaf(1), Imm(za, "i32")))
    expr: Expr | None = conv if sums is not None else None
    if epi is not None:
        first = 1 + len(extra)
        expr = map_leaves(epi, lambda k: conv if k == 0 else Leaf(first + k - 1))
        extra += [v.broadcast_to(out_type.shape) for v in leaves]
    x = image.x
    direct, mult = row_planes(x), image.mult
    bw = plan_block(c, x_type, image.g, "dw", out_type, expr, extra, direct, float(za), mult)
    if bw is None:
        return None
    _, value = image.output(c, i, node, out_type)  # (the [N, C*M, HO, WO] view of it)
    src = x if bw.direct else image.source()
    add_block_kernel(c, i, bw, image.g, src, packed, value, expr, extra, float(za))
    return value
