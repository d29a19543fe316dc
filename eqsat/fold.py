"""Constant folding of what depends only on the model's own constants.

Position ids, causal and padding masks, rotary tables: exporters compute them from
the sequence length with `iota`-like ops, comparisons and `where`. Once the symbolic
dimensions are bound they are plain constants, and the compiler should see them as
such: this pass evaluates every op whose operands are all constants and at least one
of which is a `literal` or an `iota` (directly or through other folded ops) and
replaces it by a `literal` (or by a `const` fill when every element is equal, or by an
`iota` when the elements are 0, 1, 2, ... in order).

Computations on `const` fills alone are left as they are: rules read fills by value
(`x + 0`, scale folding) and the backend turns them into instruction immediates.
"""

from __future__ import annotations

import numpy as np

from eqsat.interpreter import evaluate_nodes, narrow
from eqsat.ir.graph import Graph, GraphBuilder, Node

# A folded tensor larger than this stays an op: materializing it would cost more
# memory than computing it on the device.
MAX_FOLD_BYTES = 256 << 20

_GENERATORS = frozenset({"literal", "iota"})


def constant_nodes(graph: Graph) -> list[bool]:
    """Which nodes have a value known at compile time that involves a literal or iota."""
    known = [False] * len(graph.nodes)  # value known at compile time
    derived = [False] * len(graph.nodes)  # ... and not only from const fills
    for i, node in graph:
        if node.op == "const":
            known[i] = True
        elif node.op in _GENERATORS:
            known[i] = derived[i] = True
        elif node.inputs and not node.is_leaf:
            known[i] = all(known[j] for j in node.inputs)
            derived[i] = known[i] and any(derived[j] for j in node.inputs)
    return derived


def fold_constants(graph: Graph) -> Graph:
    """`graph` with its literal-derived constant subgraphs evaluated (a new graph)."""
    derived = constant_nodes(graph)
    users = graph.users()
    live = graph.live()
    # Fold a node when something that is not itself folded uses it (or it is an
    # output): the frontier of each constant subgraph.
    outputs = {i for _, i in graph.outputs}
    frontier = [
        derived[i]
        and graph.nodes[i].op not in ("literal", "const", "iota")
        and graph.nodes[i].type.nbytes <= MAX_FOLD_BYTES
        and (i in outputs or any(not derived[u] for u in users[i] if live[u]))
        for i in range(len(graph.nodes))
    ]
    if not any(frontier):
        return graph
    values = _frontier_values(graph, frontier)
    needed = graph.live(stop=frontier)  # what is left once the frontier is folded
    taken = {str(n.attr("name")) for _, n in graph if n.op in ("input", "param", "literal")}
    b = GraphBuilder(graph.name, graph.dims)
    index: dict[int, int] = {}
    for i, node in graph:
        if frontier[i] and needed[i]:
            index[i] = _constant(b, node, values[i], _fresh(node.name or f"folded{i}", taken))
        elif needed[i] or node.op in ("input", "param"):
            index[i] = b.add(node.op, [index[j] for j in node.inputs], node.attr_dict, node.name)
            if node.op == "literal":
                name = str(node.attr("name"))
                b.graph.constants[name] = graph.constants[name]
    for name, i in graph.outputs:
        b.output(name, index[i])
    return b.graph


def _frontier_values(graph: Graph, frontier: list[bool]) -> dict[int, np.ndarray]:
    """Evaluate the constant subgraphs that end in frontier nodes (no inputs needed)."""
    outputs = [(f"c{i}", i) for i, on in enumerate(frontier) if on]
    sub = Graph(graph.name, graph.nodes, outputs, graph.dims, graph.constants)
    values = evaluate_nodes(sub, {})
    return {i: values[i] for _, i in outputs}  # type: ignore[misc]


def _constant(b: GraphBuilder, node: Node, value: np.ndarray, name: str) -> int:
    value = narrow(value, node.type.dtype)
    flat = np.asarray(value, dtype=np.float64).reshape(-1)
    if flat.size and (np.all(flat == flat[0]) or np.all(np.isnan(flat))):
        return b.const(float(flat[0]), node.type, node.name)
    if node.type.dtype.is_int and np.array_equal(flat, np.arange(flat.size)):
        return _ramp(b, node, flat.size)
    return b.literal(name, value, node.type.dtype)


def _ramp(b: GraphBuilder, node: Node, n: int) -> int:
    """0, 1, ..., n-1 in row-major order (flattened position ids, a batch-flattened
    gather's indices) as `iota` over n, reshaped: rules see a range where a literal's
    values would hide it (gather-range: gathering every row in order is a view)."""
    dtype = node.type.dtype.value
    ramp = b.add("iota", (), {"shape": [n], "axis": 0, "dtype": dtype}, None)
    if node.type.rank == 1:
        return ramp
    return b.add("reshape", [ramp], {"shape": list(node.type.shape)}, node.name)


def _fresh(base: str, taken: set[str]) -> str:
    """A literal name: literals share one namespace with inputs and params."""
    name = base
    while name in taken:
        name += "_"
    taken.add(name)
    return name


__all__ = ["MAX_FOLD_BYTES", "constant_nodes", "fold_constants"]
