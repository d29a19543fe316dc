"""Guards and attribute patterns decided on a concrete instance, the way the rule
compiler's egglog query decides them (eqsat/rules/guards.py, terms.py).

`==` may bind: an unbound name takes the other side's value, a list literal with
unbound names binds its elements. Anything without a value (a dim out of range, an
absent index) makes the guard false, as a failed egglog match would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from eqsat.ops import AttrSpec, AttrType
from eqsat.rules import ast
from eqsat.rules.scope import ATTR_TY, DTYPE_NAMES, Ty
from eqsat.rules.terms import _NOT_LITERAL, literal_value
from eqsat.verify.semantics import Env, Undefined, evaluate, is_pattern_name

_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _is_tensor(expr: ast.Expr, env: Env) -> bool:
    return isinstance(expr, ast.Name) and expr.name in env.tensors


Facts = Mapping[str, Sequence[tuple]]  # predicate name -> the rows its relation holds
Pick = Callable[[Sequence[tuple]], tuple]  # which matching row (egglog fires once per row)


def hardware_facts(hw_name: str) -> dict[str, tuple[tuple, ...]]:
    """The rows of every predicate guard for a hardware preset or TOML file, as the
    pipeline adds them to the e-graph before saturation."""
    try:
        from eqsat.rules.predicates import PREDICATES
    except ImportError:  # pragma: no cover - a tree without predicate guards
        return {}
    from hwsim.hardware import load_hardware

    hw = load_hardware(hw_name)
    out = {}
    for name, p in PREDICATES.items():
        out[name] = tuple(
            tuple(
                str(v) if ty in (Ty.DTYPE, Ty.STR) else int(v)
                for v, (_, ty) in zip(row, p.params, strict=True)
            )
            for row in p.rows(hw)
        )
    return out


def holds(guard, env: Env, facts: Facts | None = None, pick: Pick | None = None) -> bool:
    """Decide one guard (a comparison or a predicate), binding what it binds.
    Undefined values: False."""
    try:
        if not isinstance(guard, ast.Guard):
            return _predicate(guard, env, facts or {}, pick or (lambda rows: rows[0]))
        return _holds(guard, env)
    except Undefined:
        return False


def _predicate(pred, env: Env, facts: Facts, pick: Pick) -> bool:
    """`tile_candidate(dtype(a), TM, TN, TK)`: some row agrees with the bound
    arguments; the unbound ones take that row's values."""
    from eqsat.rules.predicates import PREDICATES

    params = PREDICATES[pred.name].params
    fixed = {
        i: evaluate(arg, env, ty)[0]
        for i, (arg, (_, ty)) in enumerate(zip(pred.args, params, strict=True))
        if not is_pattern_name(arg, env)
    }
    rows = [r for r in facts.get(pred.name, ()) if all(r[i] == v for i, v in fixed.items())]
    if not rows:
        return False
    row = pick(rows)
    for i, (arg, (_, ty)) in enumerate(zip(pred.args, params, strict=True)):
        if i not in fixed and isinstance(arg, ast.Name) and arg.name != "_":
            env.values[arg.name] = (row[i], ty)
    return True


def _holds(guard: ast.Guard, env: Env) -> bool:
    left, right, op = guard.left, guard.right, guard.op
    if _is_tensor(left, env) or _is_tensor(right, env):
        assert isinstance(left, ast.Name) and isinstance(right, ast.Name)
        # Distinct nodes of the instance stand for distinct e-classes.
        return _COMPARE[op](env.tensors[left.name], env.tensors[right.name])
    if op == "==" and is_pattern_name(left, env) and not is_pattern_name(right, env):
        left, right = right, left
    binds_name = op == "==" and is_pattern_name(right, env)
    binds_list = op == "==" and isinstance(right, ast.ListLit)
    if binds_list and isinstance(left, ast.ListLit):
        binds_list = False
    if op == "==" and isinstance(left, ast.ListLit) and not isinstance(right, ast.ListLit):
        left, right = right, left
        binds_list = True
    lval, lty = evaluate(left, env)
    if binds_name:
        assert isinstance(right, ast.Name)
        env.values[right.name] = (lval, lty)
        return True
    if binds_list:
        assert isinstance(right, ast.ListLit)
        return match_list(right, tuple(lval), env)
    rval, rty = evaluate(right, env, lty if lty is Ty.FLOAT else None)
    if lty is Ty.INT and rty is Ty.FLOAT and isinstance(left, ast.IntLit):
        lval = float(lval)
    return bool(_COMPARE[op](lval, rval))


def match_list(pattern: ast.ListLit, actual: tuple, env: Env) -> bool:
    """A list literal that may bind: `_` matches any element, an unbound name binds
    it, anything else must equal it."""
    if len(pattern.items) != len(actual):
        return False
    for item, value in zip(pattern.items, actual, strict=True):
        if isinstance(item, ast.Name) and item.name == "_":
            continue
        if is_pattern_name(item, env):
            assert isinstance(item, ast.Name)
            env.values[item.name] = (int(value), Ty.INT)
        elif evaluate(item, env, Ty.INT)[0] != value:
            return False
    return True


# ------------------------------------------------------- attribute patterns


def typed_literal(spec: AttrSpec, lit: Any) -> Any:
    """A literal as the attribute's canonical value (an int literal for a float...)."""
    if spec.type is AttrType.STR and isinstance(lit, str):
        return lit
    return spec.check(lit)


def match_attr(spec: AttrSpec, expr: ast.Expr, actual: Any, env: Env, deferred: list) -> bool:
    """Match one attribute pattern against a node's canonical value. Expressions that
    are not plain patterns are checked after the guards (`deferred`), as compiled."""
    want = ATTR_TY[spec.type]
    if isinstance(expr, ast.Name) and expr.name == "_":
        return True
    if isinstance(expr, ast.Name) and expr.name not in DTYPE_NAMES:
        if expr.name in env.values:
            return env.values[expr.name][0] == actual
        env.values[expr.name] = (actual, want)
        return True
    lit = literal_value(expr)
    if lit is not _NOT_LITERAL:
        return typed_literal(spec, lit) == actual
    if isinstance(expr, ast.ListLit) and want is Ty.INTS:
        try:
            return match_list(expr, tuple(actual), env)
        except Undefined:
            return False
    deferred.append((spec, expr, actual))
    return True


def check_deferred(deferred: list, env: Env) -> bool:
    for spec, expr, actual in deferred:
        try:
            if attr_value(spec, expr, env) != actual:
                return False
        except Undefined:
            return False
    return True


def attr_value(spec: AttrSpec, expr: ast.Expr, env: Env) -> Any:
    """The value of an attribute expression, as the attribute's type."""
    lit = literal_value(expr)
    if lit is not _NOT_LITERAL:
        return typed_literal(spec, lit)
    value, _ = evaluate(expr, env, ATTR_TY[spec.type])
    if spec.type is AttrType.FLOAT:
        return float(value)
    if spec.type is AttrType.INTS:
        return tuple(value)
    return value
