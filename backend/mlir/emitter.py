"""The driver: an extracted graph -> one func.func in upstream MLIR dialects.

Arguments are the model's inputs then params, named as in the model (so an npz of
`eqsat run --save-inputs` maps onto them by name); results are the outputs in the
model's order. Every live node goes through the table (table.py) from registry op to
emitter; values are named after the model's statements and carry `loc` attributes
pointing at the model file's lines when the caller gives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.ops import REGISTRY, OpKind

from .core import Apply, Func, MlirEmitError, Val, ssa_safe, tensor_type


@dataclass
class MlirModule:
    """Emitted text with the function's signature: argument and result names in order."""

    text: str
    func: str
    args: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)


class Emitter:
    def __init__(self, graph: Graph, func: Func) -> None:
        self.graph, self.func = graph, func
        self.known: dict[str, np.ndarray] = {}  # values known at compile time, by SSA name
        self.node_of: dict[str, int] = {}  # graph node of an SSA value
        self.consts: dict[str, np.ndarray] = {}  # param values known at compile time
        self.tiled = False  # --emit mlir-tiled: the extracted tiles as loops (tiled.py)
        self.k_tile = 0  # set while a tile's body is emitted: K step of its products

    def known_value(self, v: Val) -> np.ndarray | None:
        """v's contents if known at compile time: a literal, a const, a given param, or
        a node computed from those alone (the interpreter evaluates it)."""
        if v.name not in self.known and v.name in self.node_of:
            from eqsat.interpreter import BindingError, evaluate_selected

            i = self.node_of[v.name]
            try:
                self.known[v.name] = evaluate_selected(self.graph, self.consts, [i])[i]
            except BindingError:  # it depends on an input
                return None
        return self.known.get(v.name)

    def apply(self, ap: Apply, args: list[Val]) -> Val:
        from .table import EMITTERS
        from .tiled import emit_tiled, tileable

        if self.tiled and tileable(ap, args):
            return emit_tiled(self, ap, args)

        emit = EMITTERS.get(ap.op)
        if emit is None and _composed(ap.op):  # an op registered after import (custom)
            from .fused import emit_fused

            emit = emit_fused
        if emit is None:
            raise MlirEmitError(f"op '{ap.op}' has no MLIR emitter yet (backend/mlir/table.py)")
        return emit(self, ap, args)


def emit_mlir(
    graph: Graph,
    *,
    func_name: str = "main",
    locations: Mapping[str, tuple[int, int]] | None = None,
    source: str | None = None,
    consts: Mapping[str, np.ndarray] | None = None,
    tiled: bool = False,
    shapes: Sequence[tuple] | None = None,
) -> MlirModule:
    """`graph` as MLIR text. `locations` maps statement and leaf names to (line, col)
    in `source` (the model file); nodes without a name take their first named
    user's location. `consts` are param values known at compile time (the quantized
    params): they stay arguments, and only ops that need compile-time values (the
    per-channel requantization tables) read them. `tiled`: the extracted GEMM tiles as
    scf loops (tiled.py). `shapes`: per node, its shape with dynamic axes as
    dynamic.Sym (dynamic.symbolic_shapes); such axes are written `?`."""
    if shapes is not None and tiled:
        raise MlirEmitError("--emit mlir-tiled needs static shapes: drop the dynamic dims")
    shape_of = (
        (lambda i: tuple(shapes[i]))
        if shapes is not None
        else (lambda i: graph.nodes[i].type.shape)
    )
    func = Func(func_name)
    em = Emitter(graph, func)
    em.tiled = tiled
    em.consts = dict(consts or {})
    live = graph.live()
    values: list[Val | None] = [None] * len(graph.nodes)
    locs = _node_locations(graph, locations or {}, source)
    owners = _owners(graph)

    args = []
    for i, node in graph.inputs + graph.params:
        name = str(node.attr("name"))
        ssa = func.fresh(name)
        shape, dtype = shape_of(i), node.type.dtype.value
        values[i] = Val(ssa, shape, dtype)
        if consts and name in consts:
            em.known[ssa] = np.asarray(consts[name])
        args.append((name, ssa, shape, dtype, locs.get(i, "")))
    func.define_dims([values[i] for i, _ in graph.inputs + graph.params])

    for i, node in graph:
        if not live[i] or values[i] is not None:
            continue
        func.loc = locs.get(i, "")
        hint = node.name or (f"{owners[i]}.{node.op}" if i in owners else node.op)
        ap = Apply(node.op, node.attr_dict, shape_of(i), node.type.dtype.value, hint)
        try:
            values[i] = _emit_node(em, graph, node, ap, [values[j] for j in node.inputs])
        except (TypeError, ValueError) as err:
            if shapes is None or all(isinstance(d, int) for d in ap.shape):
                raise
            where = f"'{node.name}' ({node.op})" if node.name else f"a {node.op}"
            raise MlirEmitError(
                f"{where} cannot take a dynamic dim yet ({err}); emit the model for one "
                "value of the dimension"
            ) from None
        em.node_of.setdefault(values[i].name, i)
    func.loc = ""

    results = [values[i] for _, i in graph.outputs]
    sig = ", ".join(f"{ssa}: {tensor_type(s, d)}{loc}" for _, ssa, s, d, loc in args)
    res_types = ", ".join(v.type for v in results)
    head = f"func.func @{ssa_safe(func_name)}({sig}) -> ({res_types}) {{"
    body = [f"  {line}" for line in func.lines]
    ret = f"  return {', '.join(v.name for v in results)} : {res_types}"
    if not results:
        ret = "  return"
    lines = [head, *body, ret, "}"]
    text = "\n".join(lines) + "\n"
    return MlirModule(
        text,
        ssa_safe(func_name),
        [(name, s, d) for name, _, s, d, _ in args],
        [name for name, _ in graph.outputs],
    )


def _emit_node(em: Emitter, graph: Graph, node, ap: Apply, args: list[Val]) -> Val:
    func = em.func
    if node.op == "literal":
        values = graph.constants[str(node.attr("name"))]
        val = func.constant(
            values.astype(np.float32) if ap.dtype == "bf16" else values, ap.dtype, ap.hint
        )
        em.known[val.name] = values
        return val
    if REGISTRY[node.op].kind is OpKind.LEAF and node.op not in ("iota", "const"):
        raise MlirEmitError(f"leaf op '{node.op}' has no MLIR emitter")
    return em.apply(ap, args)


def _node_locations(
    graph: Graph, locations: Mapping[str, tuple[int, int]], source: str | None
) -> dict[int, str]:
    """loc(...) suffixes by node: a named node's own, else its first named user's."""
    if not locations or source is None:
        return {}
    out: dict[int, str] = {}
    users = graph.users()
    file = source.replace("\\", "\\\\").replace('"', '\\"')
    for i in reversed(range(len(graph.nodes))):
        node = graph.nodes[i]
        name = (
            str(node.attr("name")) if node.is_leaf and node.op in ("input", "param") else node.name
        )
        if name in locations:
            line, col = locations[name]
            out[i] = f' loc("{file}":{line}:{col})'
        else:
            inherited = next((out[u] for u in users[i] if u in out), None)
            if inherited:
                out[i] = inherited
    return out


def statement_locations(model: Any) -> dict[str, tuple[int, int]]:
    """(line, col) of every named statement and leaf declaration of a parsed model (the
    frontend's ast.Model: items with a name and a pos); empty where positions are
    unknown (an imported ONNX graph)."""
    out: dict[str, tuple[int, int]] = {}
    for item in getattr(model, "items", ()):
        name, pos = getattr(item, "name", None), getattr(item, "pos", None)
        if isinstance(name, str) and pos is not None and pos.line > 0:
            out[name] = (pos.line, pos.col)
    return out


def _owners(graph: Graph) -> dict[int, str]:
    """The statement an unnamed node belongs to: its first named user (transitively)."""
    out: dict[int, str] = {}
    users = graph.users()
    for i in reversed(range(len(graph.nodes))):
        for u in users[i]:
            owner = graph.nodes[u].name or out.get(u)
            if owner:
                out[i] = owner
                break
    return out


def _composed(op: str) -> bool:
    """Is `op` a registry op defined by a fused body (emitted from that body)?"""
    from eqsat.ops.fused import Call

    opdef = REGISTRY.get(op)
    return opdef is not None and isinstance(opdef.composition, Call)
