"""Which axes of every value have the extent of the padded dimension.

Shapes are concrete in the IR, so a value's axes of extent S are found by building the
model at two values of S (the bucket and a probe) and comparing: an axis whose extent
follows S exactly is a padded axis; one that does not change is not; anything else
(2*S after a reshape, S+1 after a concat) mixes S with other values and is refused.
The same comparison catches literals and attributes that depend on the value of S.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqsat.bundle.errors import PaddingError
from eqsat.ir.graph import Graph, Node

# attributes that legitimately hold S (shapes of reshapes, broadcasts, iotas, slices)
SHAPE_ATTRS = frozenset({"shape", "ends"})


@dataclass(frozen=True)
class Where:
    """Source positions of a model's statements, to name the op a refusal is about."""

    file: str = "<model>"
    source: str | None = None
    positions: tuple[tuple[str, int, int], ...] = ()  # (statement, line, col)

    @classmethod
    def of(cls, model) -> Where:
        """From a parsed frontend model (ast.Model); empty for models without positions."""
        pos = []
        for item in getattr(model, "items", ()):
            name, p = getattr(item, "name", None), getattr(item, "pos", None)
            if isinstance(name, str) and p is not None and p.line > 0:
                pos.append((name, p.line, p.col))
        return cls(getattr(model, "file", "<model>"), getattr(model, "source", None), tuple(pos))

    def error(self, graph: Graph, i: int, message: str) -> PaddingError:
        node = graph.nodes[i]
        statement = node.name or _owner(graph, i)
        line = col = 0
        for name, ln, c in self.positions:
            if name == statement:
                line, col = ln, c
        where = f" (in '{statement}')" if statement else ""
        return PaddingError(
            f"{node.op}{where}: {message}", node.op, statement, self.file, line, col, self.source
        )


NOWHERE = Where()


def _owner(graph: Graph, i: int) -> str | None:
    """The statement an unnamed node belongs to: its first named user, transitively."""
    users = graph.users()
    seen = {i}
    todo = list(users[i])
    while todo:
        u = todo.pop(0)
        if u in seen:
            continue
        seen.add(u)
        if graph.nodes[u].name:
            return graph.nodes[u].name
        todo.extend(users[u])
    return None


Span = tuple[int, int]  # fixed positions before and after the S segment of an axis
Axes = dict[int, Span]  # a value's padded axes: axis -> span


def padded_axes(graph: Graph, probe: Graph, dim: str, where: Where = NOWHERE) -> list[Axes]:
    """For each node of `graph` (the model at S = graph.dims[dim]), its padded axes: those
    of extent before + S + after, with the span (before, after) of fixed positions around
    the S segment (a KV cache grown by a token, `concat(past, new)`, has (0, 1)); padding
    then sits at positions before + n .. before + S. `probe` is the model at another S."""
    size, other = graph.dims[dim], probe.dims[dim]
    if size == other:
        raise ValueError("the probe must bind the dimension to another value")
    if len(graph.nodes) != len(probe.nodes) or any(
        a.op != b.op or a.inputs != b.inputs for a, b in zip(graph.nodes, probe.nodes, strict=True)
    ):
        raise PaddingError(
            f"the model's structure changes with the value of {dim} (constant folding or "
            "shape arithmetic depends on it): one program cannot serve several values",
            "model",
            file=where.file,
        )
    out: list[Axes] = []
    live = graph.live()
    for i, (a, b) in enumerate(zip(graph.nodes, probe.nodes, strict=True)):
        if not live[i]:  # dead code is never computed: nothing to refuse
            out.append({})
            continue
        extras: dict[int, int] = {}
        for k, (ea, eb) in enumerate(zip(a.type.shape, b.type.shape, strict=True)):
            if ea == eb:
                continue
            if ea - size == eb - other >= 0:
                extras[k] = ea - size
                continue
            raise where.error(
                graph,
                i,
                f"axis {k} has extent {ea} at {dim}={size} and {eb} at {dim}={other}: "
                f"{dim} is mixed with another extent, so padding {dim} would move values "
                "between positions",
            )
        out.append(_spans(graph, i, extras, out, dim, where))
        _check_attrs(graph, probe, i, dim, where)
        if a.op == "literal":
            _check_literal(graph, probe, i, out[i], dim, where)
    return out


def _spans(
    graph: Graph, i: int, extras: dict[int, int], known: list[Axes], dim: str, where: Where
) -> Axes:
    """Where the S segment sits on each padded axis of node i: at the start for a leaf,
    after the operands before it for a concat along it, as in its operands otherwise."""
    node = graph.nodes[i]
    spans: Axes = {}
    for k, extra in extras.items():
        if node.op in ("input", "literal") and extra:
            raise where.error(
                graph, i, f"a leaf of extent {dim}+{extra}: its padding would not be at the end"
            )
        if node.op == "concat" and k == int(node.attr("axis")):
            spans[k] = _concat_span(graph, i, k, known, dim, where)
            continue
        found = {sp for j in node.inputs for sp in known[j].values() if sum(sp) == extra}
        if len(found) == 1:
            spans[k] = found.pop()
        elif not found and extra == 0:
            spans[k] = (0, 0)
        else:
            raise where.error(
                graph,
                i,
                f"axis {k} has extent {dim}+{extra} and its operands do not say where the "
                f"{dim} positions sit in it",
            )
    return spans


def _concat_span(
    graph: Graph, i: int, axis: int, known: list[Axes], dim: str, where: Where
) -> Span:
    node = graph.nodes[i]
    offset, span = 0, None
    for j in node.inputs:
        if axis in known[j]:
            if span is not None:
                raise where.error(
                    graph, i, f"joins two tensors along {dim}: padding would sit in the middle"
                )
            span = offset + known[j][axis][0]
        offset += graph.nodes[j].type.shape[axis]
    if span is None:
        raise where.error(graph, i, f"grows with {dim} along an axis no operand pads")
    size = graph.dims[dim]
    return span, node.type.shape[axis] - span - size


def _check_attrs(graph: Graph, probe: Graph, i: int, dim: str, where: Where) -> None:
    a, b = graph.nodes[i], probe.nodes[i]
    for (key, va), (_, vb) in zip(a.attrs, b.attrs, strict=True):
        if va != vb and key not in SHAPE_ATTRS and a.op not in ("input", "param", "literal"):
            what = "a constant computed from" if a.op == "const" else f"attribute {key} depends on"
            raise where.error(
                graph,
                i,
                f"{what} the value of {dim} ({va} at {dim}={graph.dims[dim]}, {vb} at "
                f"{dim}={probe.dims[dim]}): a padded program would use the bucket's {dim}",
            )


def _check_literal(graph: Graph, probe: Graph, i: int, axes: Axes, dim: str, where: Where) -> None:
    """A folded constant must hold, at the valid positions, what it holds at any other
    value of S (an iota-built causal mask does; `const n = S` does not)."""
    a, b = graph.nodes[i], probe.nodes[i]
    va = graph.constants[str(a.attr("name"))]
    vb = probe.constants[str(b.attr("name"))]
    n = min(graph.dims[dim], probe.dims[dim])
    cut = tuple(slice(0, n) if k in axes else slice(None) for k in range(va.ndim))
    if not np.array_equal(va[cut], vb[cut], equal_nan=True):
        raise where.error(
            graph,
            i,
            f"a constant computed from the value of {dim} (not from positions along it): "
            f"a padded program would use the bucket's {dim} instead of the real one",
        )


def check_reshape(
    graph: Graph, probe: Graph, i: int, axes: list[Axes], dim: str, where: Where
) -> None:
    """A reshape keeps positions when each padded axis has the same row-major stride
    (product of the extents after it) in and out, at both values of S."""
    for g in (graph, probe):
        node: Node = g.nodes[i]
        src = g.nodes[node.inputs[0]].type.shape
        dst = node.type.shape
        strides_in = [(_after(src, k), sp) for k, sp in sorted(axes[node.inputs[0]].items())]
        strides_out = [(_after(dst, k), sp) for k, sp in sorted(axes[i].items())]
        if strides_in != strides_out:
            raise where.error(
                graph,
                i,
                f"the reshape merges {dim} with another axis ({list(src)} -> {list(dst)} at "
                f"{dim}={g.dims[dim]}): padded positions would land among valid ones",
            )


def _after(shape: tuple[int, ...], k: int) -> int:
    return int(np.prod(shape[k + 1 :], dtype=np.int64))
