"""`eqsat check`: parse and type-check a model, print what it costs unoptimized."""

from __future__ import annotations

import argparse

from eqsat.commands.common import load_model_from_args
from eqsat.flags import add_dim_flag
from eqsat.summary import summarize


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="parse and type-check a model; print a summary",
        description=(
            "Parse and type-check MODEL, then print its inputs and outputs, ops by kind, "
            "parameter count, FLOPs, and the bytes an unfused execution moves. Exits 1 "
            "with FILE:LINE:COL: error: ... on any mistake in the model."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model file in the eqsat text format")
    add_dim_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load_model_from_args(args).graph
    print(summarize(graph).format())
    return 0
