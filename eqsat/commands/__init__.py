"""Subcommands of `eqsat`; each module has `add_parser(subparsers)`."""

from eqsat.commands import check, ops, optimize, rules, run
from eqsat.extract import cli as extract

COMMANDS = [check, run, optimize, extract, rules, ops]
