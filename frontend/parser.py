"""Text -> syntax tree, with syntax errors as ModelSyntaxError at file:line:col."""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from pathlib import Path

from lark import Lark, v_args
from lark.visitors import Transformer_NonRecursive

from eqsat.limits import int_text_problem
from eqsat.sourcetext import COMMON_TERMINALS, Positioned, parse_to_ast, read_source
from frontend import ast
from frontend.errors import ModelSyntaxError

_TERMINAL_WORDS = {
    **COMMON_TERMINALS,
    "SIGNED_INT": "an integer",
    "SIGNED_NUMBER": "a number",
    "SPECIAL": "inf or nan",
}


@cache
def _lark() -> Lark:
    grammar = resources.files("frontend").joinpath("model.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _pos(meta_or_token) -> ast.Pos:
    return ast.Pos(getattr(meta_or_token, "line", 0) or 0, getattr(meta_or_token, "column", 0) or 0)


MAX_NUMBER_DIGITS = 4000  # below Python's own limit for int() of a text (4,300)


def _int(tok) -> int:
    """An integer token's value; one beyond int64 is an error at the token."""
    problem = int_text_problem(tok)
    if problem is not None:
        raise _at(problem, _pos(tok))
    return int(tok)


def _dim_text(factors: list) -> ast.Dim:
    for f in factors:
        if f.type == "INT":
            _int(f)
    if len(factors) == 1 and factors[0].type == "INT":
        return int(factors[0])
    return "*".join(str(f) for f in factors)


@v_args(meta=True)
class _ToAst(Transformer_NonRecursive):
    def start(self, meta, children):
        return children[0]

    def model(self, meta, children):
        name, *items = children
        return ast.Model(
            str(name), tuple(items), _pos(name), ast.Pos(meta.end_line, meta.end_column - 1)
        )

    def dim_decl(self, meta, children):
        name, default = children
        return ast.DimDecl(str(name), None if default is None else _int(default), _pos(meta))

    def input_decl(self, meta, children):
        return ast.LeafDecl("input", str(children[0]), children[1], _pos(meta))

    def param_decl(self, meta, children):
        return ast.LeafDecl("param", str(children[0]), children[1], _pos(meta))

    def const_decl(self, meta, children):
        name, type_, value = children
        return ast.ConstDecl(str(name), type_, value, _pos(meta))

    def assign(self, meta, children):
        return ast.Assign(str(children[0]), children[1], _pos(children[0]))

    def output_decl(self, meta, children):
        return ast.OutputDecl(
            tuple(str(c) for c in children), _pos(meta), tuple(_pos(c) for c in children)
        )

    def region_assign(self, meta, children):
        *names, region = children
        return ast.RegionAssign(
            tuple(str(n) for n in names), region, _pos(names[0]), tuple(_pos(n) for n in names)
        )

    def if_region(self, meta, children):
        cond, then, orelse = children
        return ast.IfRegion(str(cond), then, orelse, _pos(meta), _pos(cond))

    def loop_region(self, meta, children):
        trips, cond, *rest = children
        *vars_, body = rest
        carried = tuple(v for v in vars_ if isinstance(v, ast.Carried))
        index = [v for v in vars_ if not isinstance(v, ast.Carried)]
        if len(index) > 1:
            raise _at("a loop has at most one `index`", _pos(index[1]))
        name = str(index[0]) if index else None
        return ast.LoopRegion(
            str(trips), str(cond), carried, name, body, _pos(meta), (_pos(trips), _pos(cond))
        )

    def carried(self, meta, children):
        name, init = children
        return ast.Carried(str(name), str(init), _pos(name))

    def loop_index(self, meta, children):
        return children[0]

    def body(self, meta, children):
        *items, (yields, positions) = children
        return ast.Body(tuple(items), yields, _pos(meta), positions)

    def yield_stmt(self, meta, children):
        return tuple(str(c) for c in children), tuple(_pos(c) for c in children)

    def type(self, meta, children):
        dtype, *dims = children
        dims = [d for d in dims if d is not None]
        return ast.TypeSpec(
            str(dtype), tuple(d[0] for d in dims), _pos(dtype), tuple(d[1] for d in dims)
        )

    def dim(self, meta, children):
        return _dim_text(children), _pos(meta)

    def ref(self, meta, children):
        return ast.Ref(str(children[0]), _pos(children[0]))

    def call(self, meta, children):
        name, *args = children
        args = [a for a in args if a is not None]
        operands = tuple(a for a in args if not isinstance(a, ast.Attr))
        attrs = tuple(a for a in args if isinstance(a, ast.Attr))
        # Keep the order problem visible to the checker: an operand after an attribute.
        order = tuple(isinstance(a, ast.Attr) for a in args)
        if any(order[i] and not order[i + 1] for i in range(len(order) - 1)):
            bad = next(a for i, a in enumerate(args) if i and order[i - 1] and not order[i])
            raise _at("operands must come before keyword attributes", bad.pos)
        return ast.Call(str(name), operands, attrs, _pos(name))

    def kwarg(self, meta, children):
        return ast.Attr(str(children[0]), children[1], _pos(children[0]))

    def number(self, meta, children):
        text = str(children[0])
        if text.lstrip("+-").isdigit():
            # A value, checked for range where its type is known (a constant's dtype,
            # an attribute's int64); only a text Python cannot convert stops here.
            if len(text) > MAX_NUMBER_DIGITS:
                raise _at(f"number {_short(text)} is out of range", _pos(children[0]))
            return int(text)
        value = float(text)
        if math.isinf(value):
            raise _at(f"number {_short(text)} is out of range", _pos(children[0]))
        return value

    def name_value(self, meta, children):
        return str(children[0])

    def special(self, meta, children):
        return float(str(children[0]))

    def const_list(self, meta, children):
        return tuple(c for c in children if c is not None)

    def external(self, meta, children):
        return ast.External()

    def const_dim(self, meta, children):
        return _dim_text(children)

    def true(self, meta, children):
        return True

    def false(self, meta, children):
        return False

    def list(self, meta, children):
        return tuple(c[0] if isinstance(c, tuple) else c for c in children if c is not None)

    def int_item(self, meta, children):
        return _int(children[0])


def _short(text: str) -> str:
    return text if len(text) <= 24 else text[:12] + f"... ({len(text)} characters)"


def _at(message: str, pos: ast.Pos) -> Positioned:
    return Positioned(message, pos.line, pos.col)


def parse_model(text: str, file: str = "<model>") -> ast.Model:
    """Parse model text. Raises ModelSyntaxError."""
    model = parse_to_ast(_lark(), _ToAst(), text, file, ModelSyntaxError, _TERMINAL_WORDS)
    return ast.Model(model.name, model.items, model.pos, model.end, file, text)


def parse_model_file(path: str | Path) -> ast.Model:
    return parse_model(read_source(path, "model", ModelSyntaxError), str(path))
