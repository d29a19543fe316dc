"""Text -> syntax tree, with syntax errors as ModelSyntaxError at file:line:col."""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from frontend import ast
from frontend.errors import ModelSyntaxError

_TERMINAL_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "SIGNED_INT": "an integer",
    "SIGNED_NUMBER": "a number",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "COLON": "':'",
    "EQUAL": "'='",
    "STAR": "'*'",
    "$END": "end of file",
}


@cache
def _lark() -> Lark:
    grammar = resources.files("frontend").joinpath("model.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _pos(meta_or_token) -> ast.Pos:
    return ast.Pos(getattr(meta_or_token, "line", 0) or 0, getattr(meta_or_token, "column", 0) or 0)


def _dim_text(factors: list) -> ast.Dim:
    if len(factors) == 1 and factors[0].type == "INT":
        return int(factors[0])
    return "*".join(str(f) for f in factors)


@v_args(meta=True)
class _ToAst(Transformer):
    def start(self, meta, children):
        return children[0]

    def model(self, meta, children):
        name, *items = children
        return ast.Model(
            str(name), tuple(items), _pos(name), ast.Pos(meta.end_line, meta.end_column - 1)
        )

    def dim_decl(self, meta, children):
        name, default = children
        return ast.DimDecl(str(name), None if default is None else int(default), _pos(meta))

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
            raise _Positioned("operands must come before keyword attributes", bad.pos)
        return ast.Call(str(name), operands, attrs, _pos(name))

    def kwarg(self, meta, children):
        return ast.Attr(str(children[0]), children[1], _pos(children[0]))

    def number(self, meta, children):
        text = str(children[0])
        try:
            return int(text)
        except ValueError:
            value = float(text)
        if math.isinf(value):
            raise _Positioned(f"number {text} is out of range", _pos(children[0]))
        return value

    def name_value(self, meta, children):
        return str(children[0])

    def true(self, meta, children):
        return True

    def false(self, meta, children):
        return False

    def list(self, meta, children):
        return tuple(c[0] if isinstance(c, tuple) else c for c in children if c is not None)

    def int_item(self, meta, children):
        return int(children[0])


class _Positioned(Exception):
    def __init__(self, message: str, pos: ast.Pos):
        super().__init__(message)
        self.message = message
        self.pos = pos


def _describe_expected(expected: set[str]) -> str:
    words = sorted(
        {_TERMINAL_WORDS.get(e, f"'{e.lower()}'" if e.isupper() else e) for e in expected}
    )
    if len(words) > 6:
        return ""
    return " (expected " + ", ".join(words) + ")"


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> ModelSyntaxError:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        message = f"unexpected character {ch!r}"
    elif isinstance(err, UnexpectedEOF):
        message = "unexpected end of file" + _describe_expected(set(err.expected))
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    elif isinstance(err, UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            line, col = len(lines), len(lines[-1]) + 1
            message = "unexpected end of file" + _describe_expected(set(err.expected))
        else:
            message = f"unexpected {tok.value!r}" + _describe_expected(set(err.expected))
    else:  # pragma: no cover - lark has no other UnexpectedInput kinds
        message = str(err).splitlines()[0]
    return ModelSyntaxError(message, file, line, col, text)


def parse_model(text: str, file: str = "<model>") -> ast.Model:
    """Parse model text. Raises ModelSyntaxError."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    try:
        model = _ToAst().transform(tree)
    except Exception as err:  # lark wraps transformer errors in VisitError
        inner = getattr(err, "orig_exc", err)
        if isinstance(inner, _Positioned):
            raise ModelSyntaxError(
                inner.message, file, inner.pos.line, inner.pos.col, text
            ) from None
        raise
    return ast.Model(model.name, model.items, model.pos, model.end, file, text)


def parse_model_file(path: str | Path) -> ast.Model:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        from eqsat.errors import UserError

        raise UserError(f"{path}: cannot read model: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ModelSyntaxError(
            f"the file is not UTF-8 text ({err.reason})", str(path), 1, 1
        ) from None
    return parse_model(text, str(path))


__all__ = ["Token", "Tree", "parse_model", "parse_model_file"]
