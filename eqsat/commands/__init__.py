"""Subcommands of `eqsat`; each module has `add_parser(subparsers)`."""

from eqsat.commands import (
    bench,
    check,
    compile,
    diff,
    explain,
    explore,
    import_model,
    ops,
    optimize,
    profile,
    roofline,
    rules,
    run,
    simulate,
    verify_rules,
)
from eqsat.extract import cli as extract

COMMANDS = [
    import_model,
    check,
    run,
    optimize,
    extract,
    rules,
    ops,
    compile,
    simulate,
    bench,
    profile,
    roofline,
    explain,
    explore,
    diff,
    verify_rules,
]
