"""What a rule's `==` guards say about the instance to generate.

Most guards are facts the generator can make true instead of hoping for: `rank(b) ==
1`, `dim(b, 0) == dim(w, -1)`, `shape(r) == shape(s)`, `dtype(x) == f32` shape a
tensor variable before it is drawn; `P == range(rank(x))` or `A == rank(x) - 1` fix an
attribute variable once what it depends on is bound. Hints are only suggestions: the
matcher (instance.py) still decides whether the rule fires.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eqsat.rules import ast
from eqsat.rules.scope import DTYPE_NAMES


@dataclass
class TensorHints:
    rank: ast.Expr | None = None
    shape: ast.Expr | None = None
    dtype: ast.Expr | None = None
    dims: dict[int, ast.Expr] = field(default_factory=dict)
    minimum: dict[int, int] = field(default_factory=dict)  # dim(v, i) >= n
    multiple: dict[int, int] = field(default_factory=dict)  # dim(v, i) % m == 0

    @property
    def any(self) -> bool:
        return bool(self.rank or self.shape or self.dtype or self.dims or self.minimum)


@dataclass
class Plan:
    """Hints per tensor variable, steering expressions per attribute variable, and the
    named roots that other roots' patterns use (generated when first needed)."""

    tensors: dict[str, TensorHints] = field(default_factory=dict)
    steer: dict[str, ast.Expr] = field(default_factory=dict)
    referenced_roots: frozenset[str] = frozenset()

    def hints(self, name: str) -> TensorHints:
        return self.tensors.get(name) or TensorHints()


def plan_for(lhs: tuple[ast.Item, ...], guards: tuple) -> Plan:
    plan = Plan(referenced_roots=_referenced_roots(lhs))
    attr_names = _attr_names(lhs)
    for guard in guards:
        if not isinstance(guard, ast.Guard):
            continue  # a predicate: the matcher picks one of its rows
        if guard.op == "==":
            for a, b in ((guard.left, guard.right), (guard.right, guard.left)):
                _hint(plan, a, b, attr_names)
        else:
            _bound_hint(plan, guard)
    return plan


def _dim_of(expr: ast.Expr) -> tuple[str, int] | None:
    if (
        isinstance(expr, ast.Func)
        and expr.name == "dim"
        and len(expr.args) == 2
        and isinstance(expr.args[0], ast.Name)
        and isinstance(expr.args[1], ast.IntLit)
    ):
        return expr.args[0].name, expr.args[1].value
    return None


def _bound_hint(plan: Plan, guard: ast.Guard) -> None:
    """`dim(b, 1) >= 1024` and `dim(b, 1) % 256 == 0`: the smallest size that fits."""
    flipped = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
    left, right, op = guard.left, guard.right, guard.op
    if _dim_of(right) and op in flipped:
        left, right, op = right, left, flipped[op]
    where = _dim_of(left)
    if where and op in (">=", ">") and isinstance(right, ast.IntLit):
        hints = plan.tensors.setdefault(where[0], TensorHints())
        hints.minimum[where[1]] = right.value + (op == ">")


def _hint(plan: Plan, side: ast.Expr, other: ast.Expr, attr_names: set[str]) -> None:
    if (
        isinstance(side, ast.BinOp)
        and side.op == "%"
        and _dim_of(side.left)
        and isinstance(side.right, ast.IntLit)
        and isinstance(other, ast.IntLit)
        and other.value == 0
    ):
        name, i = _dim_of(side.left)  # type: ignore[misc]
        plan.tensors.setdefault(name, TensorHints()).multiple[i] = side.right.value
        return
    if isinstance(side, ast.Name) and side.name in attr_names:
        plan.steer.setdefault(side.name, other)
        return
    if not isinstance(side, ast.Func) or not side.args or not isinstance(side.args[0], ast.Name):
        return
    name = side.args[0].name
    hints = plan.tensors.setdefault(name, TensorHints())
    if side.name == "rank" and hints.rank is None:
        hints.rank = other
    elif side.name == "shape" and hints.shape is None:
        if isinstance(other, ast.ListLit):
            hints.rank = hints.rank or ast.IntLit(len(other.items), other.pos)
            for i, item in enumerate(other.items):
                if not (isinstance(item, ast.Name) and item.name == "_"):
                    hints.dims.setdefault(i, item)  # an unbound name is skipped when used
        else:
            hints.shape = other
    elif side.name == "dtype" and hints.dtype is None:
        hints.dtype = other
    elif side.name == "dim" and len(side.args) == 2 and isinstance(side.args[1], ast.IntLit):
        hints.dims.setdefault(side.args[1].value, other)


def _binds(expr: ast.Expr) -> bool:
    """A bare name that is not a dtype: it may be an unbound name the guard binds."""
    return isinstance(expr, ast.Name) and expr.name not in DTYPE_NAMES


def _referenced_roots(lhs: tuple[ast.Item, ...]) -> frozenset[str]:
    roots = {item.name for item in lhs if item.name}
    used: set[str] = set()
    for item in lhs:
        stack: list[ast.Term] = list(item.term.args) if isinstance(item.term, ast.Call) else []
        while stack:
            term = stack.pop()
            if isinstance(term, ast.Var) and term.name in roots:
                used.add(term.name)
            elif isinstance(term, ast.Call):
                stack.extend(term.args)
    return frozenset(used)


def _attr_names(lhs: tuple[ast.Item, ...]) -> set[str]:
    """Names an LHS attribute pattern binds (`axis=A`, `perm=[P0, 1]`)."""
    names: set[str] = set()
    stack: list[ast.Term] = [item.term for item in lhs]
    while stack:
        term = stack.pop()
        if not isinstance(term, ast.Call):
            continue
        stack.extend(term.args)
        for arg in term.attrs:
            exprs = arg.value.items if isinstance(arg.value, ast.ListLit) else (arg.value,)
            names.update(e.name for e in exprs if _binds(e) and e.name != "_")
    return names
