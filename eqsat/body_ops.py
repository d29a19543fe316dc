"""The vector instructions of a fused elementwise kernel with integer edges.

backend/lower_contract.py `lower_fused` turns a fused op's registry body into one tile
expression (backend/expr.py): every occurrence of a body call is its own
subexpression, a scalar operand is an immediate, subtrees of immediates fold away at
compile time, and the quantization ops expand into conversions and arithmetic
(backend/ewise_ops.py). The kernel then runs one vector instruction per expression
node and tile, keeping the root and its chain of first operands of the output's dtype
in the output tile and every other node in an f32/i32 tile of its own
(backend/tileexpr.py `spine`).

This module builds the same expression shape from the body, so that the cost model
prices what the backend emits: an ONNX Runtime erf-GELU of a QDQ graph is ~50
instructions an element (every QuantizeLinear/DequantizeLinear pair between its
steps kept, as the graph's rounding demands), not the handful its FLOP count
suggests. tests/test_body_ops.py checks it against the backend instruction by
instruction. Ops it does not model (comparisons and selects, whose roots have rules
of their own; compile-time-value ops) give None, and the caller prices the kernel
another way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY, AttrValue, OpKind
from eqsat.ops.fused import AttrRef, Call

_BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "maximum": "max",
    "minimum": "min",
}
_UNARY = frozenset(
    {"neg", "relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal"}
    | {"abs", "erf", "log", "sin", "cos", "floor", "ceil", "trunc"}
)


@dataclass(frozen=True)
class _Imm:
    """A compile-time constant (backend/views.py Imm): no instruction, no tile."""

    dtype: str


@dataclass(frozen=True)
class _Node:
    """One expression node: the instruction that computes it, the dtype it produces
    (backend/expr.py dtype_of) and whether it stays in the output tile's chain (a
    unary, binary or conversion node: `spine`)."""

    instr: str
    dtype: str
    args: tuple[_Expr, ...]
    chains: bool = True


@dataclass(frozen=True)
class BodyOps:
    ops: tuple[str, ...]  # one vector instruction per element and tile, in emission order
    intermediates: int  # f32/i32 tiles besides the output's


_Expr = _Node | _Imm | str  # str: a loaded operand, by its dtype


def _kind(dtype: str) -> str:
    return "f32" if dtype in ("f32", "bf16", "f16", "fp8") else "i32"


def _dtype(e: _Expr) -> str:
    return e if isinstance(e, str) else e.dtype


def _make(instr: str, dtype: str, *args: _Expr, chains: bool = True) -> _Expr:
    """A node, or an immediate when all its operands are (backend/expr.py fold)."""
    if all(isinstance(a, _Imm) for a in args):
        return _Imm(dtype)
    return _Node(instr, dtype, args, chains)


def _cvt(dtype: str, x: _Expr) -> _Expr:
    return _make("copy", dtype, x)


def _quantize(x: _Expr, attrs: Mapping[str, AttrValue], out: str) -> _Expr:
    q = _cvt("i32", _make("div", _kind(_dtype(x)), x, _Imm("f32")))
    if int(attrs["zero_point"]):  # type: ignore[call-overload]
        return _make("add", "i32", q, _Imm("i32"))
    return _cvt(out, q)


def _dequantize(x: _Expr, attrs: Mapping[str, AttrValue]) -> _Expr:
    v = _cvt("f32", x)
    if int(attrs["zero_point"]):  # type: ignore[call-overload]
        v = _make("sub", "f32", v, _Imm("f32"))
    return _make("mul", "f32", v, _Imm("f32"))


@dataclass(frozen=True)
class _Body:
    """What building a fused body's expression needs: its operands' types, its bound
    attributes, the output's dtype, and the nodes built so far by call (`memo`)."""

    env: Mapping[str, TensorType]
    attrs: Mapping[str, AttrValue]
    out_dtype: str
    memo: dict[object, _Expr | None]

    def key(self, call: Call | str) -> object:
        if isinstance(call, str):
            return call
        given = {
            k: self.attrs[v.name] if isinstance(v, AttrRef) else v for k, v in call.attrs.items()
        }
        return (call.op, tuple(self.key(a) for a in call.args), repr(sorted(given.items())))


def _build(call: Call | str, body: _Body, root: bool) -> _Expr | None:
    """The expression of `call`; calls alike (the same op of the same operands and
    attributes: one object used twice, as in mul(g, sigmoid(g)), or two equal ones)
    are one node, computed once (backend/expr.py shared)."""
    if isinstance(call, str):
        t = body.env[call]
        return (
            _Imm(_kind(t.dtype.value)) if t.numel == 1 else t.dtype.value
        )  # a scalar is a folded constant
    key = (body.key(call), root)
    if key not in body.memo:
        body.memo[key] = _build_call(call, body, root)
    return body.memo[key]


def _build_call(call: Call, body: _Body, root: bool) -> _Expr | None:
    op = REGISTRY[call.op]
    if op.kind not in (OpKind.ELEMENTWISE, OpKind.QUANT):
        return None
    args = [_build(a, body, False) for a in call.args]
    if any(a is None for a in args):
        return None
    bound = op.bind_attrs(
        {k: body.attrs[v.name] if isinstance(v, AttrRef) else v for k, v in call.attrs.items()}
    )
    out = body.out_dtype if root else None
    a = args[0]
    if call.op in _BINARY:
        return _make(_BINARY[call.op], _kind(_dtype(a)), a, args[1])  # type: ignore[arg-type]
    if call.op in _UNARY:
        return _make(call.op, _kind(_dtype(a)), a)  # type: ignore[arg-type]
    if call.op == "fma":
        return _make("fma", _kind(_dtype(a)), *args, chains=False)  # type: ignore[arg-type]
    if call.op == "cast":
        return _cvt(out or _kind(str(bound["dtype"])), a)  # type: ignore[arg-type]
    if call.op == "dequantize":
        return _dequantize(a, bound)  # type: ignore[arg-type]
    if call.op == "quantize":
        if root:
            return _quantize(a, bound, body.out_dtype)  # type: ignore[arg-type]
        # inside a body it saturates to its own type: computed in i32, then converted
        return _cvt(str(bound["dtype"]), _quantize(a, bound, "i32"))  # type: ignore[arg-type]
    return None


def _post_order(e: _Expr, seen: set[int]) -> list[_Node]:
    if not isinstance(e, _Node) or id(e) in seen:
        return []
    seen.add(id(e))
    return [n for a in e.args for n in _post_order(a, seen)] + [e]


def body_ops(
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> BodyOps | None:
    """The instructions per tile of a fused elementwise op's kernel, or None where this
    module does not model its body."""
    op = REGISTRY[op_name]
    if op.kind is not OpKind.FUSED or op.composition is None:
        return None
    env = dict(zip(op.operands, in_types, strict=True))
    expr = _build(op.composition, _Body(env, op.bind_attrs(dict(attrs)), out.dtype.value, {}), True)
    if not isinstance(expr, _Node):
        return None
    nodes = _post_order(expr, set())
    uses: dict[int, int] = {}
    for n in nodes:
        for a in n.args:
            uses[id(a)] = uses.get(id(a), 0) + 1
    spine: set[int] = {id(expr)}  # the root always writes the output tile
    e: _Expr = expr
    while isinstance(e, _Node) and e.chains and e.dtype == out.dtype.value:
        if uses.get(id(e), 0) < 2:  # a value used twice keeps a tile of its own
            spine.add(id(e))
        e = e.args[0]
    return BodyOps(tuple(n.instr for n in nodes), len(nodes) - len(spine))
