"""Checked, compiled rules: what the rest of eqsat uses.

A `Rule` keeps its source position, doc, ruleset, approx budget, syntax tree and the
egglog text of each direction. A `RuleCollection` is everything loaded together; it
emits the egglog program and maps egglog rule names back to rules (for reporting
matches per rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from eqsat.rules import ast
from eqsat.rules.compiler import egglog_names

APPROX_SUFFIX = "-approx"


@dataclass(frozen=True)
class Rule:
    name: str
    file: str
    line: int
    col: int
    doc: str | None
    ruleset: str  # the file's ruleset
    approx: float | None  # relative error budget of an approximate rule
    ast: ast.RuleDecl
    egglog: tuple[str, ...]  # one egglog `rule` command per direction

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    @property
    def is_approx(self) -> bool:
        return self.approx is not None

    @property
    def bidirectional(self) -> bool:
        return self.ast.bidirectional

    @property
    def egglog_names(self) -> tuple[str, ...]:
        return egglog_names(self.ast)

    @property
    def egglog_ruleset(self) -> str:
        """Approximate rules live in their own ruleset, run only on request."""
        return self.ruleset + APPROX_SUFFIX if self.is_approx else self.ruleset


@dataclass(frozen=True)
class RuleFile:
    path: str
    ruleset: str
    rules: tuple[Rule, ...]

    @property
    def rulesets(self) -> tuple[str, ...]:
        """The egglog rulesets this file's rules compile into."""
        names = [self.ruleset]
        if any(r.is_approx for r in self.rules):
            names.append(self.ruleset + APPROX_SUFFIX)
        return tuple(names)


@dataclass(frozen=True)
class RuleCollection:
    files: tuple[RuleFile, ...]

    @cached_property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(r for f in self.files for r in f.rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(name)

    def rulesets(self, include_approx: bool = False) -> list[str]:
        """egglog ruleset names in load order (exact rulesets first per file)."""
        return _rulesets(self.rules, [f.ruleset for f in self.files], include_approx)

    def by_egglog_name(self) -> dict[str, Rule]:
        return rule_index(self.rules)

    def compile(self, include_approx: bool = False) -> str:
        return compile_rules(self, include_approx)


def _rulesets(rules: Iterable[Rule], base: Iterable[str], include_approx: bool) -> list[str]:
    names = list(dict.fromkeys(base))
    for r in rules:
        if r.ruleset not in names:
            names.append(r.ruleset)
        if include_approx and r.is_approx and r.egglog_ruleset not in names:
            names.append(r.egglog_ruleset)
    return names


def compile_rules(rules: RuleCollection | Iterable[Rule], include_approx: bool = False) -> str:
    """egglog text: `(ruleset ...)` declarations then every rule's directions.

    Approximate rules are left out unless `include_approx`; then they go into
    `<ruleset>-approx`, which a schedule must run explicitly."""
    base = [f.ruleset for f in rules.files] if isinstance(rules, RuleCollection) else []
    rules = list(rules)
    chosen = [r for r in rules if include_approx or not r.is_approx]
    parts = [f"(ruleset {name})" for name in _rulesets(chosen, base, include_approx)]
    for r in chosen:
        header = f"; {r.name} ({r.location})" + (f": {r.doc}" if r.doc else "")
        parts.append(_one_line(header))
        parts.extend(r.egglog)
    return "\n".join(parts) + "\n"


def _one_line(comment: str) -> str:
    """An egglog comment that stays one: a file path or doc from the user holding a
    newline (or any character that is not printable) must not end it early."""
    return " ".join("".join(c if c.isprintable() else " " for c in comment).split())


def rule_index(rules: Iterable[Rule]) -> dict[str, Rule]:
    """egglog rule name (NAME or NAME-rev) -> the rule it came from."""
    return {name: r for r in rules for name in r.egglog_names}
