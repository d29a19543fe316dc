"""Subcommands of `eqsat`; each module has `add_parser(subparsers)`."""

from eqsat.commands import check, compile, ops, optimize, rules, run, simulate, verify_rules
from eqsat.extract import cli as extract

COMMANDS = [check, run, optimize, extract, rules, ops, compile, simulate, verify_rules]
