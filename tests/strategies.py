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

    OP_GENERATORS                op name -> Family(accepts, draw); one entry per op.
                                 A new op needs an entry here (a test fails otherwise);
                                 fused ops are generated from their composition and
                                 need none.
    accepts_first(op, t)         can `t` be the first operand of `op`?
    single_op_graph(case)        Graph: inputs a0, a1, ... -> the op -> output "out"
    CALLABLE_OPS                 names of the non-leaf registry ops
    scaled(n)                    n times $EQSAT_HYPOTHESIS_SCALE (default 1): use it for
                                 max_examples so a long soak run is one variable away

Sizes stay small (sides <= 5, rank <= 4) so that numpy work per example is cheap.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from eqsat.interpreter import random_bindings
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpDef, OpKind, OpTypeError
from frontend import ast
from frontend.checker import check_model


def scaled(n: int) -> int:
    return max(1, int(n * float(os.environ.get("EQSAT_HYPOTHESIS_SCALE", "1"))))


MAX_SIDE = 5
MAX_RANK = 4
FLOAT_DTYPES = (DType.F32, DType.BF16)
INT_DTYPES = (DType.I8, DType.I32)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES
CALLABLE_OPS = sorted(n for n, op in REGISTRY.items() if op.kind is not OpKind.LEAF)

# ----------------------------------------------------------------------- basics


def sides(max_side: int = MAX_SIDE) -> st.SearchStrategy[int]:
    return st.integers(1, max_side)


def dtypes(kind: str | None = None) -> st.SearchStrategy[DType]:
    pool = {"float": FLOAT_DTYPES, "int": INT_DTYPES, None: ALL_DTYPES}[kind]
    return st.sampled_from(pool)


def shapes(
    min_rank: int = 0, max_rank: int = MAX_RANK, max_side: int = MAX_SIDE
) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(sides(max_side), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def tensor_types(
    draw,
    dtype: DType | Sequence[DType] | None = None,
    min_rank: int = 0,
    max_rank: int = MAX_RANK,
    max_side: int = MAX_SIDE,
) -> TensorType:
    if dtype is None:
        dt = draw(dtypes())
    elif isinstance(dtype, DType):
        dt = dtype
    else:
        dt = draw(st.sampled_from(tuple(dtype)))
    return TensorType(dt, draw(shapes(min_rank, max_rank, max_side)))


# ---------------------------------------------------------------------- op cases


@dataclass(frozen=True)
class OpCase:
    """A valid application of one op: operand types and the attributes as written
    (raw: negative axes, -1 in reshape, defaults possibly left out)."""

    op: str
    in_types: tuple[TensorType, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def opdef(self) -> OpDef:
        return REGISTRY[self.op]

    def bound_attrs(self) -> dict[str, Any]:
        return self.opdef.bind_attrs(self.attrs)

    def out_type(self) -> TensorType:
        return self.opdef.type_of(self.in_types, self.bound_attrs())


@dataclass(frozen=True)
class Family:
    """accepts(op, t): may t be the op's first operand; draw(draw, op, first): an OpCase
    whose first operand is `first` (or any, when None)."""

    accepts: Callable[[OpDef, TensorType], bool]
    draw: Callable[..., OpCase]


_PROBE_ATTRS = {
    "scale": 1.0,
    "shape": (2, 2),
    "dtype": "f32",
    "starts": (0,),
    "ends": (1,),
    "value": 0,
    "name": "x",
}


def _dtype_ok(op: OpDef, dtype: DType) -> bool:
    """Probe the registry: does `op` take operands of `dtype` (shape [2, 2] each)?"""
    t = TensorType(dtype, (2, 2))
    given = {s.name: _PROBE_ATTRS[s.name] for s in op.attrs if s.required}
    try:
        op.type_of([t] * len(op.operands), op.bind_attrs(given))
    except OpTypeError:
        return False
    return True


@functools.cache
def _ok_dtypes(op: OpDef) -> tuple[DType, ...]:
    return tuple(d for d in ALL_DTYPES if _dtype_ok(op, d))


def _first(draw, op: OpDef, first, dtypes_=None, min_rank=0, max_rank=MAX_RANK, max_side=MAX_SIDE):
    if first is not None:
        return first
    return draw(tensor_types(dtypes_ or _ok_dtypes(op), min_rank, max_rank, max_side))


def _maybe(draw, attrs: dict, key: str, value: Any, default: Any = None, always: bool = False):
    """Write `key=value` unless it equals the default and we draw to leave it out."""
    if always or value != default or draw(st.booleans()):
        attrs[key] = value


def broadcast_partner(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (possibly of another rank, possibly growing it)."""
    rank = draw(st.integers(0, MAX_RANK))
    out = []
    for i in range(rank):
        j = len(shape) - rank + i
        if j < 0 or shape[j] == 1:
            out.append(draw(sides()))
        else:
            out.append(draw(st.sampled_from([shape[j], 1])))
    return tuple(out)


# -- leaves


def _draw_leaf(draw, op: OpDef, first) -> OpCase:
    t = draw(tensor_types())
    attrs: dict[str, Any] = {"shape": t.shape, "dtype": t.dtype.value}
    if op.name == "const":
        attrs["value"] = draw(_const_values(t.dtype))
    else:
        attrs["name"] = draw(st.sampled_from(["x", "w", "in_0", "p.q"]))
    return OpCase(op.name, (), attrs)


def _const_values(dtype: DType) -> st.SearchStrategy[int | float]:
    if dtype.is_int:
        return st.integers(-100, 100)
    return st.one_of(
        st.integers(-100, 100),
        st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32),
    )


# -- elementwise


def _draw_unary(draw, op: OpDef, first) -> OpCase:
    return OpCase(op.name, (_first(draw, op, first),))


def _draw_binary(draw, op: OpDef, first) -> OpCase:
    a = _first(draw, op, first)
    b = a.with_shape(broadcast_partner(draw, a.shape))
    if first is None and draw(st.booleans()):
        a, b = b, a
    return OpCase(op.name, (a, b))


def _accepts_dtype(op: OpDef, t: TensorType) -> bool:
    return t.dtype in _ok_dtypes(op)


# -- linear algebra


def _batch_partner(draw, batch: tuple[int, ...]) -> tuple[int, ...]:
    out = broadcast_partner(draw, batch)
    return out[-(MAX_RANK - 2) :] if len(out) > MAX_RANK - 2 else out


def _draw_matmul(draw, op: OpDef, first) -> OpCase:
    a = _first(draw, op, first, min_rank=2)
    k = a.shape[-1]
    b_batch = _batch_partner(draw, a.shape[:-2])
    b = TensorType(a.dtype, (*b_batch, k, draw(sides())))
    attrs: dict[str, Any] = {}
    if op.name == "qmatmul":
        for key in ("a_zero", "b_zero"):
            if draw(st.booleans()):
                attrs[key] = draw(st.integers(-128, 127))
    return OpCase(op.name, (a, b), attrs)


def _accepts_matmul(op: OpDef, t: TensorType) -> bool:
    return t.rank >= 2 and _accepts_dtype(op, t)


def _draw_conv(draw, op: OpDef, first) -> OpCase:
    x = first or TensorType(
        draw(dtypes("float")),
        (draw(sides(2)), draw(sides(3)), draw(st.integers(1, 7)), draw(st.integers(1, 7))),
    )
    _, c, h, w = x.shape
    ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    kh = draw(st.integers(1, min(h + 2 * ph, 4)))
    kw = draw(st.integers(1, min(w + 2 * pw, 4)))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    wt = TensorType(x.dtype, (draw(sides(4)), c, kh, kw))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "stride", (sh, sw), (1, 1))
    _maybe(draw, attrs, "padding", (ph, pw), (0, 0))
    return OpCase(op.name, (x, wt), attrs)


def _accepts_conv(op: OpDef, t: TensorType) -> bool:
    return t.rank == 4 and t.dtype.is_float


def _draw_matmul_nt(draw, op: OpDef, first) -> OpCase:
    """a @ b^T: a [..., M, K], b [..., N, K]."""
    case = _draw_matmul(draw, REGISTRY["matmul"], first)
    a, b = case.in_types
    return OpCase(op.name, (a, b.with_shape((*b.shape[:-2], b.shape[-1], b.shape[-2]))))


# -- fused kernels, generically from their composition


def _draw_fused(draw, op: OpDef, first) -> OpCase:
    """Walk the body bottom-up: each inner op's generator types the operands it
    consumes, its first operand pinned to the result of the call below it. Fused
    attributes take the values the inner generators chose for what they refer to."""
    from eqsat.ops.fused import AttrRef

    types: dict[str, TensorType] = {}
    if first is not None:
        types[op.operands[0]] = first
    fused_attrs: dict[str, Any] = {}

    def walk(node) -> TensorType:
        if isinstance(node, str):
            return types[node]
        fixed = [types.get(a) if isinstance(a, str) else walk(a) for a in node.args]
        sub = REGISTRY[node.op]
        swap = False
        if (
            fixed[0] is None
            and len(fixed) == 2
            and fixed[1] is not None
            and OP_GENERATORS[node.op] is BINARY
        ):
            fixed, swap = fixed[::-1], True  # broadcasting is symmetric in shape
        if fixed[0] is not None and not accepts_first(node.op, fixed[0]):
            st.reject()
        case = OP_GENERATORS[node.op].draw(draw, sub, fixed[0])
        in_types = list(case.in_types[::-1] if swap else case.in_types)
        fixed = fixed[::-1] if swap else fixed
        if len(in_types) != len(node.args):
            st.reject()
        for a, want, got in zip(node.args, fixed, in_types, strict=True):
            if want is not None and want != got:
                st.reject()
            if isinstance(a, str):
                types[a] = got
        bound = case.bound_attrs()
        given = {}
        for key, value in node.attrs.items():
            if isinstance(value, AttrRef):
                fused_attrs[value.name] = bound[key]
                given[key] = bound[key]
            else:
                given[key] = value
        try:
            return sub.type_of(in_types, sub.bind_attrs(given))
        except OpTypeError:
            st.reject()

    walk(op.composition)
    attrs = {}
    for spec in op.attrs:
        if spec.name in fused_attrs:
            _maybe(draw, attrs, spec.name, fused_attrs[spec.name], spec.default)
    case = OpCase(op.name, tuple(types[o] for o in op.operands), attrs)
    try:
        case.out_type()
    except OpTypeError:
        st.reject()
    return case


def _accepts_fused(op: OpDef, t: TensorType) -> bool:
    """The first operand feeds the innermost call whose first argument it is."""
    node = op.composition
    while not isinstance(node, str) and not isinstance(node.args[0], str):
        node = node.args[0]
    if isinstance(node, str) or node.args[0] != op.operands[0]:
        return False
    return accepts_first(node.op, t)


# -- layout


def _negate_some(draw, values: Sequence[int], rank: int) -> tuple[int, ...]:
    """Write some axes counted from the end (negative), as users do."""
    return tuple(v - rank if draw(st.booleans()) else v for v in values)


def _draw_transpose(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    perm = draw(st.permutations(range(x.rank)))
    attrs: dict[str, Any] = {}
    if x.rank == 0 or draw(st.integers(0, 3)):
        attrs["perm"] = _negate_some(draw, perm, x.rank)
    return OpCase(op.name, (x,), attrs)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _draw_reshape(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    n = x.numel
    rank = draw(st.integers(0 if n == 1 else 1, MAX_RANK))
    target, rest = [], n
    for _ in range(rank - 1):
        d = draw(st.sampled_from(_divisors(rest)))
        target.append(d)
        rest //= d
    if rank:
        target.append(rest)
    target = draw(st.permutations(target))
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return OpCase(op.name, (x,), {"shape": tuple(target)})


def _draw_concat(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first, min_rank=1)
    axis = draw(st.integers(0, x.rank - 1))
    types = [x]
    for _ in range(draw(st.integers(0, 2))):
        shape = list(x.shape)
        shape[axis] = draw(sides())
        types.append(x.with_shape(tuple(shape)))
    attrs: dict[str, Any] = {}
    _maybe(draw, attrs, "axis", _negate_some(draw, [axis], x.rank)[0], 0)
    return OpCase(op.name, tuple(types), attrs)


def _draw_slice(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    axes = draw(st.permutations(range(x.rank)))[: draw(st.integers(0, x.rank))]
    starts, ends = [], []
    for a in axes:
        n = x.shape[a]
        lo = draw(st.integers(0, n - 1))
        hi = draw(st.integers(lo + 1, n))
        starts.append(draw(st.sampled_from([lo, lo - n])))
        end_forms = [hi] + ([hi - n] if hi < n else [n + draw(st.integers(0, 5))])
        ends.append(draw(st.sampled_from(end_forms)))
    attrs: dict[str, Any] = {"starts": tuple(starts), "ends": tuple(ends)}
    if list(axes) != list(range(len(axes))) or draw(st.booleans()):
        attrs["axes"] = _negate_some(draw, axes, x.rank)
    return OpCase(op.name, (x,), attrs)


def _draw_broadcast(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    extra = draw(st.integers(0, MAX_RANK - x.rank)) if x.rank < MAX_RANK else 0
    shape = [draw(sides()) for _ in range(extra)]
    shape += [draw(sides()) if d == 1 else d for d in x.shape]
    return OpCase(op.name, (x,), {"shape": tuple(shape)})


# -- normalizations and reductions


def _draw_softmax(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first, min_rank=1)
    attrs: dict[str, Any] = {}
    axis = draw(st.integers(-x.rank, x.rank - 1))
    _maybe(draw, attrs, "axis", axis, -1)
    return OpCase(op.name, (x,), attrs)


def _draw_layernorm(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first, FLOAT_DTYPES, min_rank=1)
    v = x.with_shape((x.shape[-1],))
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        attrs["eps"] = draw(st.sampled_from([1e-12, 1e-5, 0.001, 0.5, 1]))
    return OpCase(op.name, (x, v, v), attrs)


def _accepts_rank1(op: OpDef, t: TensorType) -> bool:
    return t.rank >= 1 and _accepts_dtype(op, t)


def _draw_reduce(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    attrs: dict[str, Any] = {}
    if x.rank and draw(st.booleans()):
        axes = draw(st.permutations(range(x.rank)))[: draw(st.integers(1, x.rank))]
        attrs["axes"] = _negate_some(draw, axes, x.rank)
    _maybe(draw, attrs, "keepdims", draw(st.booleans()), False)
    return OpCase(op.name, (x,), attrs)


# -- number formats


def _draw_cast(draw, op: OpDef, first) -> OpCase:
    return OpCase(op.name, (_first(draw, op, first),), {"dtype": draw(dtypes()).value})


_SCALES = st.sampled_from([0.001, 0.02, 0.1, 0.5, 1.0, 3, 17.25])


def _scale_attrs(draw, out: DType | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"scale": draw(_SCALES)}
    if out is not None:
        _maybe(draw, attrs, "dtype", out.value, "i8")
    if draw(st.booleans()):
        info = np.iinfo((out or DType.I8).np_dtype)
        attrs["zero_point"] = draw(st.integers(max(int(info.min), -1000), min(int(info.max), 1000)))
    return attrs


def _draw_quant(draw, op: OpDef, first) -> OpCase:
    x = _first(draw, op, first)
    out = None if op.name == "dequantize" else draw(dtypes("int"))
    return OpCase(op.name, (x,), _scale_attrs(draw, out))


# -- the table: every registry op -> its family

LEAF = Family(lambda op, t: False, _draw_leaf)
UNARY = Family(_accepts_dtype, _draw_unary)
BINARY = Family(_accepts_dtype, _draw_binary)
MATMUL = Family(_accepts_matmul, _draw_matmul)
CONV = Family(_accepts_conv, _draw_conv)
MATMUL_NT = Family(_accepts_matmul, _draw_matmul_nt)
FUSED = Family(_accepts_fused, _draw_fused)
TRANSPOSE = Family(lambda op, t: True, _draw_transpose)
RESHAPE = Family(lambda op, t: True, _draw_reshape)
CONCAT = Family(lambda op, t: t.rank >= 1, _draw_concat)
SLICE = Family(lambda op, t: True, _draw_slice)
BROADCAST = Family(lambda op, t: True, _draw_broadcast)
SOFTMAX = Family(_accepts_rank1, _draw_softmax)
LAYERNORM = Family(lambda op, t: t.rank >= 1 and t.dtype.is_float, _draw_layernorm)
REDUCE = Family(_accepts_dtype, _draw_reduce)
CAST = Family(lambda op, t: True, _draw_cast)
QUANT = Family(_accepts_dtype, _draw_quant)

_FAMILY_MEMBERS: dict[Family, tuple[str, ...]] = {
    LEAF: ("input", "param", "const"),
    UNARY: ("neg", "relu", "gelu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal"),
    BINARY: ("add", "sub", "mul", "div", "maximum", "minimum"),
    MATMUL: ("matmul", "qmatmul"),
    CONV: ("conv2d",),
    MATMUL_NT: ("matmul_nt",),
    TRANSPOSE: ("transpose",),
    RESHAPE: ("reshape",),
    CONCAT: ("concat",),
    SLICE: ("slice",),
    BROADCAST: ("broadcast",),
    SOFTMAX: ("softmax",),
    LAYERNORM: ("layernorm",),
    REDUCE: ("reduce_sum", "reduce_max", "reduce_mean"),
    CAST: ("cast",),
    QUANT: ("quantize", "dequantize", "requantize"),
}

OP_GENERATORS: dict[str, Family] = {
    name: family for family, names in _FAMILY_MEMBERS.items() for name in names
}
# Fused kernels are generated from their composition: a new one needs no entry.
OP_GENERATORS.update(
    {name: FUSED for name, op in REGISTRY.items() if op.kind is OpKind.FUSED and op.composition}
)


def accepts_first(op: str, t: TensorType) -> bool:
    return OP_GENERATORS[op].accepts(REGISTRY[op], t)


@st.composite
def op_cases(draw, op: str, first: TensorType | None = None) -> OpCase:
    """A valid application of `op`; with `first`, its first operand has that type
    (the caller makes sure accepts_first(op, first))."""
    return OP_GENERATORS[op].draw(draw, REGISTRY[op], first)


def any_op_case() -> st.SearchStrategy[OpCase]:
    return st.sampled_from(sorted(REGISTRY)).flatmap(op_cases)


def single_op_graph(case: OpCase) -> Graph:
    """inputs a0, a1, ... of the case's operand types -> the op -> output 'out'."""
    b = GraphBuilder(f"single_{case.op}")
    if case.opdef.kind is OpKind.LEAF:
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
        kind = draw(st.sampled_from(["input", "param", "const"]))
        v = _Value(fresh(), t)
        if kind == "const":
            items.append(ast.ConstDecl(v.name, spell(t), draw(_const_values(t.dtype))))
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
            first = operand(case.in_types[0])
        args = [first] + [operand(t) for t in case.in_types[1:]]
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
