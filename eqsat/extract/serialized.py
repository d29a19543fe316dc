"""The egraph-serialize JSON format: read it into an EGraph, write an EGraph back.

Fields (as egglog 13.2's ``serialize(...).to_json()`` writes them, and as the
egraph-serialize crate reads them): ``nodes`` {node id: {op, children: [node id],
eclass, cost, subsumed}} with ``subsumed`` (default false) optional; optional
``root_eclasses`` [class id] and ``class_data`` {class id: {type, let?}}. A child is a
node id and stands for that node's class.

A file is untrusted input, so it is read strictly: every node states its ``children``
and a finite ``cost`` of magnitude up to MAX_COST (negative: maxsat's e-graphs) (egglog always writes both; the egraph-serialize
crate's defaults would hide a truncated or hand-edited file), and the JSON nests at
most MAX_JSON_NESTING levels (the format needs 4), checked before parsing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

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


MAX_JSON_NESTING = 100
# The largest cost a file may give a node. The ILP solver (HiGHS) takes 1e20 as
# infinity, so a DAG of up to 10^4 nodes at this cost still sums below it.
MAX_COST = 1e15
_INT_DIGITS = 19  # longer integers are read as floats (inf beyond float range)


def nesting_problem(text: str, limit: int = MAX_JSON_NESTING) -> str | None:
    """'line L column C: ...' where JSON `text` first nests deeper than `limit`, or
    None. Vectorized: a bracket counts unless it is inside a string (after an odd
    number of unescaped quotes)."""
    raw = text.encode("utf-8", "surrogatepass")
    b = np.frombuffer(raw, dtype=np.uint8)
    if b.size == 0:
        return None
    index = np.arange(b.size)
    backslash = b == ord("\\")
    last_plain = np.maximum.accumulate(np.where(backslash, -1, index))
    run_before = np.empty(b.size, dtype=np.int64)  # backslashes right before each byte
    run_before[0] = 0
    run_before[1:] = index[:-1] - last_plain[:-1]
    quote = (b == ord('"')) & (run_before % 2 == 0)
    outside = np.cumsum(quote) % 2 == 0
    step = ((b == ord("[")) | (b == ord("{"))).astype(np.int64)
    step -= (b == ord("]")) | (b == ord("}"))
    step[~outside] = 0
    deep = np.flatnonzero(np.cumsum(step) > limit)
    if deep.size == 0:
        return None
    at = int(deep[0])
    line_start = raw.rfind(b"\n", 0, at) + 1
    col = len(raw[line_start:at].decode("utf-8", "replace")) + 1
    line = raw.count(b"\n", 0, at) + 1
    return (
        f"line {line} column {col}: JSON nested more than {limit} levels deep "
        "(egraph-serialize nests 4)"
    )


def _read_int(text: str) -> int | float:
    # Python refuses int() of more than 4,300 digits; a cost that long is not finite.
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else float(text)


def parse_json(text: str, source: str = "<json>") -> EGraph:
    """Build an EGraph from egraph-serialize JSON text."""
    problem = nesting_problem(text)
    if problem is not None:
        raise EGraphFormatError(source, problem)
    try:
        # Infinity and NaN are not JSON; read them as floats so the node they are in
        # is named in the error.
        data = json.loads(text, parse_int=_read_int, parse_constant=float)
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
        for name in ("op", "eclass", "children", "cost"):
            if name not in node:
                raise EGraphFormatError(source, f"{where}: missing field {name!r}")
        op = node["op"]
        if not isinstance(op, str):
            raise EGraphFormatError(source, f"{where}: 'op' must be a string, got {op!r}")
        kids = node["children"]
        if not isinstance(kids, list):
            raise EGraphFormatError(source, f"{where}: 'children' must be a list of node ids")
        flag = node.get("subsumed", False)
        if not isinstance(flag, bool):
            raise EGraphFormatError(source, f"{where}: 'subsumed' must be true or false")
        node_ids.append(nid)
        ops.append(op)
        eclasses.append(_as_id(node["eclass"], source, f"{where}: 'eclass'"))
        child_nodes.append([_as_id(k, source, f"{where}: child") for k in kids])
        cost = check_cost(node["cost"], source, nid)
        if not math.isfinite(cost) or abs(cost) > MAX_COST:
            raise EGraphFormatError(
                source,
                f"{where}: cost must be a finite number from -{MAX_COST:g} to {MAX_COST:g}, "
                f"got {cost}",
            )
        costs.append(cost)
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
