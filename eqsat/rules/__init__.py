"""The rule language: rules/*.rules files -> checked rules -> egglog text.

    load_rules(paths)                  -> RuleCollection (raises a RuleError at FILE:LINE:COL)
    compile_rules(rules, include_approx=False) -> egglog text
    rule_index(rules)                  -> {egglog rule name: Rule}

The language itself is documented for rule writers in rules/README.md.
"""

from pathlib import Path

from eqsat.rules.errors import (
    ArityError,
    DuplicateRuleError,
    EgglogRejectedError,
    GuardTypeError,
    MissingAttributeError,
    RuleAttributeError,
    RuleError,
    RuleStructureError,
    RuleSyntaxError,
    UnboundVariableError,
    UndefinedRootError,
    UnknownOpError,
)
from eqsat.rules.library import (
    APPROX_SUFFIX,
    Rule,
    RuleCollection,
    RuleFile,
    compile_rules,
    rule_index,
)
from eqsat.rules.loader import load_rules, load_rules_text
from eqsat.rules.verify import check_in_egglog

__all__ = [
    "APPROX_SUFFIX",
    "ArityError",
    "DuplicateRuleError",
    "EgglogRejectedError",
    "GuardTypeError",
    "MissingAttributeError",
    "Rule",
    "RuleAttributeError",
    "RuleCollection",
    "RuleError",
    "RuleFile",
    "RuleStructureError",
    "RuleSyntaxError",
    "UnboundVariableError",
    "UndefinedRootError",
    "UnknownOpError",
    "check_in_egglog",
    "compile_rules",
    "default_rules_dir",
    "load_rules",
    "load_rules_text",
    "rule_index",
]


def default_rules_dir() -> Path:
    """The project's rules/ directory (beside the eqsat package in a source tree; the
    installed `eqsat_rules` resource package otherwise)."""
    import eqsat

    here = Path(eqsat.__file__).parent.parent / "rules"
    if here.is_dir():
        return here
    try:
        import eqsat_rules  # a namespace package: rules/ installed as data
    except ModuleNotFoundError:
        return here
    return Path(next(iter(eqsat_rules.__path__)))
