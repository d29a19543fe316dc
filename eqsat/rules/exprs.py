"""Expressions (attribute values and guards) -> egglog, with their types checked.

Shape facts (`rank`, `dim`, `shape`, `dtype`) are always hoisted into the rule's
query as `(= t_k (len (ShapeOf v_x)))` and the like, so a rule only fires once the
shape analysis knows them and actions only ever compute with bound values.
"""

from __future__ import annotations

from eqsat.egraph.encoding import cons_list, f64, string
from eqsat.ops import REGISTRY
from eqsat.rules import ast
from eqsat.rules.errors import GuardTypeError, UnboundVariableError
from eqsat.rules.scope import DTYPE_NAMES, TY_WORDS, Scope, Ty, var

FUNCS = {"rank": 1, "dim": 2, "shape": 1, "dtype": 1}
_FUNC_USAGE = "rank(x), dim(x, i), shape(x) and dtype(x)"
# List builders, evaluated by the e-graph's list analysis. A query can only match
# lists that already exist, so a builder used in a guard is "seeded": a companion rule
# with the same query up to that point builds the list, and the rule itself matches it
# once the analysis has evaluated it. name -> (argument types, egglog constructor)
LIST_FUNCS = {
    "permute": ((Ty.INTS, Ty.INTS), "Permute"),  # permute(L, P)[i] = L[P[i]]
    "setnth": ((Ty.INTS, Ty.INT, Ty.INT), "SetNth"),  # L with L[i] replaced by v
    "range": ((Ty.INT,), "Range"),  # [0, 1, ..., n-1]
    "fill": ((Ty.INT, Ty.INT), "Fill"),  # [v] * n
    "swaplast2": ((Ty.INTS,), "SwapLast2"),  # L with its last two entries swapped
}
# index(L, v): the position of v in L (for a permutation: its inverse at v).
INDEX_FUNC = "index"
# min(a, b), max(a, b) of two integers or two floats (e.g. a tile clamped to a dimension).
NUM_FUNCS = ("min", "max")
_EGG_OPS = {"+": "+", "-": "-", "*": "*", "/": "/", "%": "%"}


def describe(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Name):
        return f"'{expr.name}'"
    if isinstance(expr, ast.Func):
        return f"{expr.name}(...)"
    if isinstance(expr, ast.ListLit):
        return "the list"
    if isinstance(expr, ast.IntLit | ast.FloatLit):
        return str(expr.value)
    if isinstance(expr, ast.BoolLit):
        return str(expr.value).lower()
    if isinstance(expr, ast.StrLit):
        return f'"{expr.value}"'
    return "the expression"


def is_pattern_name(expr: ast.Expr, scope: Scope) -> bool:
    """An unbound name or `_`: something an `==` guard or an attribute binds."""
    return (
        isinstance(expr, ast.Name)
        and expr.name not in DTYPE_NAMES
        and (expr.name == "_" or expr.name not in scope.env)
    )


# ------------------------------------------------------------------ values


def value(expr: ast.Expr, scope: Scope, want: Ty | None = None) -> tuple[str, Ty]:
    """Compile an expression whose every name is bound. With `want`, an integer
    literal may stand for a float; any other mismatch is the caller's to report."""
    if isinstance(expr, ast.IntLit):
        if want is Ty.FLOAT:
            return f64(float(expr.value)), Ty.FLOAT
        return str(expr.value), Ty.INT
    if isinstance(expr, ast.FloatLit):
        return f64(expr.value), Ty.FLOAT
    if isinstance(expr, ast.BoolLit):
        return ("true" if expr.value else "false"), Ty.BOOL
    if isinstance(expr, ast.StrLit):
        return string(expr.value), Ty.STR
    if isinstance(expr, ast.Name):
        return _name(expr, scope)
    if isinstance(expr, ast.ListLit):
        return _list_value(expr, scope), Ty.INTS
    if isinstance(expr, ast.Neg):
        code, ty = value(expr.operand, scope, want)
        _need_number(expr.operand, ty, scope, "'-'")
        return f"(- {'0.0' if ty is Ty.FLOAT else '0'} {code})", ty
    if isinstance(expr, ast.BinOp):
        return _binop(expr, scope, want)
    if isinstance(expr, ast.Func):
        return func(expr, scope)
    raise AssertionError(expr)  # pragma: no cover


def _name(expr: ast.Name, scope: Scope) -> tuple[str, Ty]:
    if expr.name in DTYPE_NAMES:
        return f'"{expr.name}"', Ty.DTYPE
    if expr.name == "_":
        raise scope.fail(
            GuardTypeError, "'_' only matches; it has no value to compute with", expr.pos
        )
    binding = scope.env.get(expr.name)
    if binding is None:
        raise scope.fail(
            UnboundVariableError,
            f"'{expr.name}' is not bound; bind it on the left-hand side "
            f"(e.g. axis={expr.name}) or in an '==' guard before using it",
            expr.pos,
        )
    if binding.ty is Ty.TERM:
        raise scope.fail(
            GuardTypeError,
            f"'{expr.name}' is a tensor; use {_FUNC_USAGE.replace('x', expr.name)} to compute with it",
            expr.pos,
        )
    return var(expr.name), binding.ty


def _list_value(expr: ast.ListLit, scope: Scope) -> str:
    return cons_list([_int_item(item, scope) for item in expr.items])


def _int_item(item: ast.Expr, scope: Scope) -> str:
    """A list element: an integer expression."""
    code, ty = value(item, scope, Ty.INT)
    if ty is not Ty.INT:
        raise scope.fail(
            GuardTypeError,
            f"list elements are integers, but {describe(item)} is {TY_WORDS[ty]}",
            item.pos,
        )
    return code


def _need_number(expr: ast.Expr, ty: Ty, scope: Scope, what: str) -> None:
    if ty not in (Ty.INT, Ty.FLOAT):
        raise scope.fail(
            GuardTypeError,
            f"{what} needs numbers, but {describe(expr)} is {TY_WORDS[ty]}",
            expr.pos,
        )


def _binop(expr: ast.BinOp, scope: Scope, want: Ty | None) -> tuple[str, Ty]:
    left, lty = value(expr.left, scope, want)
    right, rty = value(expr.right, scope, want)
    _need_number(expr.left, lty, scope, f"'{expr.op}'")
    _need_number(expr.right, rty, scope, f"'{expr.op}'")
    if lty is not rty:  # an integer literal beside a float is a float
        if lty is Ty.FLOAT and isinstance(expr.right, ast.IntLit):
            right, rty = f64(float(expr.right.value)), Ty.FLOAT
        elif rty is Ty.FLOAT and isinstance(expr.left, ast.IntLit):
            left, lty = f64(float(expr.left.value)), Ty.FLOAT
        else:
            raise scope.fail(
                GuardTypeError,
                f"'{expr.op}' mixes an integer and a float; integer and float values "
                "cannot be combined (write float literals like 2.0)",
                expr.pos,
            )
    if expr.op == "%" and lty is not Ty.INT:
        raise scope.fail(GuardTypeError, "'%' needs integers", expr.pos)
    return f"({_EGG_OPS[expr.op]} {left} {right})", lty


# -------------------------------------------------------- shape functions


def _tensor_arg(f: ast.Func, scope: Scope) -> str:
    arg = f.args[0]
    if isinstance(arg, ast.Func) and arg.name in REGISTRY:
        raise scope.fail(
            GuardTypeError,
            f"op '{arg.name}' cannot appear inside an expression; name that subterm on the "
            f"left-hand side (t = {arg.name}(...)) and write {f.name}(t)",
            arg.pos,
        )
    if not isinstance(arg, ast.Name):
        raise scope.fail(
            GuardTypeError,
            f"{f.name}() takes a tensor pattern variable, e.g. {f.name}(x)"
            + ("" if f.name != "dim" else " with an index: dim(x, 0)"),
            arg.pos,
        )
    binding = scope.env.get(arg.name)
    if binding is None:
        raise scope.fail(
            UnboundVariableError,
            f"'{arg.name}' is not bound; {f.name}() needs a tensor variable of the left-hand side",
            arg.pos,
        )
    if binding.ty is not Ty.TERM:
        raise scope.fail(
            GuardTypeError,
            f"{f.name}() takes a tensor, but '{arg.name}' is an attribute variable "
            f"({TY_WORDS[binding.ty]})",
            arg.pos,
        )
    if binding.origin == "rhs":
        raise scope.fail(
            GuardTypeError,
            f"{f.name}({arg.name}): '{arg.name}' is built by this rule, so its shape is not "
            "known yet; compute it from left-hand side variables",
            arg.pos,
        )
    return var(arg.name)


def _list_func(f: ast.Func, scope: Scope) -> tuple[str, Ty]:
    arg_tys, ctor = LIST_FUNCS[f.name]
    usage = f"{f.name}({', '.join(TY_WORDS[t].split()[-1] for t in arg_tys)})"
    if len(f.args) != len(arg_tys):
        raise scope.fail(GuardTypeError, f"write {usage}", f.pos)
    codes = []
    for arg, want in zip(f.args, arg_tys, strict=True):
        code, ty = value(arg, scope, want)
        if ty is not want:
            raise scope.fail(
                GuardTypeError,
                f"argument {describe(arg)} of {f.name}() must be {TY_WORDS[want]}, "
                f"not {TY_WORDS[ty]}",
                arg.pos,
            )
        codes.append(code)
    code = f"({ctor} {' '.join(codes)})"
    if scope.in_rhs:
        return code, Ty.INTS
    return scope.seed(code), Ty.INTS


def _index_func(f: ast.Func, scope: Scope) -> tuple[str, Ty]:
    if len(f.args) != 2:
        raise scope.fail(GuardTypeError, "write index(L, v)", f.pos)
    lst, lty = value(f.args[0], scope, Ty.INTS)
    item, ity = value(f.args[1], scope, Ty.INT)
    if lty is not Ty.INTS or ity is not Ty.INT:
        raise scope.fail(GuardTypeError, "index(L, v) takes a list and an integer", f.pos)
    return scope.hoist(f"(index-of {lst} {item})"), Ty.INT


def _num_func(f: ast.Func, scope: Scope) -> tuple[str, Ty]:
    if len(f.args) != 2:
        raise scope.fail(GuardTypeError, f"write {f.name}(a, b)", f.pos)
    (a, aty), (b, bty) = (value(arg, scope) for arg in f.args)
    for arg, ty in zip(f.args, (aty, bty), strict=True):
        _need_number(arg, ty, scope, f"{f.name}()")
    if aty is not bty:
        raise scope.fail(
            GuardTypeError, f"{f.name}() takes two integers or two floats, not a mix", f.pos
        )
    return f"({f.name} {a} {b})", aty


def func(f: ast.Func, scope: Scope) -> tuple[str, Ty]:
    if f.name in LIST_FUNCS:
        return _list_func(f, scope)
    if f.name == INDEX_FUNC:
        return _index_func(f, scope)
    if f.name in NUM_FUNCS:
        return _num_func(f, scope)
    if f.name not in FUNCS:
        if f.name in REGISTRY:
            message = (
                f"op '{f.name}' cannot appear inside an expression; name that subterm on the "
                f"left-hand side (t = {f.name}(...)) and use the name"
            )
        else:
            message = (
                f"unknown function '{f.name}'; expressions can use {_FUNC_USAGE}; "
                "min(a, b), max(a, b); and the list functions permute(L, P), setnth(L, i, v), "
                "range(n), fill(n, v), swaplast2(L), index(L, v)"
            )
        raise scope.fail(GuardTypeError, message, f.pos)
    if len(f.args) != FUNCS[f.name]:
        usage = {"rank": "rank(x)", "dim": "dim(x, i)", "shape": "shape(x)", "dtype": "dtype(x)"}
        raise scope.fail(GuardTypeError, f"write {usage[f.name]}", f.pos)
    x = _tensor_arg(f, scope)
    shape = f"(ShapeOf {x})"
    if f.name == "dtype":
        return scope.hoist(f"(DT {x})"), Ty.DTYPE
    rank = scope.hoist(f"(len {shape})")  # also makes sure the shape is a known list
    if f.name == "rank":
        return rank, Ty.INT
    if f.name == "shape":
        return scope.hoist(shape), Ty.INTS
    index = f.args[1]
    if isinstance(index, ast.IntLit) and index.value < 0:
        code = f"(+ {rank} {index.value})"
    else:
        code, ty = value(index, scope, Ty.INT)
        if ty is not Ty.INT:
            raise scope.fail(
                GuardTypeError,
                f"the index of dim() must be an integer expression, but {describe(index)} "
                f"is {TY_WORDS[ty]}",
                index.pos,
            )
    return scope.hoist(f"(nth {shape} {code})"), Ty.INT


# ---------------------------------------------------------------- patterns


def list_pattern(expr: ast.ListLit, scope: Scope) -> str:
    """A list literal that may bind: `_` matches any element, an unbound name binds
    an integer, anything else is compared."""
    items = []
    for item in expr.items:
        if isinstance(item, ast.Name) and item.name == "_":
            items.append(scope.fresh())
        elif is_pattern_name(item, scope):
            items.append(scope.bind(item.name, Ty.INT, item.pos))
        else:
            items.append(_int_item(item, scope))
    return cons_list(items)
