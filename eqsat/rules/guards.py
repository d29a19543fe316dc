"""Guards -> egglog query atoms.

`==` may bind: an unbound name on one side (`dim(x, 0) == N`) or unbound names in a
list literal (`shape(x) == [M, K]`) take their values from the other side. Lists,
dtypes, booleans and tensors compare with `==`/`!=` only; numbers with all six.
"""

from __future__ import annotations

from eqsat.rules import ast
from eqsat.rules.errors import GuardTypeError
from eqsat.rules.exprs import describe, is_pattern_name, list_pattern, value
from eqsat.rules.scope import TY_WORDS, Scope, Ty, var

_ORDERED = {"<", "<=", ">", ">="}


def _is_tensor(expr: ast.Expr, scope: Scope) -> bool:
    if not isinstance(expr, ast.Name):
        return False
    binding = scope.env.get(expr.name)
    return binding is not None and binding.ty is Ty.TERM


def compile_guard(guard: ast.Guard | ast.Predicate, scope: Scope) -> None:
    if isinstance(guard, ast.Predicate):
        from eqsat.rules.predicates import compile_predicate

        compile_predicate(guard, scope)
        return
    left, right = guard.left, guard.right
    if _is_tensor(left, scope) or _is_tensor(right, scope):
        _tensor_guard(guard, scope)
        return
    if guard.op == "==" and is_pattern_name(left, scope) and not is_pattern_name(right, scope):
        left, right = right, left
    binds_name = guard.op == "==" and is_pattern_name(right, scope)
    binds_list = guard.op == "==" and isinstance(right, ast.ListLit)
    if binds_list and isinstance(left, ast.ListLit):
        binds_list = False
    if guard.op == "==" and isinstance(left, ast.ListLit) and not isinstance(right, ast.ListLit):
        left, right = right, left
        binds_list = True
    lcode, lty = value(left, scope)
    if binds_name:
        assert isinstance(right, ast.Name)
        if right.name == "_":
            raise scope.fail(GuardTypeError, "'_' cannot be compared; drop this guard", right.pos)
        scope.atoms.append(f"(= {scope.bind(right.name, lty, right.pos)} {lcode})")
        return
    if binds_list:
        assert isinstance(right, ast.ListLit)
        if lty is not Ty.INTS:
            raise _mismatch(guard, left, lty, right, Ty.INTS, scope)
        scope.atoms.append(f"(= {lcode} {list_pattern(right, scope)})")
        return
    rcode, rty = value(right, scope, lty if lty is Ty.FLOAT else None)
    if lty is Ty.INT and rty is Ty.FLOAT and isinstance(left, ast.IntLit):
        lcode, lty = value(left, scope, Ty.FLOAT)
    if lty is not rty:
        raise _mismatch(guard, left, lty, right, rty, scope)
    if guard.op in _ORDERED and lty not in (Ty.INT, Ty.FLOAT):
        raise scope.fail(
            GuardTypeError,
            f"'{guard.op}' orders numbers, but both sides are {TY_WORDS[lty]}s; use == or !=",
            guard.pos,
        )
    scope.atoms.append(_atom(guard.op, lcode, rcode))


def _atom(op: str, left: str, right: str) -> str:
    if op == "==":
        return f"(= {left} {right})"
    return f"({op} {left} {right})"


def _tensor_guard(guard: ast.Guard, scope: Scope) -> None:
    for side in (guard.left, guard.right):
        if not _is_tensor(side, scope):
            raise scope.fail(
                GuardTypeError,
                f"{describe(side)} is not a tensor; tensors compare only with tensors "
                "(a != b); for shapes use shape(x), rank(x) or dim(x, i)",
                side.pos,
            )
    if guard.op not in ("==", "!="):
        raise scope.fail(
            GuardTypeError, f"tensors compare with == or !=, not '{guard.op}'", guard.pos
        )
    assert isinstance(guard.left, ast.Name) and isinstance(guard.right, ast.Name)
    scope.atoms.append(_atom(guard.op, var(guard.left.name), var(guard.right.name)))


def _mismatch(guard, left, lty, right, rty, scope: Scope) -> GuardTypeError:
    return scope.fail(
        GuardTypeError,
        f"cannot compare {describe(left)} ({TY_WORDS[lty]}) with {describe(right)} "
        f"({TY_WORDS[rty]})",
        guard.pos,
    )
