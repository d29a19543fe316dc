"""`eqsat extract EGRAPH.json`: extract from a serialized e-graph with its stored costs.

``add_parser(subparsers)`` registers the subcommand on the project's main CLI; the
handler is stored as ``args.handler`` and returns an exit code. ``python -m
eqsat.extract.cli`` runs it standalone.

Exit codes: 0 success, 1 nothing extractable, 2 bad input (file, format, root).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from eqsat.extract.api import EXTRACTORS, extract
from eqsat.extract.egraph import EGraph, UnknownClassError
from eqsat.extract.errors import EGraphFormatError, ExtractError
from eqsat.extract.result import Extraction
from eqsat.extract.serialized import load_egraph

EXIT_OK, EXIT_NO_TERM, EXIT_BAD_INPUT = 0, 1, 2


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``extract`` subcommand on an argparse subparsers object."""
    parser = subparsers.add_parser(
        "extract",
        help="extract the cheapest term DAG from a serialized e-graph (egraph-serialize JSON)",
        description=(
            "Extract the cheapest term DAG (shared subterms paid once) from an e-graph in "
            "egraph-serialize JSON, using the node costs stored in the file."
        ),
    )
    configure_parser(parser)
    return parser


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the subcommand's arguments to ``parser`` and set its handler."""
    parser.add_argument("egraph", metavar="EGRAPH.json", help="egraph-serialize JSON file")
    parser.add_argument("--extractor", choices=EXTRACTORS, default="greedy", help="default: greedy")
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="CLASS",
        help=(
            "root e-class id (repeatable); default: the file's root_eclasses, else its "
            "let-bound classes, else the classes no node uses"
        ),
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help=(
            "ILP time limit in seconds (default 60); at the limit the best answer found "
            "(never worse than greedy's) is returned with its optimality gap"
        ),
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"cost": ..., "nodes": [...], ...}'
    )
    parser.set_defaults(handler=run_extract)


def run_extract(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Handle parsed ``extract`` arguments; print the result; return an exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        egraph = load_egraph(args.egraph)
        if egraph.missing_roots and not args.root:
            print(
                f"eqsat extract: warning: root class(es) {list(egraph.missing_roots)} of "
                f"{egraph.source} name no e-class; extracting the other roots",
                file=err,
            )
        result = extract(egraph, args.extractor, args.root or None, time_limit=args.time_limit)
    except (EGraphFormatError, UnknownClassError) as exc:
        print(f"eqsat extract: error: {exc}", file=err)
        return EXIT_BAD_INPUT
    except ExtractError as exc:
        print(f"eqsat extract: error: {exc}", file=err)
        return EXIT_NO_TERM
    if args.json:
        json.dump(_as_json(result), out)
        out.write("\n")
    else:
        out.write(_as_text(egraph, result))
    return EXIT_OK


def _as_json(result: Extraction) -> dict[str, Any]:
    return {
        "cost": result.dag_cost,
        "nodes": result.nodes,
        "choice": result.choice,
        "roots": list(result.roots),
        "extractor": result.extractor,
        "status": result.status,
        "detail": result.detail,
        "seconds": result.seconds,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
    }


def _as_text(egraph: EGraph, result: Extraction) -> str:
    lines = [
        f"e-graph:   {egraph.source} ({egraph.n_nodes} nodes, {egraph.n_classes} classes)",
        f"roots:     {', '.join(result.roots)}",
        f"extractor: {result.extractor} ({result.status})",
        f"cost:      {result.dag_cost:g}",
        f"nodes:     {len(result.choice)} chosen",
        f"time:      {result.seconds:.3f} s",
    ]
    if result.gap is not None:
        lines.append(f"gap:       {result.gap:.4%} (lower bound {result.lower_bound:g})")
    if result.detail:
        lines.append(f"detail:    {result.detail}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry: ``python -m eqsat.extract.cli EGRAPH.json [...]``."""
    parser = argparse.ArgumentParser(prog="eqsat extract")
    configure_parser(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
