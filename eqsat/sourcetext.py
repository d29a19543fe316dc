"""Reading user-written source files (models, rules) and turning lark's parse errors
into our typed, positioned errors. The model frontend and the rule language share it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from eqsat.errors import SourceError, UserError

COMMON_TERMINALS = {
    "NAME": "a name",
    "INT": "an integer",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "COMMA": "','",
    "COLON": "':'",
    "EQUAL": "'='",
    "STAR": "'*'",
    "MINUS": "'-'",
    "$END": "end of file",
}


class Positioned(Exception):
    """Raised by a Transformer for a mistake the grammar cannot see (reported at a token)."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


def describe_expected(expected: set[str], words: Mapping[str, str]) -> str:
    """' (expected a, b)' in words a person reads, or '' when the list would be long."""
    names = sorted({words.get(e, f"'{e.lower()}'" if e.isupper() else e) for e in expected})
    if not names or len(names) > 6:
        return ""
    return " (expected " + ", ".join(names) + ")"


def end_position(text: str) -> tuple[int, int]:
    lines = text.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


Hint = Callable[[UnexpectedToken], str]

# How deep a model file may nest calls and brackets (levels of its parse tree, so a
# little more than the calls). Parsing and transforming never recurse on depth; the
# passes after them are iterative or proven to this depth by tests/faults.
MAX_NESTING = 1000


def too_deep(tree: Tree, limit: int = MAX_NESTING) -> tuple[int, int] | None:
    """The (line, col) of a part of `tree` nested deeper than `limit`, or None.

    Walks the tree with an explicit stack (no recursion on depth)."""
    stack: list[tuple[Tree | Token, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > limit:
            return _first_position(node)
        stack.extend((child, depth + 1) for child in node.children)
    return None


def _first_position(node: Tree) -> tuple[int, int]:
    """Where a subtree starts: its meta position, else its first token's."""
    meta = node.meta
    if not meta.empty:
        return meta.line, meta.column
    stack: list[Tree | Token] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            return item.line or 1, item.column or 1
        stack.extend(reversed(item.children))
    return 1, 1


def syntax_error(
    err: UnexpectedInput,
    text: str,
    file: str,
    cls: type[SourceError],
    words: Mapping[str, str],
    hint: Hint | None = None,
) -> SourceError:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        message = f"unexpected character {ch!r}"
    elif isinstance(err, UnexpectedEOF) or (
        isinstance(err, UnexpectedToken) and err.token.type == "$END"
    ):
        line, col = end_position(text)
        message = "unexpected end of file" + describe_expected(set(err.expected), words)
    elif isinstance(err, UnexpectedToken):
        message = f"unexpected {err.token.value!r}" + describe_expected(set(err.expected), words)
        if hint is not None:
            message += hint(err)
    else:  # pragma: no cover - lark has no other UnexpectedInput kinds
        message = str(err).splitlines()[0]
    return cls(message, file, line, col, text)


def parse_to_ast(
    lark: Lark,
    transformer: Transformer,
    text: str,
    file: str,
    cls: type[SourceError],
    words: Mapping[str, str],
    hint: Hint | None = None,
    max_nesting: int = MAX_NESTING,
    nesting_advice: str = "name the inner parts in separate statements (`t = ...`)",
):
    """Parse `text` and transform it; every mistake becomes a `cls` at its position.

    `transformer` should be a `Transformer_NonRecursive`: trees up to MAX_NESTING
    deep must transform without reaching Python's recursion limit."""
    try:
        tree = lark.parse(text)
    except UnexpectedInput as err:
        raise syntax_error(err, text, file, cls, words, hint) from None
    deep = too_deep(tree, max_nesting)
    if deep is not None:
        raise cls(
            f"nested more than {max_nesting} levels deep (the limit); {nesting_advice}",
            file,
            deep[0],
            deep[1],
            text,
        )
    try:
        return transformer.transform(tree)
    except Exception as err:  # lark wraps transformer errors in VisitError
        inner = getattr(err, "orig_exc", err)
        if isinstance(inner, Positioned):
            raise cls(inner.message, file, inner.line, inner.col, text) from None
        raise


def read_source(path: str | Path, what: str, cls: type[SourceError]) -> str:
    """The UTF-8 text of a user's file, or a typed error naming it."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{path}: cannot read {what}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise cls(f"the file is not UTF-8 text ({err.reason})", str(path), 1, 1) from None
