"""Find, parse, check and compile rules files; catch duplicate names across files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path

from eqsat.errors import UserError
from eqsat.rules import ast
from eqsat.rules.compiler import compile_rule, egglog_names
from eqsat.rules.errors import DuplicateRuleError, RuleSyntaxError
from eqsat.rules.library import APPROX_SUFFIX, Rule, RuleCollection, RuleFile
from eqsat.rules.parser import parse_rules
from eqsat.sourcetext import read_source

_RULESET = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
RESERVED_RULESETS = {"analysis"}


# Words egglog reads as values, and the scheduler the saturation loop binds.
EGGLOG_WORDS = frozenset({"true", "false", "inf", "nan", "NaN", "bo"})


@cache
def egglog_symbols() -> frozenset[str]:
    """Every name the e-graph program defines or calls before a rules file enters it
    (sorts, constructors, functions, relations, commands). A ruleset is an egglog
    symbol too: one of these names would be a clash (or a different meaning) there."""
    from eqsat.egraph.encoding import program_prelude
    from eqsat.rules.predicates import PREDICATES

    text = re.sub(r";[^\n]*", "", program_prelude())
    names = set(re.findall(r"\(([A-Za-z][A-Za-z0-9_-]*)", text))
    names |= {p.relation for p in PREDICATES.values()}
    return frozenset(names | EGGLOG_WORDS)


@cache
def prelude_rule_names() -> frozenset[str]:
    """Names the e-graph prelude already uses for its analysis rules."""
    from eqsat.egraph.encoding import program_prelude

    return frozenset(re.findall(r':name "([^"]+)"', program_prelude()))


def rule_files(paths: Iterable[str | Path]) -> list[Path]:
    """Each path is a .rules file or a directory whose *.rules are taken in sorted order."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(path.glob("*.rules")))
        elif path.is_file():
            out.append(path)
        else:
            raise UserError(f"{path}: no such rules file or directory")
    return out


def _check_ruleset(parsed: ast.RulesFile) -> None:
    name = parsed.ruleset
    pos = parsed.ruleset_pos or ast.Pos(1, 1)
    where = "" if parsed.ruleset_pos else " (taken from the file name; add a `ruleset NAME` header)"
    if not _RULESET.fullmatch(name):
        message = f"ruleset name '{name}' must be letters, digits, '-' or '_'{where}"
    elif name in RESERVED_RULESETS:
        message = f"ruleset name '{name}' is reserved for the shape analysis{where}"
    elif name in egglog_symbols():
        message = (
            f"ruleset name '{name}' is a name the e-graph program already uses; choose "
            f"another{where}"
        )
    elif name.endswith(APPROX_SUFFIX):
        message = (
            f"ruleset names may not end in '{APPROX_SUFFIX}' (approximate rules get it){where}"
        )
    else:
        return
    raise RuleSyntaxError(message, parsed.path, pos.line, pos.col, parsed.source)


def check_file(parsed: ast.RulesFile) -> RuleFile:
    """Check and compile every rule of one parsed file."""
    _check_ruleset(parsed)
    rules = []
    for decl in parsed.rules:
        texts = compile_rule(decl, _ruleset_of(parsed.ruleset, decl), parsed.path, parsed.source)
        rules.append(
            Rule(
                name=decl.name,
                file=parsed.path,
                line=decl.pos.line,
                col=decl.pos.col,
                doc=decl.doc,
                ruleset=parsed.ruleset,
                approx=decl.approx,
                ast=decl,
                egglog=texts,
            )
        )
    return RuleFile(parsed.path, parsed.ruleset, tuple(rules))


def _ruleset_of(ruleset: str, decl: ast.RuleDecl) -> str:
    return ruleset + APPROX_SUFFIX if decl.approx is not None else ruleset


def _check_duplicates(files: list[tuple[RuleFile, str]]) -> None:
    seen: dict[str, Rule] = {}
    taken = prelude_rule_names()
    for rule_file, source in files:
        for rule in rule_file.rules:
            for name in egglog_names(rule.ast):
                if name in taken:
                    raise DuplicateRuleError(
                        f"rule name '{name}' is used by the e-graph's shape analysis; rename the rule",
                        rule.file,
                        rule.line,
                        rule.col,
                        source,
                    )
                first = seen.get(name)
                if first is not None:
                    what = (
                        f"'{name}'"
                        if name == rule.name or name == first.name
                        else f"'{name}' (a <=> rule's reverse)"
                    )
                    raise DuplicateRuleError(
                        f"rule {what} is already defined at {first.location}; rule names must be "
                        "unique across all loaded files",
                        rule.file,
                        rule.line,
                        rule.col,
                        source,
                    )
                seen[name] = rule


@lru_cache(maxsize=64)
def checked_text(text: str, file: str) -> RuleFile:
    """One rules file parsed, checked and compiled. Remembered by its text: a process
    that optimizes many models (tests, sweeps, benchmarks) parses the bundled rules
    once. The result depends on the op registry too, so registering or removing a
    hardware's instructions clears this (eqsat/custom_instr/scope.py)."""
    return check_file(parse_rules(text, file))


def load_rules_text(text: str, file: str = "<rules>") -> RuleCollection:
    """Check and compile rules given as text (mainly for tests and tools)."""
    parsed = parse_rules(text, file)
    checked = check_file(parsed)
    _check_duplicates([(checked, parsed.source)])
    return RuleCollection((checked,))


def load_rules(paths: Iterable[str | Path] | str | Path) -> RuleCollection:
    """Load rules files (or directories of *.rules), checked and compiled.

    Raises a RuleError subclass (FILE:LINE:COL) on the first mistake, or UserError
    for a path that does not exist."""
    if isinstance(paths, str | Path):
        paths = [paths]
    files = []
    for path in rule_files(paths):
        text = read_source(path, "rules", RuleSyntaxError)
        files.append((checked_text(text, str(path)), text))
    _check_duplicates(files)
    return RuleCollection(tuple(f for f, _ in files))
