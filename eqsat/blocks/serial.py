"""Graphs as JSON (the compile cache's entries): ops, operands, attributes, names.

Types are not stored: rebuilding through GraphBuilder infers and checks them again,
so an entry that does not type-check is refused rather than trusted. Literal values
are not stored either: they are the canonical block's, whose content the entry's key
already covers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from eqsat.ir.graph import Graph, GraphBuilder


def graph_to_json(g: Graph) -> dict[str, Any]:
    return {
        "name": g.name,
        "dims": g.dims,
        "nodes": [
            {"op": n.op, "in": list(n.inputs), "attrs": _plain(dict(n.attrs)), "name": n.name}
            for n in g.nodes
        ],
        "outputs": [[name, i] for name, i in g.outputs],
    }


def graph_from_json(data: Mapping[str, Any], constants: Mapping[str, np.ndarray]) -> Graph:
    """The graph `graph_to_json` wrote (raises ValueError/KeyError/TypeError on a
    malformed entry, OpTypeError on one that does not type-check)."""
    b = GraphBuilder(str(data["name"]), {str(k): int(v) for k, v in data["dims"].items()})
    for n in data["nodes"]:
        op, attrs = str(n["op"]), _tuples(n["attrs"])
        inputs = tuple(int(i) for i in n["in"])
        if any(not 0 <= i < len(b.graph.nodes) for i in inputs):
            raise ValueError("operand refers to a later node")
        if op == "literal":
            name = str(attrs["name"])
            b.literal(name, constants[name], _dtype(attrs))
        else:
            b.add(op, inputs, attrs, n.get("name"))
    for name, i in data["outputs"]:
        b.output(str(name), int(i))
    return b.graph


def _dtype(attrs):
    from eqsat.ir.types import DType

    return DType.parse(str(attrs["dtype"]))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _tuples(value: Any) -> Any:
    """JSON arrays back to the tuples node attributes hold."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value
