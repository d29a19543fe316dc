"""Typed graph -> syntax tree, for writing compiled (optimized) models as text.

Values used once are nested into their user's call where that keeps the node order;
values used several times, and outputs, get a statement of their own. Declarations
and statements come in graph order, so checking the text gives back the same nodes.
Inputs and params are the interface and are kept even when unused; other dead nodes
are dropped. Attributes equal to their defaults are left out. Literals keep their
names (the keys of their values); small ones are written inline, larger ones as
`external`, whose values the caller saves in the params file (`external_constants`).
"""

from __future__ import annotations

import numpy as np

from eqsat.ir.graph import Graph, Node
from eqsat.ops import REGISTRY
from frontend import ast

MAX_NESTING = 6
# Literals with at most this many elements are written inline in the model text.
INLINE_MAX = 32


def is_inline(value: np.ndarray) -> bool:
    return value.size <= INLINE_MAX


def external_constants(graph: Graph) -> dict[str, np.ndarray]:
    """The literal values `graph_to_model(graph)` writes as `external`: they belong in
    the params file next to the model text."""
    return {k: v for k, v in graph.used_constants().items() if not is_inline(v)}


def _type_spec(node: Node) -> ast.TypeSpec:
    return ast.TypeSpec(node.type.dtype.value, tuple(node.type.shape))


def _attrs(node: Node) -> tuple[ast.Attr, ...]:
    op = REGISTRY[node.op]
    out = []
    for key, value in node.attrs:
        spec = op.attr_spec(key)
        if spec is not None and not spec.required and spec.default == value:
            continue
        out.append(ast.Attr(key, value))
    return tuple(out)


def graph_to_model(graph: Graph) -> ast.Model:
    live = graph.live()
    users = graph.users()
    output_nodes = {i for _, i in graph.outputs}
    names: dict[int, str] = {}
    output_name: dict[int, str] = {}
    for name, i in graph.outputs:
        output_name.setdefault(i, name)
    # Input and param names are the interface; output names are reserved for outputs.
    taken: set[str] = {
        str(n.attr("name")) for _, n in graph if n.op in ("input", "param", "literal")
    }
    taken |= set(output_name.values())

    def fresh(base: str | None, i: int) -> str:
        if i in output_name and not graph.nodes[i].is_leaf:
            return output_name[i]
        name = base if base and base not in taken else f"t{i}"
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    # Nest a value into its user only where that keeps the node order: the checker
    # creates a statement's nodes in post-order, so the nested operands of node i must
    # cover, left to right, exactly the live nodes just before i. Then re-checking the
    # text gives back the same node list, not merely an equivalent one.
    kept = [i for i, n in graph if live[i] or n.op in ("input", "param")]
    literal_names = {
        i: str(graph.nodes[i].attr("name")) for i in kept if graph.nodes[i].op == "literal"
    }
    before = {i: kept[k - 1] if k else -1 for k, i in enumerate(kept)}
    start: dict[int, int] = {}  # first node of the span a nested expression creates
    nested: set[int] = set()
    depth: dict[int, int] = {}
    for i in kept:
        node = graph.nodes[i]
        if node.is_leaf:
            continue
        start[i], depth[i], expect = i, 1, before[i]
        for j in reversed(node.inputs):
            single = sum(1 for u in users[j] if live[u]) == 1
            if (
                j == expect
                and single
                and not graph.nodes[j].is_leaf
                and j not in output_nodes
                and depth[j] < MAX_NESTING
            ):
                nested.add(j)
                start[i], expect = start[j], before[start[j]]
                depth[i] = max(depth[i], depth[j] + 1)

    items: list[ast.Item] = []
    exprs: dict[int, ast.Expr] = {}

    def operand(j: int) -> ast.Expr:
        return exprs[j] if j in nested else ast.Ref(names[j])

    for i in kept:
        node = graph.nodes[i]
        if node.op in ("input", "param"):
            names[i] = str(node.attr("name"))
            items.append(ast.LeafDecl(node.op, names[i], _type_spec(node)))
        elif node.op == "literal":
            names[i] = literal_names[i]
            value = graph.constants[names[i]]
            items.append(ast.ConstDecl(names[i], _type_spec(node), _literal_value(value)))
        elif node.op == "const":
            names[i] = fresh(node.name or f"c{i}", i)
            value = node.attr("value")
            if node.type.dtype.is_int or (float(value).is_integer() and abs(value) < 2**53):
                value = int(value) if node.type.dtype.is_int else float(value)
            items.append(ast.ConstDecl(names[i], _type_spec(node), value))
        else:
            exprs[i] = ast.Call(node.op, tuple(operand(j) for j in node.inputs), _attrs(node))
            if i not in nested:
                names[i] = fresh(node.name, i)
                items.append(ast.Assign(names[i], exprs[i]))
    for name, i in graph.outputs:
        if names[i] != name:
            # A leaf, or a value that is output under several names.
            items.append(ast.Assign(name, ast.Ref(names[i])))
    items.append(ast.OutputDecl(tuple(name for name, _ in graph.outputs)))
    return ast.Model(graph.name, tuple(items))


def _literal_value(value: np.ndarray) -> ast.ConstValue:
    if not is_inline(value):
        return ast.External()
    flat = np.asarray(value).reshape(-1)
    if np.issubdtype(flat.dtype, np.integer):
        return tuple(int(v) for v in flat)
    return tuple(float(v) for v in flat.astype(np.float64))
