"""Helpers several subcommands share."""

from __future__ import annotations

import argparse

from eqsat.cli import UsageError
from eqsat.ir.graph import Graph
from frontend import Model, check_model, model_dims, parse_model_file


def load_model_from_args(args: argparse.Namespace) -> tuple[Model, Graph]:
    """Parse args.model and bind args.dim; an unknown --dim name is an error."""
    model = parse_model_file(args.model)
    dims = dict(args.dim)
    known = model_dims(model)
    for name in dims:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"--dim {name}: model '{model.name}' has no dimension '{name}' (its dimensions: {listed})"
            )
    return model, check_model(model, dims)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def add_verify_flags(p: argparse.ArgumentParser, what: str) -> None:
    """--verify and --verify-tol (translation validation, eqsat.verify.translation)."""
    p.add_argument(
        "--verify",
        action="store_true",
        help=f"check {what} against the original model on random inputs (3 seeds) with the "
        "reference interpreter; on an error above tolerance exit 1 and write nothing",
    )
    p.add_argument(
        "--verify-tol",
        type=_positive,
        metavar="REL",
        help="tolerance of --verify as a normwise relative error (default: scaled to the "
        "model's dtypes and reduction lengths, at most 0.05)",
    )


def verify_seeds(args: argparse.Namespace) -> tuple[int, ...]:
    first = getattr(args, "seed", 0) or 0
    return (first, first + 1, first + 2)
