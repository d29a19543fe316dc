"""Read egglog's serialized e-graph (egraph-serialize JSON) back into eqsat terms.

Only e-classes of sort Op are programs; the rest (i64, f64, String, bool, IntList)
hold attribute values and shapes, which are decoded into Python values here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from eqsat.egraph.encoding import op_of_constructor, operand_names
from eqsat.ops import REGISTRY, AttrType, AttrValue


@dataclass(frozen=True)
class ENode:
    id: str
    op: str  # registry op name
    eclass: str
    children: tuple[str, ...]  # e-class ids of the operands
    attrs: tuple[tuple[str, AttrValue], ...]


@dataclass
class DecodedEGraph:
    """The Op part of a serialized e-graph: classes, their nodes, egglog's shapes."""

    classes: dict[str, list[ENode]] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    # (op, operand classes, attrs) of an e-node -> the rule that built it, where the
    # rules recorded it (eqsat/rules/provenance.py)
    provenance: dict[tuple, str] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return sum(len(v) for v in self.classes.values())


class _Values:
    def __init__(self, nodes: dict[str, Any]):
        self.nodes = nodes
        self.by_class: dict[str, list[str]] = {}
        for nid, node in nodes.items():
            self.by_class.setdefault(node["eclass"], []).append(nid)
        self._lists: dict[str, tuple[int, ...] | None] = {}
        self._strings: dict[str, str] = {}

    def primitive(self, node_id: str, kind: AttrType) -> AttrValue:
        text = self.nodes[node_id]["op"]
        if kind is AttrType.INT:
            return int(text)
        if kind is AttrType.FLOAT:
            return float(text)
        if kind is AttrType.BOOL:
            return text == "true"
        return json.loads(text)

    def string_class(self, eclass: str) -> str:
        if eclass not in self._strings:
            self._strings[eclass] = json.loads(self.nodes[self.by_class[eclass][0]]["op"])
        return self._strings[eclass]

    def int_list(self, eclass: str, depth: int = 0) -> tuple[int, ...] | None:
        """The concrete list in an IntList class, or None if it has none (yet)."""
        if eclass in self._lists:
            return self._lists[eclass]
        self._lists[eclass] = None  # cycle guard
        result = None
        for nid in self.by_class.get(eclass, ()):
            node = self.nodes[nid]
            if node["op"] == "INil":
                result = ()
                break
            if node["op"] == "ICons":
                head, tail = node["children"]
                rest = self.int_list(self.nodes[tail]["eclass"], depth + 1)
                if rest is not None:
                    result = (int(self.nodes[head]["op"]), *rest)
                    break
        self._lists[eclass] = result
        return result


def decode(serialized: dict[str, Any]) -> DecodedEGraph:
    nodes: dict[str, Any] = serialized["nodes"]
    ctor_to_op = op_of_constructor()
    values = _Values(nodes)
    out = DecodedEGraph()
    for nid, node in nodes.items():
        op_name = ctor_to_op.get(node["op"])
        eclass = node["eclass"]
        if node["op"] == "ShapeOf":
            shape = values.int_list(eclass)
            if shape is not None:
                out.shapes[nodes[node["children"][0]]["eclass"]] = shape
            continue
        if node["op"] == "DT":
            out.dtypes[nodes[node["children"][0]]["eclass"]] = values.string_class(eclass)
            continue
        if op_name is None:
            prov_of = ctor_to_op.get(node["op"][5:]) if node["op"].startswith("Prov_") else None
            if prov_of is not None:
                key = _term(prov_of, node["children"], nodes, values)
                if key is not None:
                    out.provenance[key] = values.string_class(eclass)
            continue
        key = _term(op_name, node["children"], nodes, values)
        if key is not None:
            enode = ENode(nid, op_name, eclass, key[1], key[2])
            out.classes.setdefault(eclass, []).append(enode)
    return out


def _term(op_name: str, kids: list[str], nodes: dict[str, Any], values: _Values) -> tuple | None:
    """(op, operand classes, attrs) of a constructor's arguments; None while an IntList
    attribute has no concrete value yet."""
    op = REGISTRY[op_name]
    n_operands = len(operand_names(op))
    attrs = []
    for spec, kid in zip(op.attrs, kids[n_operands:], strict=True):
        if spec.type is AttrType.INTS:
            value = values.int_list(nodes[kid]["eclass"])
            if value is None:
                return None
            attrs.append((spec.name, value))
        else:
            value = values.primitive(kid, spec.type)
            if spec.type is AttrType.DTYPE or spec.type is AttrType.STR:
                value = str(value)
            attrs.append((spec.name, value))
    operands = tuple(nodes[k]["eclass"] for k in kids[:n_operands])
    return (op_name, operands, tuple(attrs))
