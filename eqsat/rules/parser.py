"""Rules text -> syntax tree (eqsat.rules.ast), syntax errors as RuleSyntaxError.

The grammar and its tree -> ast transformer are grammar.py's, a test block's body
testblock.py's. Doc comments are not tokens: the `#` line directly above a rule's
name is read from the source text.
"""

from __future__ import annotations

import re
from pathlib import Path

from lark.exceptions import UnexpectedToken

from eqsat.rules import ast
from eqsat.rules.errors import DuplicateTestError, RuleSyntaxError
from eqsat.rules.grammar import RULE_MAX_NESTING, TERMINAL_WORDS, ToAst, pos_of, rules_lark
from eqsat.rules.testblock import parse_test
from eqsat.sourcetext import parse_to_ast, read_source


def _hint(err: UnexpectedToken) -> str:
    if "RULE_NAME" in err.expected:
        return "; a rule reads `name: lhs => rhs`"
    if err.token.type == "COLON":
        return "; a rule starts with its kebab-case name and ':' at a new rule"
    return ""


def _doc_above(lines: list[str], line: int) -> str | None:
    """The comment on the line directly above `line` (1-based), without its `#`."""
    if line < 2:
        return None
    above = lines[line - 2].strip()
    if not above.startswith("#") or above.startswith("##"):  # `##` heads a section
        return None
    return above.lstrip("#").strip() or None


def parse_rules(text: str, file: str = "<rules>") -> ast.RulesFile:
    """Parse one rules file. The ruleset defaults to the file's stem."""
    try:
        header, rules, raw_tests = parse_to_ast(
            rules_lark(),
            ToAst(),
            text,
            file,
            RuleSyntaxError,
            TERMINAL_WORDS,
            _hint,
            max_nesting=RULE_MAX_NESTING,
            nesting_advice="split the rule into smaller rules",
        )
    except RuleSyntaxError as err:
        before = (err.source_line() or "")[: err.col - 1]
        if err.message == "unexpected character '{'" and re.search(r"\btest\s+\S+\s*$", before):
            err.message = (
                "this test block has no closing '}' (inside a test, '}' may only appear "
                "in a comment)"
            )
            err.args = (err.message,)
        raise
    lines = text.splitlines()
    rules = tuple(
        ast.RuleDecl(**{**r.__dict__, "doc": _doc_above(lines, r.pos.line)}) for r in rules
    )
    if header is not None:
        ruleset, ruleset_pos = str(header), pos_of(header)
    else:
        ruleset, ruleset_pos = Path(file).stem, None
    tests: dict[str, ast.TestDecl] = {}
    for raw in raw_tests:
        if raw.name in tests:
            first = tests[raw.name].pos
            raise DuplicateTestError(
                f"test '{raw.name}' is already defined at {file}:{first.line}:{first.col}",
                file,
                raw.pos.line,
                raw.pos.col,
                text,
            )
        tests[raw.name] = parse_test(raw, file, text)
    return ast.RulesFile(file, ruleset, ruleset_pos, rules, text, tuple(tests.values()))


def parse_rules_file(path: str | Path) -> ast.RulesFile:
    return parse_rules(read_source(path, "rules", RuleSyntaxError), str(path))
