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
