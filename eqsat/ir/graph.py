"""The dataflow graph every stage after the frontend works on.

Nodes are stored in topological order and refer to their operands by index. Leaves
(`input`, `param`, `const`, `literal`) carry their own type in their attributes; the
values of `literal` leaves live in `Graph.constants` under the literal's name, so that
nodes stay small hashable records. Attributes are in canonical form (axes
non-negative, reshape targets resolved), so structurally equal programs compare equal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, AttrValue, OpDef, OpKind


@dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[int, ...]
    attrs: tuple[tuple[str, AttrValue], ...]
    type: TensorType
    name: str | None = field(default=None, compare=False)

    @property
    def opdef(self) -> OpDef:
        return REGISTRY[self.op]

    @property
    def attr_dict(self) -> dict[str, AttrValue]:
        return dict(self.attrs)

    def attr(self, key: str) -> AttrValue:
        return self.attr_dict[key]

    @property
    def is_leaf(self) -> bool:
        return self.opdef.kind is OpKind.LEAF


@dataclass
class Graph:
    name: str
    nodes: list[Node] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)
    dims: dict[str, int] = field(default_factory=dict)
    # Values of the literal leaves, by name (stored in the literal's dtype).
    constants: dict[str, np.ndarray] = field(default_factory=dict, compare=False)

    def __iter__(self) -> Iterator[tuple[int, Node]]:
        return iter(enumerate(self.nodes))

    def leaves(self, op: str) -> list[tuple[int, Node]]:
        return [(i, n) for i, n in self if n.op == op]

    @property
    def inputs(self) -> list[tuple[int, Node]]:
        return self.leaves("input")

    @property
    def params(self) -> list[tuple[int, Node]]:
        return self.leaves("param")

    def bound_names(self) -> dict[str, TensorType]:
        """Names and types of everything a caller must supply: inputs, then params."""
        return {str(n.attr("name")): n.type for _, n in self.inputs + self.params}

    def users(self) -> list[list[int]]:
        users: list[list[int]] = [[] for _ in self.nodes]
        for i, n in self:
            for j in n.inputs:
                users[j].append(i)
        return users

    def live(self, stop: Sequence[bool] | None = None) -> list[bool]:
        """Which nodes some output depends on; with `stop`, the walk does not go
        past the nodes it marks (they are live, their operands need not be)."""
        live = [False] * len(self.nodes)
        stack = [i for _, i in self.outputs]
        while stack:
            i = stack.pop()
            if not live[i]:
                live[i] = True
                if stop is None or not stop[i]:
                    stack.extend(self.nodes[i].inputs)
        return live

    def structure(self) -> tuple[Any, ...]:
        """A hashable summary for structural comparison (ignores names of intermediates)."""
        constants = tuple(
            (name, value.dtype.str, value.shape, value.tobytes())
            for name, value in sorted(self.constants.items())
        )
        return (tuple(self.nodes), tuple(self.outputs), constants)

    def used_constants(self) -> dict[str, np.ndarray]:
        """The values of the literals some output depends on."""
        live = self.live()
        return {
            str(n.attr("name")): self.constants[str(n.attr("name"))]
            for i, n in self
            if live[i] and n.op == "literal"
        }


class GraphBuilder:
    """Appends type-checked nodes. Raises eqsat.ops.OpTypeError on ill-typed ones."""

    def __init__(self, name: str, dims: Mapping[str, int] | None = None, cse: bool = False):
        self.graph = Graph(name, dims=dict(dims or {}))
        self._cse: dict[tuple, int] | None = {} if cse else None

    def add(
        self,
        op: str,
        inputs: tuple[int, ...] | list[int] = (),
        attrs: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> int:
        opdef = REGISTRY[op]
        in_types = [self.graph.nodes[i].type for i in inputs]
        bound = opdef.bind_attrs(attrs or {})
        out = opdef.type_of(in_types, bound)
        canon = opdef.canonical_attrs(in_types, bound)
        node = Node(op, tuple(inputs), tuple(canon.items()), out, name)
        if self._cse is not None:
            key = (node.op, node.inputs, node.attrs)
            if key in self._cse:
                return self._cse[key]
            self._cse[key] = len(self.graph.nodes)
        self.graph.nodes.append(node)
        return len(self.graph.nodes) - 1

    def leaf(self, op: str, name: str, type_: TensorType) -> int:
        return self.add(
            op, (), {"name": name, "shape": type_.shape, "dtype": type_.dtype.value}, name
        )

    def const(self, value: float, type_: TensorType, name: str | None = None) -> int:
        attrs = {"value": float(value), "shape": type_.shape, "dtype": type_.dtype.value}
        return self.add("const", (), attrs, name)

    def literal(self, name: str, value: np.ndarray, dtype: DType) -> int:
        """A literal leaf holding `value` (converted to `dtype`) under `name`."""
        stored = np.array(value, dtype=dtype.np_dtype, order="C")
        known = self.graph.constants.get(name)
        if known is not None and (
            known.shape != stored.shape or known.tobytes() != stored.tobytes()
        ):
            raise ValueError(f"literal '{name}' is defined twice with different values")
        self.graph.constants[name] = stored
        attrs = {"name": name, "shape": stored.shape, "dtype": dtype.value}
        return self.add("literal", (), attrs, name)

    def output(self, name: str, node: int) -> None:
        self.graph.outputs.append((name, node))


def leaf_type(node: Node) -> TensorType:
    return TensorType(DType.parse(str(node.attr("dtype"))), tuple(node.attr("shape")))
