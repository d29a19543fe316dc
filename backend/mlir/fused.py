"""Fused kernels from their registry body (eqsat/ops/fused.py): the contraction (or
any other non-elementwise op of the body) as its own linalg op, and the elementwise
epilogue around it as ONE linalg.generic reading the contraction's result, so that
IREE forms one dispatch of the pair."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.ops.fused import AttrRef, Call

from .core import Apply, Body, Val, broadcast_map, is_float
from .ewise import convert
from .scalar import SCALAR, Scalar, narrow

if TYPE_CHECKING:
    from .emitter import Emitter


def emit_fused(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    opdef = REGISTRY[ap.op]
    # Inside a fused body floats are f32 (as the interpreter computes them).
    env = {
        name: _widened(em, v, f"{ap.hint}_{name}")
        for name, v in zip(opdef.operands, args, strict=True)
    }
    types: dict[int, tuple[TensorType, dict]] = {}

    def typed(expr: Call | str) -> TensorType:
        if isinstance(expr, str):
            v = env[expr]
            return TensorType(DType.parse(v.dtype), v.shape)
        if id(expr) not in types:
            op = REGISTRY[expr.op]
            in_types = [typed(a) for a in expr.args]
            given = {
                k: ap.attrs[v.name] if isinstance(v, AttrRef) else v for k, v in expr.attrs.items()
            }
            bound = op.bind_attrs(given)
            types[id(expr)] = (op.type_of(in_types, bound), op.canonical_attrs(in_types, bound))
        return types[id(expr)][0]

    made: dict[int, Val] = {}

    def materialize(expr: Call | str, hint: str) -> Val:
        if isinstance(expr, str):
            return env[expr]
        if id(expr) in made:
            return made[id(expr)]
        t = typed(expr)
        if expr.op in SCALAR:
            v = epilogue(expr, t, hint)
        else:
            sub = Apply(expr.op, types[id(expr)][1], t.shape, t.dtype.value, hint)
            v = em.apply(sub, [materialize(a, f"{hint}_{expr.op}") for a in expr.args])
        made[id(expr)] = v
        return v

    def epilogue(root: Call, t: TensorType, hint: str) -> Val:
        leaves: list[Val] = []
        index: dict[tuple, int] = {}

        def collect(expr: Call | str) -> None:
            if isinstance(expr, Call) and expr.op in SCALAR:
                for a in expr.args:
                    collect(a)
                return
            key = _key(expr)
            if key not in index:
                index[key] = len(leaves)
                leaves.append(materialize(expr, f"{hint}_{getattr(expr, 'op', expr)}"))

        collect(root)

        def write(b: Body) -> str:
            memo: dict[int, Scalar] = {}

            def scalar(expr: Call | str) -> Scalar:
                if isinstance(expr, str) or expr.op not in SCALAR:
                    key = _key(expr)
                    return b.args[index[key]]
                if id(expr) not in memo:
                    xs = [scalar(a) for a in expr.args]
                    memo[id(expr)] = SCALAR[expr.op](b, xs, types[id(expr)][1])
                return memo[id(expr)]

            return narrow(b, scalar(root), out_dtype)

        out_dtype = "f32" if t.dtype.is_float else t.dtype.value
        return em.func.generic(
            leaves,
            [broadcast_map(v.shape, t.shape) for v in leaves],
            t.shape,
            out_dtype,
            ["parallel"] * len(t.shape),
            write,
            hint,
        )

    typed(opdef.composition)
    result = materialize(opdef.composition, ap.hint)
    if is_float(ap.dtype) and result.dtype != ap.dtype:
        result = convert(em, result, ap.dtype, ap.hint)
    return result


def _key(expr: Call | str) -> tuple:
    """A body leaf: an operand by name, a call by identity (a shared call is one value)."""
    return ("call", id(expr)) if isinstance(expr, Call) else ("operand", expr)


def _widened(em: Emitter, v: Val, hint: str) -> Val:
    """A bf16 operand as f32 (a value known at compile time stays known)."""
    if v.dtype != "bf16":
        return v
    wide = convert(em, v, "f32", hint)
    if v.name in em.known:
        em.known[wide.name] = em.known[v.name]
    return wide
