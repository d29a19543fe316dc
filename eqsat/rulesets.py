"""Rule files -> what the optimizer runs: egglog text, rulesets, rule names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eqsat.pipeline import CompiledRules
from eqsat.rules import default_rules_dir, load_rules

DEFAULT_RULES_DIR = default_rules_dir()


def compile_rule_paths(
    paths: Sequence[str | Path], include_approx: bool = False, provenance: bool = False
) -> CompiledRules:
    """Load, check and compile rule files or directories (raises a RuleError).
    `provenance`: the rules record which of them built each e-node (`eqsat explain`)."""
    rules = load_rules(list(paths))
    names = frozenset(n for rule in rules.rules for n in rule.egglog_names)
    if provenance:
        from eqsat.rules.provenance import compile_with_provenance

        text = compile_with_provenance(rules, include_approx)
    else:
        text = rules.compile(include_approx)
    return CompiledRules(
        text=text,
        rulesets=tuple(rules.rulesets(include_approx)),
        names=names,
    )
