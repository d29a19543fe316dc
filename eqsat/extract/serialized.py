"""The egraph-serialize JSON format: read it into an EGraph, write an EGraph back.

Fields (as egglog 13.2's ``serialize(...).to_json()`` writes them, and as the
egraph-serialize crate reads them): ``nodes`` {node id: {op, children: [node id],
eclass, cost, subsumed}} with ``children`` (default []), ``cost`` (default 1.0) and
``subsumed`` (default false) optional; optional ``root_eclasses`` [class id] and
``class_data`` {class id: {type, let?}}. A child is a node id and stands for that
node's class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eqsat.extract.egraph import EGraph, assemble, check_cost
from eqsat.extract.errors import EGraphFormatError


def load_egraph(path: str | Path) -> EGraph:
    """Read an egraph-serialize JSON file; unreadable or malformed -> EGraphFormatError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EGraphFormatError(str(path), f"cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise EGraphFormatError(str(path), "file is not UTF-8 text") from None
    return parse_json(text, source=str(path))


def parse_json(text: str, source: str = "<json>") -> EGraph:
    """Build an EGraph from egraph-serialize JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EGraphFormatError(
            source, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    return parse_json_dict(data, source)


def to_json_dict(egraph: EGraph) -> dict[str, Any]:
    """The egraph-serialize form; a child class is written as its first node's id."""
    rep = [egraph.node_ids[ns[0]] for ns in egraph.class_nodes]
    nodes = {}
    for i, nid in enumerate(egraph.node_ids):
        nodes[nid] = {
            "op": egraph.ops[i],
            "children": [rep[c] for c in egraph.children(i)],
            "eclass": egraph.class_ids[int(egraph.node_class[i])],
            "cost": float(egraph.costs[i]),
            "subsumed": bool(egraph.subsumed[i]),
        }
    out: dict[str, Any] = {
        "nodes": nodes,
        "root_eclasses": [egraph.class_ids[r] for r in egraph.roots],
    }
    if egraph.class_data:
        out["class_data"] = egraph.class_data
    return out


def _as_id(value: Any, source: str, what: str) -> str:
    # egraph-serialize ids are strings; integers are accepted as their decimal text.
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise EGraphFormatError(source, f"{what} must be a string id, got {value!r}")


def parse_json_dict(data: Any, source: str = "<json>") -> EGraph:
    """Build an EGraph from parsed egraph-serialize JSON; faults raise EGraphFormatError."""
    if not isinstance(data, dict):
        raise EGraphFormatError(source, "top level must be a JSON object with a 'nodes' field")
    raw_nodes = data.get("nodes")
    if raw_nodes is None:
        raise EGraphFormatError(source, "missing field 'nodes'")
    if not isinstance(raw_nodes, dict):
        raise EGraphFormatError(source, "'nodes' must be an object {node id: node}")
    node_ids: list[str] = []
    ops: list[str] = []
    eclasses: list[str] = []
    child_nodes: list[list[str]] = []
    costs: list[float] = []
    subsumed: list[bool] = []
    for nid, node in raw_nodes.items():
        where = f"node {nid!r}"
        if not isinstance(node, dict):
            raise EGraphFormatError(source, f"{where} must be an object")
        for name in ("op", "eclass"):
            if name not in node:
                raise EGraphFormatError(source, f"{where}: missing field {name!r}")
        op = node["op"]
        if not isinstance(op, str):
            raise EGraphFormatError(source, f"{where}: 'op' must be a string, got {op!r}")
        kids = node.get("children", [])
        if not isinstance(kids, list):
            raise EGraphFormatError(source, f"{where}: 'children' must be a list of node ids")
        flag = node.get("subsumed", False)
        if not isinstance(flag, bool):
            raise EGraphFormatError(source, f"{where}: 'subsumed' must be true or false")
        node_ids.append(nid)
        ops.append(op)
        eclasses.append(_as_id(node["eclass"], source, f"{where}: 'eclass'"))
        child_nodes.append([_as_id(k, source, f"{where}: child") for k in kids])
        costs.append(check_cost(node.get("cost", 1.0), source, nid))
        subsumed.append(flag)
    class_of_node = dict(zip(node_ids, eclasses, strict=True))
    children: list[list[str]] = []
    for nid, kids in zip(node_ids, child_nodes, strict=True):
        row = []
        for k in kids:
            if k not in class_of_node:
                raise EGraphFormatError(source, f"node {nid!r}: child {k!r} is not a node")
            row.append(class_of_node[k])
        children.append(row)
    roots = data.get("root_eclasses", [])
    if not isinstance(roots, list):
        raise EGraphFormatError(source, "'root_eclasses' must be a list of class ids")
    class_data = data.get("class_data", {})
    if class_data is None:
        class_data = {}
    if not isinstance(class_data, dict):
        raise EGraphFormatError(source, "'class_data' must be an object {class id: data}")
    return assemble(
        node_ids=node_ids,
        ops=ops,
        eclasses=eclasses,
        children=children,
        costs=costs,
        subsumed=subsumed,
        roots=[_as_id(r, source, "root class") for r in roots],
        class_data=class_data,
        source=source,
    )
