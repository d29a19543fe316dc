"""Typed graph -> syntax tree, for writing compiled (optimized) models as text.

Values used once are nested into their user's call; values used several times, and
outputs, get a statement of their own. Attributes equal to their defaults are left out.
"""

from __future__ import annotations

from eqsat.ir.graph import Graph, Node
from eqsat.ops import REGISTRY
from frontend import ast

MAX_NESTING = 6


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
    taken: set[str] = {str(n.attr("name")) for _, n in graph.inputs + graph.params}
    taken |= set(output_name.values())

    def fresh(base: str | None, i: int) -> str:
        if i in output_name and not graph.nodes[i].is_leaf:
            return output_name[i]
        name = base if base and base not in taken else f"t{i}"
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    items: list[ast.Item] = []
    for i, node in graph:
        if not live[i] or node.op not in ("input", "param"):
            continue
        names[i] = str(node.attr("name"))
        items.append(ast.LeafDecl(node.op, names[i], _type_spec(node)))
    for i, node in graph:
        if live[i] and node.op == "const":
            names[i] = fresh(node.name or f"c{i}", i)
            value = node.attr("value")
            if node.type.dtype.is_int or (float(value).is_integer() and abs(value) < 2**53):
                value = int(value) if node.type.dtype.is_int else float(value)
            items.append(ast.ConstDecl(names[i], _type_spec(node), value))

    depth: dict[int, int] = {}
    exprs: dict[int, ast.Expr] = {}

    def operand(j: int) -> ast.Expr:
        return ast.Ref(names[j]) if j in names else exprs[j]

    for i, node in graph:
        if not live[i] or node.is_leaf:
            continue
        exprs[i] = ast.Call(node.op, tuple(operand(j) for j in node.inputs), _attrs(node))
        depth[i] = 1 + max((depth.get(j, 0) for j in node.inputs if j not in names), default=0)
        shared = sum(1 for u in users[i] if live[u]) != 1
        if shared or i in output_nodes or depth[i] >= MAX_NESTING:
            names[i] = fresh(node.name, i)
            items.append(ast.Assign(names[i], exprs[i]))
    for name, i in graph.outputs:
        if names[i] != name:
            # A leaf, or a value that is output under several names.
            items.append(ast.Assign(name, ast.Ref(names[i])))
    items.append(ast.OutputDecl(tuple(name for name, _ in graph.outputs)))
    return ast.Model(graph.name, tuple(items))
