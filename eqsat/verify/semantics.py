"""Rule expressions and guards evaluated in Python, with the meaning egglog gives them.

The rule compiler (eqsat/rules/exprs.py, guards.py) turns `dim(x, -1)`, `permute(P,
Q)`, `A == rank(x) - 1` ... into egglog query atoms over the e-graph's shape analysis
(eqsat/egraph/prelude.egg). Verification must decide the same questions on a concrete
instance, so this module mirrors those rules exactly:

- `dim(x, i)`: a negative integer literal counts from the end; any other index out of
  range has no value (`nth` is undefined there), so the guard fails / the rule does
  not fire;
- integer `/` and `%` truncate toward zero (i64 in egglog), division by zero has no
  value; float arithmetic is IEEE double;
- an integer literal next to a float is a float; `want` makes an integer literal a
  float where a float attribute is expected;
- `min(a, b)`, `max(a, b)` of two numbers of one type;
- list functions: `permute(L, P)[i] = L[P[i]]`, `setnth(L, i, v)`, `range(n)`,
  `fill(n, v)`, `swaplast2(L)`, `index(L, v)` - undefined where the prelude's
  rewrites get stuck (an index out of range, a list shorter than two, a value absent).

`Undefined` carries whether the value would have been computed in the query (a
shape read: the rule simply does not fire) or in the actions (a stuck list built
by the right-hand side: the rule would put a malformed attribute into the e-graph).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from eqsat.ir.graph import Graph
from eqsat.rules import ast
from eqsat.rules.scope import DTYPE_NAMES, Ty


class Undefined(Exception):
    """The expression has no value. `in_query`: egglog would fail to match (the rule
    does not fire); otherwise the value is built by the rule's actions."""

    def __init__(self, message: str, in_query: bool = True):
        super().__init__(message)
        self.in_query = in_query


class NotYet(Exception):
    """A name the expression needs is not bound yet (only while generating)."""


@dataclass
class Env:
    """What a rule direction has bound on one instance: tensor variables to nodes of
    `graph`, attribute variables to values with their rule-language type."""

    graph: Graph
    tensors: dict[str, int] = field(default_factory=dict)
    values: dict[str, tuple[Any, Ty]] = field(default_factory=dict)
    in_rhs: bool = False

    def bound(self, name: str) -> bool:
        return name in self.tensors or name in self.values

    def tensor_type(self, name: str):
        if name not in self.tensors:
            raise NotYet(name)
        return self.graph.nodes[self.tensors[name]].type

    def copy(self) -> Env:
        return Env(self.graph, dict(self.tensors), dict(self.values), self.in_rhs)


def is_pattern_name(expr: ast.Expr, env: Env) -> bool:
    """An unbound name or `_` (what an `==` guard or an attribute pattern binds)."""
    return (
        isinstance(expr, ast.Name)
        and expr.name not in DTYPE_NAMES
        and (expr.name == "_" or not env.bound(expr.name))
    )


# ------------------------------------------------------------------ values


def evaluate(expr: ast.Expr, env: Env, want: Ty | None = None) -> tuple[Any, Ty]:
    """The value of an expression whose names are bound (NotYet otherwise)."""
    if isinstance(expr, ast.IntLit):
        if want is Ty.FLOAT:
            return float(expr.value), Ty.FLOAT
        return expr.value, Ty.INT
    if isinstance(expr, ast.FloatLit):
        return float(expr.value), Ty.FLOAT
    if isinstance(expr, ast.BoolLit):
        return expr.value, Ty.BOOL
    if isinstance(expr, ast.StrLit):
        return expr.value, Ty.STR
    if isinstance(expr, ast.Name):
        if expr.name in DTYPE_NAMES:
            return expr.name, Ty.DTYPE
        if expr.name not in env.values:
            raise NotYet(expr.name)
        return env.values[expr.name]
    if isinstance(expr, ast.ListLit):
        return tuple(_int(evaluate(i, env, Ty.INT)) for i in expr.items), Ty.INTS
    if isinstance(expr, ast.Neg):
        v, ty = evaluate(expr.operand, env, want)
        return _arith("-", 0.0 if ty is Ty.FLOAT else 0, v, ty), ty
    if isinstance(expr, ast.BinOp):
        return _binop(expr, env, want)
    if isinstance(expr, ast.Func):
        return _func(expr, env)
    raise AssertionError(expr)  # pragma: no cover


def _int(pair: tuple[Any, Ty]) -> int:
    return int(pair[0])


def _binop(expr: ast.BinOp, env: Env, want: Ty | None) -> tuple[Any, Ty]:
    left, lty = evaluate(expr.left, env, want)
    right, rty = evaluate(expr.right, env, want)
    if lty is not rty:  # an integer literal beside a float is a float
        if lty is Ty.FLOAT and isinstance(expr.right, ast.IntLit):
            right, rty = float(right), Ty.FLOAT
        elif rty is Ty.FLOAT and isinstance(expr.left, ast.IntLit):
            left, lty = float(left), Ty.FLOAT
    return _arith(expr.op, left, right, lty), lty


def _arith(op: str, a: Any, b: Any, ty: Ty) -> Any:
    if ty is Ty.INT:
        a, b = int(a), int(b)
        if op in "/%" and b == 0:
            raise Undefined(f"integer {op} by zero", in_query=False)
        if op == "/":
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if op == "%":
            return a - b * _arith("/", a, b, ty)
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    a, b = float(a), float(b)
    if op == "/":
        if b == 0.0:
            return (
                math.nan
                if a == 0.0 or math.isnan(a)
                else math.copysign(math.inf, a) * (math.copysign(1.0, b))
            )
        return a / b
    if op == "*":
        return a * b
    return a + b if op == "+" else a - b


# -------------------------------------------------------- shape functions


def _tensor_name(arg: ast.Expr) -> str:
    assert isinstance(arg, ast.Name), arg  # checked by the rule compiler
    return arg.name


def _func(f: ast.Func, env: Env) -> tuple[Any, Ty]:
    name = f.name
    if name in LIST_FUNCS:
        return _list_func(f, env), Ty.INTS
    if name in ("min", "max"):
        (a, aty), (b, _) = (evaluate(arg, env) for arg in f.args)
        return (min(a, b) if name == "min" else max(a, b)), aty
    if name == "index":
        lst = evaluate(f.args[0], env, Ty.INTS)[0]
        v = _int(evaluate(f.args[1], env, Ty.INT))
        if v not in lst:
            raise Undefined(f"index({list(lst)}, {v}): {v} is not in the list")
        return tuple(lst).index(v), Ty.INT
    t = env.tensor_type(_tensor_name(f.args[0]))
    if name == "dtype":
        return t.dtype.value, Ty.DTYPE
    if name == "rank":
        return t.rank, Ty.INT
    if name == "shape":
        return tuple(t.shape), Ty.INTS
    index = f.args[1]
    if isinstance(index, ast.IntLit) and index.value < 0:
        i = t.rank + index.value
    else:
        i = _int(evaluate(index, env, Ty.INT))
    if not 0 <= i < t.rank:
        raise Undefined(f"dim({_tensor_name(f.args[0])}, {i}) of a rank-{t.rank} tensor")
    return t.shape[i], Ty.INT


def _permute(lst: tuple, perm: tuple) -> tuple:
    if any(not 0 <= p < len(lst) for p in perm):
        raise Undefined(f"permute({list(lst)}, {list(perm)}): index out of range", False)
    return tuple(lst[p] for p in perm)


def _setnth(lst: tuple, i: int, v: int) -> tuple:
    if not 0 <= i < len(lst):
        raise Undefined(f"setnth({list(lst)}, {i}, ...): index out of range", False)
    return (*lst[:i], v, *lst[i + 1 :])


def _swaplast2(lst: tuple) -> tuple:
    if len(lst) < 2:
        raise Undefined(f"swaplast2({list(lst)}): fewer than two entries", False)
    return (*lst[:-2], lst[-1], lst[-2])


LIST_FUNCS = {
    "permute": (2, _permute),
    "setnth": (3, _setnth),
    "range": (1, lambda n: tuple(range(max(n, 0)))),
    "fill": (2, lambda n, v: (v,) * max(n, 0)),
    "swaplast2": (1, _swaplast2),
}


def _list_func(f: ast.Func, env: Env) -> tuple:
    _, fn = LIST_FUNCS[f.name]
    args = []
    for arg in f.args:
        v, ty = evaluate(arg, env, None)
        args.append(tuple(v) if ty is Ty.INTS else int(v))
    try:
        return fn(*args)
    except Undefined as err:
        # A guard's lists are built by a seeding rule, then matched: a stuck one
        # never matches. The right-hand side builds its lists in the actions.
        raise Undefined(str(err), in_query=not env.in_rhs) from None
