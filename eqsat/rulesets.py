"""Rule files -> what the optimizer runs: egglog text, rulesets, rule names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eqsat.pipeline import CompiledRules
from eqsat.rules import default_rules_dir, load_rules

DEFAULT_RULES_DIR = default_rules_dir()


def compile_rule_paths(paths: Sequence[str | Path], include_approx: bool = False) -> CompiledRules:
    """Load, check and compile rule files or directories (raises a RuleError)."""
    rules = load_rules(list(paths))
    names = frozenset(n for rule in rules.rules for n in rule.egglog_names)
    return CompiledRules(
        text=rules.compile(include_approx),
        rulesets=tuple(rules.rulesets(include_approx)),
        names=names,
    )
