"""The rules grammar (rules.lark, LALR with positions) and its parse tree -> syntax tree
(eqsat.rules.ast).

Below parser.py (a whole rules file) and testblock.py (the directive lines of a test
block), which both parse with it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from lark import Lark, Token, v_args
from lark.visitors import Transformer_NonRecursive

from eqsat.limits import int_text_problem
from eqsat.rules import ast
from eqsat.sourcetext import COMMON_TERMINALS, Positioned

# Rules are patterns a few calls deep; the rule compiler and verify-rules recurse on
# a pattern's depth, and are proven to this many parse-tree levels by tests/faults.
RULE_MAX_NESTING = 200

KEBAB = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

TERMINAL_WORDS = {
    **COMMON_TERMINALS,
    "RULE_NAME": "a rule name followed by ':'",
    "RULESET_NAME": "a ruleset name",
    "FLOAT": "a number",
    "ARROW": "'=>' or '<=>'",
    "CMP": "a comparison (== != < <= > >=)",
    "ADDOP": "'+' or '-'",
    "MULOP": "'*', '/' or '%'",
    "IF": "'if'",
    "APPROX": "'approx'",
    "ASSUME": "'assume'",
    "RULESET": "'ruleset'",
    "TRUE": "'true'",
    "FALSE": "'false'",
    "TEST_NAME": "a test name",
    "TEST_BODY": "'{' and the test's body",
    "HW_NAME": "a hardware preset or file",
}


@cache
def rules_lark(start: str = "start") -> Lark:
    """The rules grammar; `start="test_line"` parses one directive line of a test."""
    grammar = resources.files("eqsat.rules").joinpath("rules.lark").read_text()
    return Lark(
        grammar, parser="lalr", start=start, propagate_positions=True, maybe_placeholders=True
    )


@dataclass(frozen=True)
class RawTest:
    """A `test NAME { ... }` block before its body is parsed (eqsat.rules.testblock)."""

    name: str
    pos: ast.Pos
    body: Token  # the braces and everything between them


def pos_of(tok) -> ast.Pos:
    return ast.Pos(getattr(tok, "line", 0) or 0, getattr(tok, "column", 0) or 0)


def _at(message: str, pos: ast.Pos) -> Positioned:
    return Positioned(message, pos.line, pos.col)


@v_args(meta=True)
class ToAst(Transformer_NonRecursive):
    def start(self, meta, children):
        header, *items = children
        rules = tuple(i for i in items if isinstance(i, ast.RuleDecl))
        return header, rules, tuple(i for i in items if isinstance(i, RawTest))

    def test(self, meta, children):
        name, body = children
        if not KEBAB.fullmatch(str(name)):
            raise _at(
                f"test name '{name}' is not kebab-case; write it like 'fuse-bias-gelu'",
                pos_of(name),
            )
        return RawTest(str(name), pos_of(name), body)

    # `test_line` (one line of a test body)
    def expect_line(self, meta, children):
        return children[0]

    def on_hw(self, meta, children):
        return ("hw", str(children[0]), pos_of(children[0]))

    def with_approx(self, meta, children):
        return ("approx",)

    def expect_compare(self, meta, children):
        left, op, right = children
        return ("compare", left, str(op), right, pos_of(op))

    def expect_no(self, meta, children):
        return ("no", str(children[0]), pos_of(children[0]))

    def expect_equal(self, meta, children):
        left, right = children
        return ("equal", left, right, ast.Pos(meta.line, meta.column))

    def header(self, meta, children):
        return children[0]

    def rule(self, meta, children):
        name, lhs, arrow, rhs, guards, assumes, approx = children
        if not KEBAB.fullmatch(str(name)):
            raise _at(
                f"rule name '{name}' is not kebab-case; write it like 'add-zero' "
                "(lowercase words joined by '-')",
                pos_of(name),
            )
        return ast.RuleDecl(
            name=str(name),
            pos=pos_of(name),
            lhs=lhs,
            arrow=str(arrow),
            arrow_pos=pos_of(arrow),
            rhs=rhs,
            guards=tuple(guards or ()),
            approx=approx,
            assumes=tuple(assumes or ()),
        )

    def side(self, meta, children):
        return tuple(c if isinstance(c, ast.Item) else ast.Item(None, None, c) for c in children)

    def named(self, meta, children):
        name, term = children
        return ast.Item(str(name), pos_of(name), term)

    def call(self, meta, children):
        name, *args = children
        args = [a for a in args if a is not None]
        operands = tuple(a for a in args if not isinstance(a, ast.AttrArg))
        attrs = tuple(a for a in args if isinstance(a, ast.AttrArg))
        seen_attr = False
        for a in args:
            if isinstance(a, ast.AttrArg):
                seen_attr = True
            elif seen_attr:
                raise _at("operands must come before keyword attributes", a.pos)
        return ast.Call(str(name), operands, attrs, pos_of(name))

    def ref(self, meta, children):
        tok = children[0]
        if str(tok) == "_":
            return ast.Wildcard(pos_of(tok))
        return ast.Var(str(tok), pos_of(tok))

    def kwarg(self, meta, children):
        key, value = children
        return ast.AttrArg(str(key), value, pos_of(key), value.pos)

    def guards(self, meta, children):
        return tuple(children)

    def guard(self, meta, children):
        left, op, right = children
        return ast.Guard(str(op), left, right, pos_of(op))

    def predicate(self, meta, children):
        expr = children[0]
        if not isinstance(expr, ast.Func):
            raise _at(
                "a guard compares two expressions (dim(x, 0) == N) or is a predicate "
                "such as tile_candidate(D, TM, TN, TK)",
                expr.pos,
            )
        return ast.Predicate(expr.name, expr.args, expr.pos)

    def assumes(self, meta, children):
        return tuple(children)

    def assumption(self, meta, children):
        name, op, value = children
        if str(op) == "==":
            raise _at("an assumption bounds values: use > >= < <= or !=", pos_of(op))
        return ast.Assume(str(name), str(op), value, pos_of(name))

    def abs_assumption(self, meta, children):
        assume = self.assumption(meta, children)
        return ast.Assume(assume.name, assume.op, assume.value, assume.pos, magnitude=True)

    def approx(self, meta, children):
        value = children[0]
        if value.value <= 0 or value.value >= 1:
            raise _at(
                "an approx budget is a relative error in (0, 1), e.g. 'approx 0.01'", value.pos
            )
        return float(value.value)

    def binop(self, meta, children):
        left, op, right = children
        return ast.BinOp(str(op), left, right, pos_of(op))

    def neg(self, meta, children):
        operand = children[0]
        pos = ast.Pos(meta.line, meta.column)
        if isinstance(operand, ast.IntLit):
            return ast.IntLit(-operand.value, pos)
        if isinstance(operand, ast.FloatLit):
            return ast.FloatLit(-operand.value, pos)
        return ast.Neg(operand, pos)

    def number(self, meta, children):
        tok = children[0]
        if tok.type == "INT":
            problem = int_text_problem(tok)
            if problem is not None:
                raise _at(problem, pos_of(tok))
            return ast.IntLit(int(tok), pos_of(tok))
        value = float(tok)
        if math.isinf(value):
            shown = tok if len(tok) <= 24 else f"{tok[:12]}... ({len(tok)} characters)"
            raise _at(f"number {shown} is out of range", pos_of(tok))
        return ast.FloatLit(value, pos_of(tok))

    def string(self, meta, children):
        tok = children[0]
        return ast.StrLit(str(tok)[1:-1], pos_of(tok))

    def true(self, meta, children):
        return ast.BoolLit(True, ast.Pos(meta.line, meta.column))

    def false(self, meta, children):
        return ast.BoolLit(False, ast.Pos(meta.line, meta.column))

    def name(self, meta, children):
        return ast.Name(str(children[0]), pos_of(children[0]))

    def func(self, meta, children):
        name, *args = children
        return ast.Func(str(name), tuple(a for a in args if a is not None), pos_of(name))

    def list(self, meta, children):
        return ast.ListLit(
            tuple(c for c in children if c is not None), ast.Pos(meta.line, meta.column)
        )
