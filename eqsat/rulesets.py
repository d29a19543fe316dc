"""Rule files -> what the optimizer runs: egglog text, rulesets, rule names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eqsat.blocks.seams import rule_nestings
from eqsat.pipeline import CompiledRules
from eqsat.rules import RuleCollection, default_rules_dir, load_rules

DEFAULT_RULES_DIR = default_rules_dir()


def with_instruction_rules(rules: RuleCollection, quick_check: bool = True) -> RuleCollection:
    """`rules` plus the rules of the instructions of the hardware in use, if any.
    `quick_check`: first evaluate each instruction's semantics against what it
    replaces on one set of random operands (eqsat/custom_instr/meaning.py)."""
    from eqsat.custom_instr import in_use, instruction_rules
    from eqsat.custom_instr.meaning import check_meaning

    hw = in_use()
    extra = instruction_rules(hw) if hw is not None else None
    if extra is None:
        return rules
    if quick_check:
        for ins in hw.instructions:  # type: ignore[union-attr]
            check_meaning(ins)
    taken = {r.name for r in rules}
    clash = next((r for r in extra.rules if r.name in taken), None)
    if clash is not None:
        from eqsat.errors import UserError

        raise UserError(
            f"{clash.location}: error: rule name '{clash.name}' of an instruction is also "
            f"defined at {rules.rule(clash.name).location}; rename that rule"
        )
    return RuleCollection((*rules.files, extra))


def compile_rule_paths(
    paths: Sequence[str | Path], include_approx: bool = False, provenance: bool = False
) -> CompiledRules:
    """Load, check and compile rule files or directories (raises a RuleError).
    `provenance`: the rules record which of them built each e-node (`eqsat explain`).
    While a hardware's declared instructions are in use (eqsat/custom_instr), the rules
    that introduce them come too."""
    rules = load_rules(list(paths))
    rules = with_instruction_rules(rules)
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
        nestings=rule_nestings(rules),
    )
