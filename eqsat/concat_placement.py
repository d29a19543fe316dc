"""Concatenation without copies: where each value of a concat is written.

A concat along an axis whose outer dimensions are all 1 (channels of one image,
[1, C, H, W]) is one contiguous buffer in which each part is a contiguous block. Its
parts' producers can then write straight into their blocks, and the concat costs
nothing (XLA and TensorRT elide concatenations so). A concat whose parts are all
already blocks of a larger concat's buffer, in its order, is itself a block of that
buffer: DenseNet's concat of the block input and the first k layers' outputs is the
first part of the next one's, so a dense block keeps every feature map in one buffer
and copies nothing (memory-efficient DenseNet, Pleiss et al. 2017).

`concat_regions` decides it from the graph alone, so the backend (which allocates the
buffers, backend/compiler.py) and the cost model (which prices only the parts still
copied, eqsat/program_cost.py) agree by construction. Concats are visited consumers first
(nodes are in topological order): a concat that no later concat placed is the root of
a group; its parts are placed at their offsets in it. Each element of a group buffer
is written by one producer: a part already placed elsewhere, a part placed twice, or
a producer the backend cannot point at a block (a view, a leaf, a weight, a graph
output, a kernel that stores its result in another layout) is copied, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from eqsat.ir.graph import Graph
from eqsat.ops import OpKind
from eqsat.weights import RUNTIME, VIEW_OPS, graph_value_classes
from eqsat.window_plan import stores_channels_last

# Producers whose backend kernels write their result through the buffer the compiler
# gives the node (backend/compiler.py alloc_value): elementwise kernels, matrix
# products and convolutions with their epilogues (Winograd's output transform too),
# quantize/requantize, pooling stored as NCHW, and concat.
_IN_PLACE_KINDS = frozenset({OpKind.ELEMENTWISE, OpKind.MATMUL, OpKind.CONV, OpKind.QUANT})
_IN_PLACE_OPS = frozenset({"concat", "winograd_output", "max_pool2d", "avg_pool2d"})


@dataclass(frozen=True)
class Region:
    """A block of a group buffer: the group's root concat and the offset in elements."""

    root: int
    offset: int


@dataclass(frozen=True)
class Placement:
    """`regions`: node -> the block of a group buffer its value is (root concats at
    offset 0; nodes absent have buffers of their own). A block no producer writes in
    place (a part the backend cannot point at it) is copied there once, by the first
    concat that holds it (`copier`, by block), since kernels run in node order."""

    regions: dict[int, Region]
    copier: dict[Region, int]

    def copied_parts(self, graph: Graph, i: int) -> list[int]:
        """The operand positions of concat i whose values its kernel copies: every one
        when i is not placed, else those whose blocks nothing wrote before."""
        base = self.regions.get(i)
        if base is None:
            return list(range(len(graph.nodes[i].inputs)))
        out = []
        for k, (j, start, _) in enumerate(_blocks(graph, i)):
            at = Region(base.root, base.offset + start)
            if self.regions.get(j) != at and self.copier.get(at) == i:
                out.append(k)
        return out


def concat_regions(graph: Graph) -> Placement:
    """Where every value of the concats of `graph` is written (module docstring)."""
    live = graph.live()
    users = graph.users()
    outputs = {i for _, i in graph.outputs}
    classes = graph_value_classes(graph)
    regions: dict[int, Region] = {}
    held: dict[Region, int] = {}  # block -> the value it holds
    spans: dict[int, list[tuple[int, int]]] = {}  # root -> (start, size) of its blocks
    copier: dict[Region, int] = {}

    def free(at: Region, size: int) -> bool:
        return all(at.offset + size <= s or s + n <= at.offset for s, n in spans.get(at.root, ()))

    for i in range(len(graph.nodes) - 1, -1, -1):
        if not live[i] or classes[i] != RUNTIME or not _contiguous_concat(graph, i):
            continue  # (a concat of weights is computed by the host at load time)
        blocks = _blocks(graph, i)
        if i not in regions:
            base = _adopt(blocks, regions, held)
            if base is None or i in outputs or not _readers_plain(graph, i, users):
                base = Region(i, 0)
            regions[i] = base
        base = regions[i]
        for j, start, size in blocks:
            at = Region(base.root, base.offset + start)
            if regions.get(j) == at:
                continue  # written here in place (by its producer, or a nested concat's parts)
            if held.get(at) == j:
                copier[at] = i  # copied here: by the first concat that holds it
                continue
            if not free(at, size):
                continue  # the blocks of one concat never overlap
            nested = graph.nodes[j].op == "concat"
            if j not in regions and _writes_in_place(graph, j, classes, outputs, users):
                regions[j] = at
                if nested:  # its parts are placed (and checked) when it is visited
                    continue
            else:
                copier[at] = i
            held[at] = j
            spans.setdefault(at.root, []).append((at.offset, size))
    # a root nothing was placed in keeps its own buffer, as any value
    placed_roots = {r.root for j, r in regions.items() if j != r.root}
    kept = {j: r for j, r in regions.items() if r.root in placed_roots}
    return Placement(kept, {b: i for b, i in copier.items() if b.root in placed_roots})


def _adopt(blocks, regions: dict[int, Region], held: dict[Region, int]) -> Region | None:
    """The block of a group a concat is, when each of its parts is already there, in
    its order (held there, or a nested concat placed there)."""
    if not blocks:
        return None
    j0 = blocks[0][0]
    starts = [at for at, j in held.items() if j == j0]
    if j0 in regions:
        starts.append(regions[j0])
    for first in starts:
        if all(
            held.get(Region(first.root, first.offset + start)) == j
            or regions.get(j) == Region(first.root, first.offset + start)
            for j, start, _ in blocks
        ):
            return first
    return None


def _contiguous_concat(graph: Graph, i: int) -> bool:
    """A concat whose parts are contiguous blocks of its row-major result."""
    node = graph.nodes[i]
    if node.op != "concat" or not node.type.rank:
        return False
    axis = int(node.attr("axis")) % node.type.rank  # type: ignore[call-overload]
    return math.prod(node.type.shape[:axis]) == 1


def _blocks(graph: Graph, i: int) -> list[tuple[int, int, int]]:
    """(part node, offset, elements) of each operand of concat i in its buffer."""
    node = graph.nodes[i]
    axis = int(node.attr("axis")) % node.type.rank  # type: ignore[call-overload]
    inner = math.prod(node.type.shape[axis + 1 :])
    out, start = [], 0
    for j in node.inputs:
        size = graph.nodes[j].type.shape[axis] * inner
        out.append((j, start, size))
        start += size
    return out


def _readers_plain(graph: Graph, i: int, users: list[list[int]]) -> bool:
    """No reader of i asks for another storage order (backend/layouts.py gives a value
    read only through transposes a layout of its own)."""
    return not any(graph.nodes[u].op in ("transpose", "reshape") for u in users[i])


def _writes_in_place(graph: Graph, j: int, classes, outputs: set[int], users) -> bool:
    """Can the backend point the kernel computing j at a block of another buffer?"""
    node = graph.nodes[j]
    if node.is_leaf or node.op in VIEW_OPS or classes[j] != RUNTIME or j in outputs:
        return False
    if not _readers_plain(graph, j, users):
        return False
    if node.op == "concat":
        return _contiguous_concat(graph, j)
    kind = node.opdef.kind
    if kind is not OpKind.FUSED and kind not in _IN_PLACE_KINDS and node.op not in _IN_PLACE_OPS:
        return False
    in_types = [graph.nodes[k].type for k in node.inputs]
    return not stores_channels_last(node.op, in_types, node.type, node.attr_dict)
