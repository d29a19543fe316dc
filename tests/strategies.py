"""Hypothesis strategies shared by the test suite: tensor types, valid applications of
every registry op, and random well-typed models.

Public API (all return hypothesis strategies unless noted):

    dtypes(kind=None)            a DType; kind "float" or "int" restricts it
    shapes(min_rank, max_rank)   a small static shape (sides 1..MAX_SIDE)
    tensor_types(...)            a TensorType
    op_cases(op, first=None)     an OpCase: a valid application of registry op `op`
                                 (operand types + attributes as a user writes them);
                                 `first` pins the first operand's type
    any_op_case()                an OpCase of any registry op (leaves included)
    models(max_ops=6)            a well-typed frontend.ast.Model (checks without error)
    graphs(max_ops=6)            models() checked: an eqsat.ir.graph.Graph
    bindings(graph)              seeded random values for every input/param of `graph`

Plain helpers:

    OP_GENERATORS                op name -> Family(accepts, draw); one entry per op,
                                 defined in eqsat/verify/opcases.py (rule verification
                                 uses them too). A new op needs an entry there (a test
                                 fails otherwise); fused ops are generated from their
                                 composition and need none.
    accepts_first(op, t)         can `t` be the first operand of `op`?
    single_op_graph(case)        Graph: inputs a0, a1, ... -> the op -> output "out"
    CALLABLE_OPS                 names of the non-leaf registry ops
    scaled(n)                    n times $EQSAT_HYPOTHESIS_SCALE (default 1): use it for
                                 max_examples so a long soak run is one variable away

Sizes stay small (sides <= 5, rank <= 4) so that numpy work per example is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from eqsat.interpreter import random_bindings, random_value
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpKind

# The quantization ops' generators live with them (eqsat/quant/opcases.py).
from eqsat.quant.opcases import QUANT_GENERATORS
from eqsat.verify.opcases import (
    OP_GENERATORS,
    OpCase,
    accepts_first,
    broadcast_partner,
    const_values,
    draw_case,
)
from eqsat.verify.space import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, PLAIN, NoCase, dtypes
from frontend import ast
from frontend.checker import check_model

OP_GENERATORS.update({k: v for k, v in QUANT_GENERATORS.items() if k not in OP_GENERATORS})

__all__ = [
    "ALL_DTYPES",
    "CALLABLE_OPS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "OP_GENERATORS",
    "OpCase",
    "accepts_first",
    "any_op_case",
    "bindings",
    "broadcast_partner",
    "dtypes",
    "graphs",
    "models",
    "op_cases",
    "scaled",
    "shapes",
    "sides",
    "single_op_graph",
    "tensor_types",
]


def scaled(n: int) -> int:
    return max(1, int(n * float(os.environ.get("EQSAT_HYPOTHESIS_SCALE", "1"))))


MAX_SIDE = PLAIN.max_side
MAX_RANK = PLAIN.max_rank
CALLABLE_OPS = sorted(n for n, op in REGISTRY.items() if op.kind is not OpKind.LEAF)

# ----------------------------------------------------------------------- basics


def sides(max_side: int = MAX_SIDE) -> st.SearchStrategy[int]:
    return st.integers(1, max_side)


def shapes(
    min_rank: int = 0, max_rank: int = MAX_RANK, max_side: int = MAX_SIDE
) -> st.SearchStrategy[tuple[int, ...]]:
    return PLAIN.shapes(min_rank, max_rank, max_side)


def tensor_types(
    dtype: DType | Sequence[DType] | None = None,
    min_rank: int = 0,
    max_rank: int = MAX_RANK,
    max_side: int = MAX_SIDE,
) -> st.SearchStrategy[TensorType]:
    return PLAIN.tensor_types(dtype, min_rank, max_rank, max_side)


# ---------------------------------------------------------------------- op cases
# The generators live in eqsat.verify.opcases (rule verification builds pattern
# instances from them); these are the strategy wrappers the tests use.


@st.composite
def op_cases(draw, op: str, first: TensorType | None = None) -> OpCase:
    """A valid application of `op`; with `first`, its first operand has that type
    (the caller makes sure accepts_first(op, first))."""
    try:
        return draw_case(draw, op, first)
    except NoCase:
        reject()


def any_op_case() -> st.SearchStrategy[OpCase]:
    return st.sampled_from(sorted(REGISTRY)).flatmap(op_cases)


def single_op_graph(case: OpCase) -> Graph:
    """inputs a0, a1, ... of the case's operand types -> the op -> output 'out'."""
    b = GraphBuilder(f"single_{case.op}")
    if case.op == "literal":  # its values belong to the graph
        t = case.out_type()
        node = b.literal("out", random_value(t, np.random.default_rng(0)), t.dtype)
    elif case.opdef.kind is OpKind.LEAF:
        node = b.add(case.op, (), case.attrs, "out")
    else:
        args = [b.leaf("input", f"a{i}", t) for i, t in enumerate(case.in_types)]
        node = b.add(case.op, args, case.attrs, "out")
    b.output("out", node)
    return b.graph


# ------------------------------------------------------------------------ models


@dataclass
class _Value:
    name: str
    type: TensorType
    expr: ast.Expr | None = None  # None for declared leaves and consts
    uses: int = 0


_NAME_PREFIXES = ("x", "h", "t", "_v", "w.", "Act", "q_")
_DIM_NAMES = ("B", "S", "D", "N_", "h.w")


def _dim_spellings(d: int, dims: dict[str, int]) -> list[ast.Dim]:
    """Ways to write side `d` given the model's dims: 4, B, 2*B, B*S, ..."""
    out: list[ast.Dim] = [d]
    for name, value in dims.items():
        if value == d:
            out.append(name)
        elif d % value == 0 and d // value > 1:
            out.append(f"{d // value}*{name}")
        for other, v2 in dims.items():
            if value * v2 == d:
                out.append(f"{name}*{other}")
    return out


@st.composite
def models(draw, max_ops: int = 6, max_dims: int = 2) -> ast.Model:
    """A random well-typed model: symbolic dims with defaults (some unused, one maybe
    without a default), inputs/params/consts, named and nested calls, shared values,
    dead code, several outputs (a leaf may be an output)."""
    dims: dict[str, int] = {}
    items: list[ast.Item] = []
    for name in draw(st.lists(st.sampled_from(_DIM_NAMES), max_size=max_dims, unique=True)):
        dims[name] = draw(st.integers(1, 4))
        items.append(ast.DimDecl(name, dims[name]))
    if draw(st.integers(0, 4)) == 0:
        items.append(ast.DimDecl("Unused", None))

    values: list[_Value] = []
    counter = iter(range(10_000))

    def fresh(prefix: str | None = None) -> str:
        return (prefix or draw(st.sampled_from(_NAME_PREFIXES))) + str(next(counter))

    def spell(t: TensorType) -> ast.TypeSpec:
        written = tuple(draw(st.sampled_from(_dim_spellings(d, dims))) for d in t.shape)
        return ast.TypeSpec(t.dtype.value, written)

    def new_leaf(t: TensorType) -> _Value:
        kinds = ["input", "param", "const"] + (["literal"] if t.numel <= 8 else [])
        kind = draw(st.sampled_from(kinds))
        v = _Value(fresh(), t)
        if kind == "const":
            items.append(ast.ConstDecl(v.name, spell(t), draw(const_values(t.dtype))))
        elif kind == "literal":  # a const with its values, row-major
            data = draw(st.lists(const_values(t.dtype), min_size=t.numel, max_size=t.numel))
            items.append(ast.ConstDecl(v.name, spell(t), tuple(data)))
        else:
            items.append(ast.LeafDecl(kind, v.name, spell(t)))
        values.append(v)
        return v

    def operand(t: TensorType) -> _Value:
        same = [v for v in values if v.type == t]
        if same and draw(st.integers(0, 2)):
            return draw(st.sampled_from(same))
        return new_leaf(t)

    def ref(v: _Value) -> ast.Expr:
        v.uses += 1
        return ast.Ref(v.name)

    def write_attrs(case: OpCase) -> tuple[ast.Attr, ...]:
        out = []
        for key, value in case.attrs.items():
            if key == "shape" and isinstance(value, tuple):
                value = tuple(
                    draw(st.sampled_from(_dim_spellings(d, dims))) if d > 0 else d for d in value
                )
            out.append(ast.Attr(key, value))
        return tuple(draw(st.permutations(out)))

    n_ops = draw(st.integers(1, max_ops))
    op_values: list[_Value] = []
    for _ in range(n_ops):
        first = None
        if values and draw(st.integers(0, 3)):
            first_v = draw(st.sampled_from(values))
            ops = [op for op in CALLABLE_OPS if accepts_first(op, first_v.type)]
            if ops:
                case = draw(op_cases(draw(st.sampled_from(ops)), first_v.type))
                first = first_v
        if first is None:
            case = draw(op_cases(draw(st.sampled_from(CALLABLE_OPS))))
            first = operand(case.in_types[0]) if case.in_types else None
        args = [first] + [operand(t) for t in case.in_types[1:]] if first else []
        call = ast.Call(case.op, tuple(ref(a) for a in args), write_attrs(case))
        v = _Value(fresh(), case.out_type(), call)
        values.append(v)
        op_values.append(v)

    # Outputs: the last op, plus a random few (maybe a leaf).
    outputs = [op_values[-1]]
    outputs += draw(st.lists(st.sampled_from(values), max_size=2, unique_by=lambda v: v.name))
    outputs = list({v.name: v for v in outputs}.values())
    out_names = {v.name for v in outputs}

    # Values used once (and not outputs) may be nested into their user.
    inline = {
        v.name for v in op_values if v.uses == 1 and v.name not in out_names and draw(st.booleans())
    }
    by_name = {v.name: v for v in values}

    def expand(e: ast.Expr) -> ast.Expr:
        if isinstance(e, ast.Ref):
            return expand(by_name[e.name].expr) if e.name in inline else e
        return ast.Call(e.op, tuple(expand(a) for a in e.args), e.attrs)

    # Each leaf declaration must precede its first use: either all leaves first, or
    # each emitted lazily right before the first statement that needs it.
    leaf_items = [it for it in items if not isinstance(it, ast.DimDecl)]
    dim_items = [it for it in items if isinstance(it, ast.DimDecl)]
    body: list[ast.Item] = list(dim_items)
    if draw(st.booleans()):
        body += leaf_items
        body += [ast.Assign(v.name, expand(v.expr)) for v in op_values if v.name not in inline]
    else:
        leaf_pos = {it.name: k for k, it in enumerate(leaf_items)}
        emitted = 0
        for v in op_values:
            if v.name in inline:
                continue
            stmt = ast.Assign(v.name, expand(v.expr))
            need = max((leaf_pos.get(n, -1) for n in _refs(stmt.expr)), default=-1)
            body += leaf_items[emitted : need + 1]
            emitted = max(emitted, need + 1)
            body.append(stmt)
        body += leaf_items[emitted:]
    split = draw(st.integers(1, len(outputs)))
    names = [v.name for v in outputs]
    body.append(ast.OutputDecl(tuple(names[:split])))
    if names[split:]:
        body.append(ast.OutputDecl(tuple(names[split:])))
    return ast.Model(draw(st.sampled_from(["m", "net", "model_1", "g.x"])), tuple(body))


def _refs(e: ast.Expr) -> list[str]:
    if isinstance(e, ast.Ref):
        return [e.name]
    return [n for a in e.args for n in _refs(a)]


def graphs(max_ops: int = 6) -> st.SearchStrategy[Graph]:
    """Checked random models."""
    return models(max_ops=max_ops).map(check_model)


def bindings(graph: Graph) -> st.SearchStrategy[dict[str, np.ndarray]]:
    return st.integers(0, 2**32 - 1).map(lambda seed: random_bindings(graph, seed))
