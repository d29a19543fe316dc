"""A typed graph as egglog commands, one `let` per node (never one deep term:
egglog's parser and Python's recursion limit both dislike deep nesting)."""

from __future__ import annotations

from eqsat.egraph.encoding import constructor, literal
from eqsat.ir.graph import Graph, Node
from eqsat.ops import REGISTRY


def node_term(node: Node, operands: list[str]) -> str:
    op = REGISTRY[node.op]
    attrs = node.attr_dict
    lits = [literal(spec.type, attrs[spec.name]) for spec in op.attrs]
    if op.variadic and len(operands) > 2:
        # Right-nested binary form of a variadic op.
        tail = node_term(node, operands[1:])
        operands = [operands[0], tail]
    if op.variadic and len(operands) == 1:
        return operands[0]
    return f"({constructor(node.op)} {' '.join([*operands, *lits])})".replace(" )", ")")


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
        term = node_term(node, [names[j] for j in node.inputs])
        lines.append(f"(let {names[i]} {term})")
    return "\n".join(lines) + "\n", names
