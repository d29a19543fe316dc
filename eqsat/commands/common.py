"""Helpers several subcommands share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

import numpy as np

from eqsat.fileio import load_arrays, print_warning
from eqsat.flags import UsageError, positive
from eqsat.loading import LoadedModel, load_model
from frontend import model_dims


def load_model_from_args(args: argparse.Namespace) -> LoadedModel:
    """Load args.model (text or .onnx, with its params file) and bind args.dim; an
    unknown --dim name is an error. Notes from loading go to stderr."""
    dims = dict(args.dim)
    loaded = load_model(args.model, dims)
    known = model_dims(loaded.model)
    for name in dims:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"--dim {name}: model '{loaded.model.name}' has no dimension '{name}' "
                f"(its dimensions: {listed})"
            )
    for note in loaded.notes:
        print(f"note: {note}", file=sys.stderr)
    return loaded


def bindings_from_args(args: argparse.Namespace, loaded: LoadedModel) -> dict:
    """Inputs and params: --inputs where given, else the params file, else --seed."""
    given = None
    if getattr(args, "inputs", None):
        given = load_arrays(
            args.inputs,
            loaded.input_specs(),
            allow_extra=getattr(args, "allow_extra", False),
            warn=print_warning,
        )
    return loaded.bindings(getattr(args, "seed", 0) or 0, given, getattr(args, "inputs", "") or "")


def compile_time_params(graph, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The values of `graph`'s params that the backend may take as known at compile time
    (a quantized program's per-channel multipliers are instruction immediates): those
    the program will be fed, so that what it bakes in is what it reads."""
    names = (str(node.attr("name")) for _, node in graph.params)
    return {n: values[n] for n in names if n in values}


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
        type=positive,
        metavar="REL",
        help="tolerance of --verify as a normwise relative error (default: scaled to the "
        "model's dtypes and reduction lengths, at most 0.05)",
    )
