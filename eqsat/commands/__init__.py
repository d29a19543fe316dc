"""Subcommands of `eqsat`; each module has `add_parser(subparsers)`."""

from eqsat.commands import check, ops, run

COMMANDS = [check, run, ops]
