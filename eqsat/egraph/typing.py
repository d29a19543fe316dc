"""Types of e-classes, inferred in Python with the registry's own rules.

egglog's shape analysis is what rule guards read; this second, independent inference
is what extraction trusts: an e-node whose operands' types its op rejects (an
unsound or ill-guarded rewrite made it) is marked invalid and never extracted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eqsat.egraph.decode import DecodedEGraph, ENode
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY, OpTypeError


@dataclass
class TypedEGraph:
    decoded: DecodedEGraph
    class_types: dict[str, TensorType] = field(default_factory=dict)
    node_types: dict[str, TensorType] = field(default_factory=dict)  # valid nodes only
    invalid: dict[str, str] = field(default_factory=dict)  # node id -> why


def type_egraph(decoded: DecodedEGraph) -> TypedEGraph:
    typed = TypedEGraph(decoded)
    # Big e-graphs repeat a few signatures (op, operand types, attributes) many times.
    memo: dict[tuple, TensorType | str] = {}
    pending: list[ENode] = [n for nodes in decoded.classes.values() for n in nodes]
    progress = True
    while pending and progress:
        progress = False
        waiting = []
        for node in pending:
            if any(c not in typed.class_types for c in node.children):
                waiting.append(node)
                continue
            progress = True
            in_types = tuple(typed.class_types[c] for c in node.children)
            key = (node.op, in_types, node.attrs)
            t = memo.get(key)
            if t is None:
                t = memo[key] = _infer(node, in_types)
            if isinstance(t, str):
                typed.invalid[node.id] = t
                continue
            known = typed.class_types.setdefault(node.eclass, t)
            if known != t:
                typed.invalid[node.id] = f"has type {t} in a class of type {known}"
                continue
            typed.node_types[node.id] = t
        pending = waiting
    for node in pending:
        typed.invalid[node.id] = "an operand has no valid term"
    return typed


def _infer(node: ENode, in_types: tuple[TensorType, ...]) -> TensorType | str:
    """The node's type, or why its op rejects its operands."""
    op = REGISTRY[node.op]
    try:
        return op.type_of(in_types, op.bind_attrs(dict(node.attrs)))
    except OpTypeError as err:
        return str(err)
