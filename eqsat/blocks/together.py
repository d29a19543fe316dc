"""Several distinct blocks in one e-graph: one saturation for all of them.

Each saturation round costs about the same whatever the e-graph's size (every rule's
query runs once), so two half-layer blocks saturated one after the other take about
twice as long as the whole layer. Put side by side in one graph (their leaves kept
apart by a per-block prefix), they saturate in the rounds of one layer, and the
extracted program splits back into the blocks along their outputs.
"""

from __future__ import annotations

from eqsat.ir.graph import Graph, GraphBuilder


def _prefix(k: int) -> str:
    return f"b{k}_"


def combine(graphs: list[Graph]) -> Graph:
    """One graph holding every block of `graphs`, leaves and outputs renamed bK_NAME."""
    b = GraphBuilder("blocks")
    for k, g in enumerate(graphs):
        pre = _prefix(k)
        local: list[int] = []
        for n in g.nodes:
            if n.op == "literal":
                name = str(n.attr("name"))
                local.append(b.literal(pre + name, g.constants[name], n.type.dtype))
            elif n.op in ("input", "param"):
                local.append(b.leaf(n.op, pre + str(n.attr("name")), n.type))
            else:
                name = pre + n.name if n.name else None
                local.append(b.add(n.op, tuple(local[i] for i in n.inputs), dict(n.attrs), name))
        for name, i in g.outputs:
            b.output(pre + name, local[i])
    return b.graph


def split(combined: Graph, k: int, like: Graph) -> Graph | None:
    """Block k of an optimized combined graph, with its own names again (the leaves
    and literals of `like`, its canonical form); None if the extracted program reads a
    leaf of another block there (values the rules proved equal across blocks)."""
    pre = _prefix(k)
    b = GraphBuilder(like.name, like.dims)
    local: dict[int, int] = {}

    def build(i: int) -> int | None:
        if i in local:
            return local[i]
        n = combined.nodes[i]
        if n.op in ("input", "param", "literal"):
            name = str(n.attr("name"))
            if not name.startswith(pre):
                return None
            name = name[len(pre) :]
            if n.op == "literal":
                local[i] = b.literal(name, like.constants[name], n.type.dtype)
            else:
                local[i] = b.leaf(n.op, name, n.type)
            return local[i]
        args = []
        for j in n.inputs:
            a = build(j)
            if a is None:
                return None
            args.append(a)
        name = n.name[len(pre) :] if n.name and n.name.startswith(pre) else None
        local[i] = b.add(n.op, tuple(args), dict(n.attrs), name)
        return local[i]

    # the block's leaves first, in its own order, as a whole-graph run keeps them
    for i, n in enumerate(combined.nodes):
        if n.op in ("input", "param") and str(n.attr("name")).startswith(pre):
            build(i)
    for name, i in combined.outputs:
        if name.startswith(pre):
            j = build(i)
            if j is None:
                return None
            b.output(name[len(pre) :], j)
    return b.graph
