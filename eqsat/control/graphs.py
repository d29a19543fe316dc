"""Graph surgery the control passes share: copying nodes between graphs, renaming
leaves and outputs, dropping what no output needs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from eqsat.ir.graph import Graph, GraphBuilder, Node
from eqsat.ir.types import TensorType


class GraphWriter:
    """Builds a graph from nodes of other graphs; leaves of the same name are shared."""

    def __init__(self, name: str, dims: Mapping[str, int]):
        self.builder = GraphBuilder(name, dims)
        self.leaves: dict[tuple[str, str], int] = {}

    @property
    def graph(self) -> Graph:
        return self.builder.graph

    def leaf(self, kind: str, name: str, t: TensorType) -> int:
        key = (kind, name)
        if key not in self.leaves:
            self.leaves[key] = self.builder.leaf(kind, name, t)
        return self.leaves[key]

    def const(self, value: np.ndarray, t: TensorType) -> int:
        return self.builder.const(float(np.asarray(value).reshape(-1)[0]), t)

    def copy(
        self, source: Graph, bound: Mapping[str, int] | None = None, nodes=None
    ) -> list[int | None]:
        """Copy the live nodes of `source` (or those `nodes` marks); an input leaf whose
        name is in `bound` becomes that node of this graph. Returns old -> new index."""
        bound = bound or {}
        keep = source.live() if nodes is None else nodes
        where: list[int | None] = [None] * len(source.nodes)
        for i, node in source:
            if not keep[i]:
                continue
            if node.op in ("input", "param"):
                name = str(node.attr("name"))
                if node.op == "input" and name in bound:
                    where[i] = bound[name]
                else:
                    where[i] = self.leaf(node.op, name, node.type)
                continue
            if node.op == "literal":
                name = str(node.attr("name"))
                where[i] = self.builder.literal(name, source.constants[name], node.type.dtype)
                continue
            inputs = tuple(where[j] for j in node.inputs)
            self.graph.nodes.append(Node(node.op, inputs, node.attrs, node.type, node.name))  # type: ignore[arg-type]
            where[i] = len(self.graph.nodes) - 1
        return where


def compact(graph: Graph) -> Graph:
    """`graph` without the nodes no output needs (leaves included)."""
    w = GraphWriter(graph.name, graph.dims)
    where = w.copy(graph)
    w.graph.outputs = [(name, where[i]) for name, i in graph.outputs]  # type: ignore[misc]
    return w.graph


def renamed_outputs(graph: Graph, names: Mapping[str, str], label: str) -> Graph:
    """A copy of `graph` whose outputs are renamed by `names` (a body inlined as a
    stage: yield_k -> the region's result)."""
    out = compact(graph)
    out.name = label
    out.outputs = [(names.get(n, n), i) for n, i in out.outputs]
    return out


def compile_time_value(graph: Graph, output: str) -> np.ndarray | None:
    """The value of output `output` when it is a const fill or a literal."""
    index = dict(graph.outputs).get(output)
    if index is None:
        return None
    node = graph.nodes[index]
    if node.op == "const":
        return np.full(node.type.shape, node.attr("value"), dtype=node.type.dtype.np_dtype)
    if node.op == "literal":
        return graph.constants[str(node.attr("name"))]
    return None
