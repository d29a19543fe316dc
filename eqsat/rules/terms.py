"""Op terms -> egglog: LHS patterns (which bind) and RHS templates (which build).

Both are checked against the op registry: the op exists, the operand count, the
attribute names and the types of their values. Attributes go in registry order after
the operands, as eqsat.egraph.encoding lays out each `Op` constructor.
"""

from __future__ import annotations

from eqsat.egraph.encoding import constructor, literal, operand_names
from eqsat.errors import closest_name
from eqsat.ops import REGISTRY, AttrSpec, AttrType, OpDef
from eqsat.rules import ast
from eqsat.rules.errors import (
    ArityError,
    GuardTypeError,
    MissingAttributeError,
    RuleAttributeError,
    RuleStructureError,
    UnboundVariableError,
    UnknownOpError,
)
from eqsat.rules.exprs import describe, list_pattern, value
from eqsat.rules.scope import ATTR_TY, DTYPE_NAMES, TY_WORDS, Scope, Ty, var

# Attributes whose registry default is not the canonical form the e-graph holds: an
# RHS must give them (slice's axes are derived from its starts when those are a list).
CANONICAL_HINTS = {
    ("transpose", "perm"): "an explicit permutation, e.g. perm=[1, 0]",
    ("softmax", "axis"): "a non-negative axis, e.g. axis=rank(x) - 1",
    ("cumsum", "axis"): "a non-negative axis, e.g. axis=rank(x) - 1",
    ("reduce_sum", "axes"): "the sorted non-negative axes, e.g. axes=[1]",
    ("reduce_max", "axes"): "the sorted non-negative axes, e.g. axes=[1]",
    ("reduce_mean", "axes"): "the sorted non-negative axes, e.g. axes=[1]",
    ("slice", "axes"): "every axis, e.g. axes=[0, 1]",
}
_AXIS_ATTRS = {"axis", "axes", "perm"}


def lookup_op(call: ast.Call, scope: Scope) -> OpDef:
    op = REGISTRY.get(call.op)
    if op is None:
        close = closest_name(call.op, list(REGISTRY))
        hint = f"; did you mean '{close}'?" if close else "; `eqsat ops` lists the ops"
        raise scope.fail(UnknownOpError, f"unknown op '{call.op}'{hint}", call.pos)
    n = len(operand_names(op))
    if len(call.args) != n:
        what = f"{n} operand{'s' if n != 1 else ''}"
        if op.variadic:
            what += f" in rules (nest it for more: {op.name}(a, {op.name}(b, c)))"
        raise scope.fail(ArityError, f"'{op.name}' takes {what}, got {len(call.args)}", call.pos)
    seen: set[str] = set()
    for arg in call.attrs:
        if op.attr_spec(arg.key) is None:
            known = ", ".join(s.name for s in op.attrs) or "none"
            raise scope.fail(
                RuleAttributeError,
                f"'{op.name}' has no attribute '{arg.key}' (its attributes: {known})",
                arg.pos,
            )
        if arg.key in seen:
            raise scope.fail(RuleAttributeError, f"attribute '{arg.key}' is given twice", arg.pos)
        seen.add(arg.key)
    return op


def _emit(op: OpDef, operands: list[str], attrs: list[str]) -> str:
    return f"({constructor(op.name)} {' '.join([*operands, *attrs])})".replace(" )", ")")


# ---------------------------------------------------------------- patterns


def pattern(term: ast.Term, scope: Scope, deferred: list) -> str:
    """An LHS pattern. Attribute expressions that are not plain patterns (e.g.
    `axis=rank(x) - 1`) become fresh variables, checked later (`deferred`) once
    every name of the LHS and the guards is bound."""
    if isinstance(term, ast.Wildcard):
        return scope.fresh()
    if isinstance(term, ast.Var):
        binding = scope.env.get(term.name)
        if binding is None:
            return scope.bind(term.name, Ty.TERM, term.pos)
        return _tensor_var(term, binding.ty, scope)
    op = lookup_op(term, scope)
    operands = [pattern(a, scope, deferred) for a in term.args]
    given = {a.key: a for a in term.attrs}
    attrs = []
    for spec in op.attrs:
        arg = given.get(spec.name)
        if arg is None:
            # An implementation choice left out matches its default only (an untiled
            # matmul), so that rules about meaning do not fire once per variant.
            attrs.append(literal(spec.type, spec.default) if spec.choice else scope.fresh())
        else:
            attrs.append(_attr_pattern(op, spec, arg, scope, deferred))
    return _emit(op, operands, attrs)


def _attr_pattern(op: OpDef, spec: AttrSpec, arg: ast.AttrArg, scope: Scope, deferred: list) -> str:
    want = ATTR_TY[spec.type]
    expr = arg.value
    if isinstance(expr, ast.Name) and expr.name == "_":
        return scope.fresh()
    if isinstance(expr, ast.Name) and expr.name not in DTYPE_NAMES:
        binding = scope.env.get(expr.name)
        if binding is None:
            return scope.bind(expr.name, want, expr.pos)
        if binding.ty is not want:
            raise scope.fail(
                GuardTypeError,
                f"'{expr.name}' is {TY_WORDS[binding.ty]} but '{op.name}' attribute "
                f"'{spec.name}' is {TY_WORDS[want]}",
                expr.pos,
            )
        return var(expr.name)
    lit = literal_value(expr)
    if lit is not _NOT_LITERAL:
        _check_canonical_literal(op, spec, lit, expr, scope)
        return _typed_literal(op, spec, lit, expr, scope)
    if isinstance(expr, ast.ListLit) and want is Ty.INTS:
        return list_pattern(expr, scope)
    name = scope.fresh()
    deferred.append((name, op, spec, expr))
    return name


def check_deferred(deferred: list, scope: Scope) -> None:
    for name, op, spec, expr in deferred:
        code = attr_value(op, spec, expr, scope)
        scope.atoms.append(f"(= {name} {code})")


_NOT_LITERAL = object()


def literal_value(expr: ast.Expr):
    """The Python value of a literal expression, or _NOT_LITERAL."""
    if isinstance(expr, ast.IntLit | ast.FloatLit | ast.BoolLit | ast.StrLit):
        return expr.value
    if isinstance(expr, ast.Name) and expr.name in DTYPE_NAMES:
        return expr.name
    if isinstance(expr, ast.ListLit) and all(isinstance(i, ast.IntLit) for i in expr.items):
        return tuple(i.value for i in expr.items)
    return _NOT_LITERAL


def _typed_literal(op: OpDef, spec: AttrSpec, lit, expr: ast.Expr, scope: Scope) -> str:
    from eqsat.ops import OpTypeError

    try:
        checked = spec.check(lit)
    except OpTypeError as err:
        raise scope.fail(RuleAttributeError, f"'{op.name}': {err}", expr.pos) from None
    if spec.type is AttrType.STR and isinstance(lit, str):
        checked = lit
    return literal(spec.type, checked)


def _check_canonical_literal(op: OpDef, spec: AttrSpec, lit, expr: ast.Expr, scope: Scope) -> None:
    if spec.name not in _AXIS_ATTRS:
        return
    values = lit if isinstance(lit, tuple) else (lit,)
    if any(isinstance(v, int) and not isinstance(v, bool) and v < 0 for v in values):
        raise scope.fail(
            RuleAttributeError,
            f"'{op.name}' {spec.name}={describe(expr) if not isinstance(lit, tuple) else list(lit)} "
            "never matches: the e-graph holds axes in canonical form (non-negative); "
            "bind it (e.g. axis=A) and guard with rank(x)",
            expr.pos,
        )


# --------------------------------------------------------------- templates


def template(term: ast.Term, scope: Scope) -> str:
    """An RHS term to build. Every variable must already be bound."""
    if isinstance(term, ast.Wildcard):
        raise scope.fail(
            RuleStructureError,
            "'_' only matches on the left-hand side; the right-hand side must say what to build",
            term.pos,
        )
    if isinstance(term, ast.Var):
        binding = scope.env.get(term.name)
        if binding is None:
            raise scope.fail(
                UnboundVariableError,
                f"'{term.name}' is not bound by the left-hand side; every right-hand side "
                "variable must appear on the left (or be defined by an earlier `name = ...`)",
                term.pos,
            )
        return _tensor_var(term, binding.ty, scope)
    op = lookup_op(term, scope)
    operands = [template(a, scope) for a in term.args]
    given = {a.key: a for a in term.attrs}
    attrs = []
    for spec in op.attrs:
        arg = given.get(spec.name)
        if arg is not None:
            attrs.append(attr_value(op, spec, arg.value, scope))
        else:
            attrs.append(_default(op, spec, given, term, scope))
    return _emit(op, operands, attrs)


def attr_value(op: OpDef, spec: AttrSpec, expr: ast.Expr, scope: Scope) -> str:
    want = ATTR_TY[spec.type]
    lit = literal_value(expr)
    if lit is not _NOT_LITERAL:
        return _typed_literal(op, spec, lit, expr, scope)
    code, ty = value(expr, scope, want)
    if ty is not want:
        raise scope.fail(
            GuardTypeError,
            f"'{op.name}' attribute '{spec.name}' is {TY_WORDS[want]}, but "
            f"{describe(expr)} is {TY_WORDS[ty]}",
            expr.pos,
        )
    return code


def _default(op: OpDef, spec: AttrSpec, given: dict, call: ast.Call, scope: Scope) -> str:
    hint = CANONICAL_HINTS.get((op.name, spec.name))
    if op.name == "slice" and spec.name == "axes" and "starts" in given:
        starts = given["starts"].value
        if isinstance(starts, ast.ListLit):
            return literal(AttrType.INTS, tuple(range(len(starts.items))))
    if spec.required or hint:
        why = f"; the e-graph holds it in canonical form: give {hint}" if hint else ""
        raise scope.fail(
            MissingAttributeError,
            f"'{op.name}' needs the attribute '{spec.name}' ({TY_WORDS[ATTR_TY[spec.type]]}) "
            f"on the right-hand side{why}",
            call.pos,
        )
    return literal(spec.type, spec.default)


def _tensor_var(term: ast.Var, ty: Ty, scope: Scope) -> str:
    """A bound variable used where a tensor goes: its egglog name, if it is one."""
    if ty is not Ty.TERM:
        raise scope.fail(
            GuardTypeError,
            f"'{term.name}' is an attribute variable ({TY_WORDS[ty]}), not a tensor",
            term.pos,
        )
    return var(term.name)
