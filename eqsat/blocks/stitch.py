"""Putting optimized blocks back together into one graph of the whole model."""

from __future__ import annotations

from collections.abc import Mapping

from eqsat.blocks.segments import Block
from eqsat.ir.graph import Graph, GraphBuilder


def stitch(original: Graph, blocks: list[Block], optimized: Mapping[str, Graph]) -> Graph:
    """The model with each block replaced by the optimized form of its canonical block
    (`optimized[block.key]`), its leaves renamed back to the block's own inputs and
    params. Identical nodes are built once: the copies of a constant computation that
    several blocks carry become one node again."""
    b = GraphBuilder(original.name, original.dims, cse=True)
    value: dict[int, int] = {}  # original node -> node of the stitched graph

    def original_leaf(j: int) -> int:
        if j not in value:
            n = original.nodes[j]
            name = str(n.attr("name")) if n.op != "const" else None
            if n.op == "literal":
                value[j] = b.literal(name, original.constants[name], n.type.dtype)
            elif n.op == "const":
                value[j] = b.add("const", (), dict(n.attrs))
            else:
                value[j] = b.leaf(n.op, name, n.type)
        return value[j]

    # the model's inputs and params first, in the model's order, as the whole-graph
    # optimizer keeps them
    for j, n in original:
        if n.op in ("input", "param"):
            original_leaf(j)
    for block in blocks:
        g = optimized[block.key]
        local: list[int] = []
        for n in g.nodes:
            if n.op in ("input", "param", "literal"):
                j = block.leaves[str(n.attr("name"))]
                local.append(value[j] if j in value else original_leaf(j))
            elif n.op == "const":
                local.append(b.add("const", (), dict(n.attrs)))
            else:
                name = block.names.get(n.name, None) if n.name else None
                local.append(b.add(n.op, tuple(local[a] for a in n.inputs), dict(n.attrs), name))
        for name, i in g.outputs:
            value[block.outputs[name]] = local[i]
    for name, i in original.outputs:
        b.output(name, value[i] if i in value else original_leaf(i))
    return b.graph
