"""A typed graph as egglog commands, one `let` per node (never one deep term:
egglog's parser and Python's recursion limit both dislike deep nesting), with the
node's shape and dtype as facts.

The shape analysis (prelude.egg, encoding.py) derives the same facts, but one op
after another along the graph's longest path, a few analysis iterations per op: on
DenseNet-121 (430 ops deep, 58 concatenations) about a thousand iterations, which
egglog 13.2 slows through (53 s before the first rewrite). Known from the start, the
facts let every shape rule fire in the first iterations; the analysis then only
derives the shapes of terms the rewrites build."""

from __future__ import annotations

from eqsat.egraph.encoding import constructor, int_list, literal, string
from eqsat.ir.graph import Graph, Node
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY


def node_term(node: Node, operands: list[str]) -> str:
    """The egglog term of `node` over `operands` (a variadic op's at most two:
    graph_program names its right-nested binary tails)."""
    op = REGISTRY[node.op]
    attrs = node.attr_dict
    lits = [literal(spec.type, attrs[spec.name]) for spec in op.attrs]
    if op.variadic and len(operands) == 1:
        return operands[0]
    return f"({constructor(node.op)} {' '.join([*operands, *lits])})".replace(" )", ")")


def _facts(name: str, t: TensorType) -> list[str]:
    return [
        f"(union (ShapeOf {name}) {int_list(t.shape)})",
        f"(set (DT {name}) {string(t.dtype.value)})",
    ]


def _variadic_tails(graph: Graph, i: int, names: dict[int, str]) -> tuple[list[str], list[str]]:
    """A variadic node's right-nested binary tails, each its own `let` with its type's
    facts (innermost first), and the operand names of the node's own term."""
    node = graph.nodes[i]
    operands = [names[j] for j in node.inputs]
    if not node.opdef.variadic or len(operands) <= 2:
        return [], operands
    types = [graph.nodes[j].type for j in node.inputs]
    opdef, attrs = node.opdef, node.attr_dict
    lines: list[str] = []
    tail = operands[-1]
    for k in range(len(operands) - 2, 0, -1):
        name = f"{global_name(i)}_{k}"
        lines.append(f"(let {name} {node_term(node, [operands[k], tail])})")
        lines += _facts(name, opdef.type_of(types[k:], attrs))
        tail = name
    return lines, [operands[0], tail]


def global_name(i: int) -> str:
    return f"$n{i}"


def graph_program(graph: Graph) -> tuple[str, dict[int, str]]:
    """egglog text that adds every live node of `graph`; returns it and node -> global."""
    live = graph.live()
    names: dict[int, str] = {}
    lines = []
    for i, node in graph:
        if not live[i]:
            continue
        names[i] = global_name(i)
        tails, operands = _variadic_tails(graph, i, names)
        lines += tails
        lines.append(f"(let {names[i]} {node_term(node, operands)})")
        lines += _facts(names[i], node.type)
    return "\n".join(lines) + "\n", names
