"""Tests inside rules files (`test NAME { ... }` blocks), run by `eqsat rules test`,
and `eqsat rules why`: whether rules prove two programs equal, and how."""

from eqsat.ruletest.runner import (
    RuleSets,
    TestResult,
    format_result,
    parse_files,
    run_files,
    run_test,
    validate,
    validate_files,
)

__all__ = [
    "RuleSets",
    "TestResult",
    "format_result",
    "parse_files",
    "run_files",
    "run_test",
    "validate",
    "validate_files",
]
