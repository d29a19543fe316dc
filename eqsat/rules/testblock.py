"""The body of a `test NAME { ... }` block of a rules file -> ast.TestDecl.

A body is a model fragment in the model language (frontend/model.lark: inputs,
params, consts, statements, outputs) with directive lines mixed in:

    expect kernels == [matmul_bias_gelu]      expect kernels <= 2
    expect no softmax                         expect cost < 0.8 * input
    expect equal(y, relu(x))                  on hw=edge | on hw=tiny.toml
    with approx

A line whose first word is `expect`, `on` or `with` (and not `NAME = ...`) is a
directive, parsed with the rules grammar (start `test_line`); every other line
belongs to the fragment, parsed by the model frontend. Both parse the text at its
place in the rules file, so every error is at the rules file's FILE:LINE:COL.
"""

from __future__ import annotations

import re

from eqsat.errors import SourceError, closest_name
from eqsat.rules import ast
from eqsat.rules.errors import ExpectationError, RuleSyntaxError
from eqsat.rules.grammar import RULE_MAX_NESTING, TERMINAL_WORDS, ToAst, rules_lark
from eqsat.sourcetext import parse_to_ast

_DIRECTIVE = re.compile(r"[ \t]*(expect|on|with)\b(?![ \t]*=)")

FORMS = "`kernels == [op, ...]`, `kernels <= N`, `no OP`, `equal(a, b)` or `cost < K * input`"


def parse_test(raw, file: str, text: str) -> ast.TestDecl:
    """Parse the body of a raw test block (eqsat.rules.grammar.RawTest)."""
    body = raw.body
    segments = str(body)[1:-1].split("\n")
    fragment: list[str] = [""] * (body.line - 1)
    expects: list[ast.Expectation] = []
    hw = hw_pos = None
    approx = False
    for k, segment in enumerate(segments):
        line, col = body.line + k, (body.column + 1 if k == 0 else 1)
        if not _DIRECTIVE.match(segment):
            fragment.append(" " * (col - 1) + segment)
            continue
        fragment.append("")
        padded = "\n" * (line - 1) + " " * (col - 1) + segment
        try:
            item = parse_to_ast(
                rules_lark("test_line"),
                ToAst(),
                padded,
                file,
                RuleSyntaxError,
                TERMINAL_WORDS,
                max_nesting=RULE_MAX_NESTING,
                nesting_advice="compare smaller terms",
            )
        except RuleSyntaxError as err:
            message = err.message.replace("unexpected end of file", "unexpected end of line")
            if message.startswith("unexpected"):
                message += (
                    f"; a directive line of a test is `expect` with {FORMS}, "
                    "`on hw=PRESET|FILE` or `with approx`"
                )
            raise RuleSyntaxError(
                message,
                file,
                err.line,
                err.col,
                text,
            ) from None
        if item[0] == "hw":
            hw, hw_pos = item[1], item[2]
        elif item[0] == "approx":
            approx = True
        else:
            expects.append(_expectation(item, file, text))
    if not expects:
        raise ExpectationError(
            f"test '{raw.name}' has no `expect` line: it would pass whatever the rules do",
            file,
            raw.pos.line,
            raw.pos.col,
            text,
        )
    name = raw.name.replace("-", "_")
    model_text = f"model {name} {{\n" + "\n".join(fragment) + "\n}\n"
    model = _parse_fragment(model_text, file, text)
    return ast.TestDecl(raw.name, raw.pos, model, tuple(expects), hw, hw_pos, approx)


def _parse_fragment(model_text: str, file: str, text: str):
    from frontend import parse_model

    try:
        return parse_model(model_text, file)
    except SourceError as err:
        raise relocated(err, RuleSyntaxError, file, text) from None


def relocated(err: SourceError, cls: type[SourceError], file: str, text: str) -> SourceError:
    """A model frontend error about a test fragment, at its place in the rules file."""
    line = max(err.line - ast.FRAGMENT_LINE_SHIFT, 1)
    return cls(err.message, file, line, err.col, text)


def _fail(message: str, pos: ast.Pos, file: str, text: str) -> ExpectationError:
    return ExpectationError(message, file, pos.line, pos.col, text)


def check_ops(test: ast.TestDecl, file: str, text: str) -> None:
    """Every op an expectation names is in the registry. Run where the test's hardware
    is in use: its declared instructions are ops then (eqsat/custom_instr)."""
    from eqsat.ops import REGISTRY

    named = [(e.op, e.pos) for e in test.expects if isinstance(e, ast.ExpectNo)]
    for e in test.expects:
        if isinstance(e, ast.ExpectKernels):
            named += list(e.kernels)
    for name, pos in named:
        if name not in REGISTRY:
            near = closest_name(name, sorted(REGISTRY))
            hint = f"; did you mean '{near}'?" if near else " (`eqsat ops` lists them)"
            raise _fail(f"unknown op '{name}'{hint}", pos, file, text)


def _expectation(item: tuple, file: str, text: str) -> ast.Expectation:
    kind = item[0]
    if kind == "no":
        _, op, pos = item
        return ast.ExpectNo(op, pos)
    if kind == "equal":
        _, left, right, pos = item
        return ast.ExpectEqual(
            left, right, term_text(left, file, text), term_text(right, file, text), pos
        )
    _, left, op, right, pos = item
    subject = left.name if isinstance(left, ast.Name) else None
    if subject == "kernels":
        if isinstance(right, ast.ListLit):
            if op not in ("==", "!="):
                raise _fail("a kernel list compares with == or !=", pos, file, text)
            names = []
            for entry in right.items:
                if not isinstance(entry, ast.Name):
                    raise _fail(
                        "a kernel list holds op names: [matmul_bias, softmax]",
                        entry.pos,
                        file,
                        text,
                    )
                names.append((entry.name, entry.pos))
            return ast.ExpectKernels(op, tuple(names), pos)
        if isinstance(right, ast.IntLit) and right.value >= 0:
            return ast.ExpectKernelCount(op, right.value, pos)
        raise _fail(
            "`kernels` compares with a list of op names ([matmul_bias]) or a count (2)",
            right.pos,
            file,
            text,
        )
    if subject == "cost":
        _check_bound(right, file, text)
        return ast.ExpectCost(op, right, pos)
    raise _fail(f"an expectation is {FORMS}", left.pos, file, text)


def _check_bound(expr: ast.Expr, file: str, text: str) -> None:
    """A cost bound: numbers, `input` and + - * / of them."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.BinOp) and e.op != "%":
            stack += [e.left, e.right]
        elif isinstance(e, ast.Neg):
            stack.append(e.operand)
        elif isinstance(e, ast.Name) and e.name == "input":
            continue
        elif not isinstance(e, ast.IntLit | ast.FloatLit):
            raise _fail(
                "a cost bound is a number of cycles or an expression of `input` (the cycles "
                "of the fragment as written), e.g. 0.8 * input",
                e.pos,
                file,
                text,
            )


def term_text(term: ast.Term, file: str, text: str) -> str:
    """A term of an `equal(...)` expectation in the model language."""
    if isinstance(term, ast.Var):
        return term.name
    if isinstance(term, ast.Wildcard):
        raise _fail("`_` is a pattern; equal(...) compares terms", term.pos, file, text)
    args = [term_text(a, file, text) for a in term.args]
    args += [f"{a.key}={_value_text(a.value, file, text)}" for a in term.attrs]
    return f"{term.op}({', '.join(args)})"


def _value_text(value: ast.Expr, file: str, text: str) -> str:
    if isinstance(value, ast.BoolLit):
        return "true" if value.value else "false"
    if isinstance(value, ast.IntLit | ast.FloatLit):
        return repr(value.value)
    if isinstance(value, ast.StrLit):
        return value.value
    if isinstance(value, ast.Name):
        return value.name
    if isinstance(value, ast.ListLit):
        return "[" + ", ".join(_value_text(v, file, text) for v in value.items) + "]"
    raise _fail("an attribute of a term here is a literal value", value.pos, file, text)
