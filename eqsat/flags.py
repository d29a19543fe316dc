"""Command-line flags several commands share, and the error a bad flag value raises.

Kept apart from eqsat/cli.py (which builds the parser from the commands) so that the
commands import flags without importing the CLI that imports them.
"""

from __future__ import annotations

import argparse

from eqsat.errors import UserError
from eqsat.limits import int_text_problem, number_text, side_problem


class UsageError(UserError):
    """A bad flag value."""


def parse_dim(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier() or not value.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INT, got '{number_text(text)}'")
    problem = int_text_problem(value) or side_problem(int(value))
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{name}: {problem}")
    if int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INT, got '{text}'")
    return name, int(value)


def parse_dim_or_range(text: str) -> tuple[str, int] | tuple[str, range]:
    """A --dim value where bundles are compiled: NAME=VALUE, or NAME=LO..HI (a range of
    values one bundle serves, given as range(LO, HI + 1))."""
    name, _, value = text.partition("=")
    if ".." not in value:
        return parse_dim(text)
    lo_text, _, hi_text = value.partition("..")
    lo = parse_dim(f"{name}={lo_text.strip()}")[1]
    hi = parse_dim(f"{name}={hi_text.strip()}")[1]
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{name}: the range {number_text(value)} is empty")
    return name, range(lo, hi + 1)


def seed(text: str) -> int:
    """A --seed value: a non-negative integer (numpy's generators take no other)."""
    value = text.strip()
    if not value.isdigit() or int_text_problem(value) is not None:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer below 2^63, got '{number_text(text)}'"
        )
    return int(value)


def whole_number(low: int, high: int):
    """A flag type: a whole number from `low` to `high` (a count of runs)."""

    def parse(text: str) -> int:
        if not text.strip().isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {high}, got '{number_text(text)}'"
            )
        return int(text)

    return parse


def positive(text: str, what: str = "a positive number") -> float:
    """A flag value that must be a number above 0 (nan refused; inf allowed)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected {what}, got '{number_text(text)}'")
    return value


def seconds(text: str) -> float:
    """A time-limit value: a positive number of seconds (inf: no limit; nan refused)."""
    return positive(text, "a positive number of seconds")


def add_dim_flag(parser: argparse.ArgumentParser, ranges: bool = False) -> None:
    """ranges: also accept NAME=LO..HI (commands that compile bundles, eqsat/bundle)."""
    parser.add_argument(
        "--dim",
        metavar="NAME=VALUE" + ("|NAME=LO..HI" if ranges else ""),
        type=parse_dim_or_range if ranges else parse_dim,
        action="append",
        default=[],
        help="bind a symbolic dimension, overriding the model's default (repeatable)"
        + (
            "; NAME=LO..HI compiles a bundle of programs for that range (see --buckets)"
            if ranges
            else ""
        ),
    )


def add_allow_extra_flag(parser: argparse.ArgumentParser) -> None:
    """--allow-extra: for the commands that read --inputs or --calibrate files."""
    parser.add_argument(
        "--allow-extra",
        action="store_true",
        help="a member of an --inputs or --calibrate file whose name matches no input or "
        "param of the model is a warning (and ignored), not an error",
    )


def verify_seeds(args: argparse.Namespace) -> tuple[int, ...]:
    """The seeds --verify runs on: --seed (0 without the flag) and the two after it."""
    first = getattr(args, "seed", 0) or 0
    return (first, first + 1, first + 2)
