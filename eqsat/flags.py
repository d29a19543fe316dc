"""Command-line flags several commands share, and the error a bad flag value raises.

Kept apart from eqsat/cli.py (which builds the parser from the commands) so that the
commands import flags without importing the CLI that imports them.
"""

from __future__ import annotations

import argparse

from eqsat.errors import UserError


class UsageError(UserError):
    """A bad flag value."""


def parse_dim(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier() or not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INT, got '{text}'")
    return name, int(value)


def add_dim_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dim",
        metavar="NAME=VALUE",
        type=parse_dim,
        action="append",
        default=[],
        help="bind a symbolic dimension, overriding the model's default (repeatable)",
    )
