"""`eqsat rules synthesize`: discover rewrite rules by enumeration (eqsat.synth)."""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import contextmanager

from eqsat.flags import positive, seed


def add_parser(rules_subparsers: argparse._SubParsersAction) -> None:
    from eqsat.synth.run import DEFAULT_MATRICES, DEFAULT_SCALARS, DEFAULT_SIZE

    p = rules_subparsers.add_parser(
        "synthesize",
        help="discover rules by enumerating terms over ops (Ruler-style)",
        description=(
            "Enumerate well-typed terms over the given ops (matrix and scalar variables, "
            "symbolic shapes) up to a size, fingerprint each by evaluating it on random "
            "integer and float inputs under several concrete shapes, take terms with one "
            "fingerprint as candidate rules, and keep, smallest first, each candidate that "
            "the rules kept so far do not derive in an e-graph and that passes "
            "verify-rules. Writes a documented rules file."
        ),
    )
    p.add_argument(
        "--ops",
        required=True,
        metavar="OP,OP,...",
        help="ops to enumerate: elementwise ops (one operand, or two with broadcasting), "
        "transpose and matmul",
    )
    p.add_argument(
        "--size",
        type=int,
        default=DEFAULT_SIZE,
        metavar="N",
        help=f"largest term size in op applications; leaves are free (default {DEFAULT_SIZE})",
    )
    p.add_argument(
        "--time",
        type=positive,
        metavar="SECONDS",
        help="time budget for enumeration and selection; when it runs out the rules kept "
        "so far are written, with a note in the file's header",
    )
    p.add_argument("-o", "--output", metavar="FILE.rules", help="write here (default: stdout)")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed (default 0)")
    p.add_argument(
        "--matrices",
        default=",".join(DEFAULT_MATRICES),
        metavar="A,B,...",
        help=f"matrix (rank 2) variables (default {','.join(DEFAULT_MATRICES)})",
    )
    p.add_argument(
        "--scalars",
        default=",".join(DEFAULT_SCALARS),
        metavar="S,...",
        help=f"scalar (rank 0) variables, '' for none (default {','.join(DEFAULT_SCALARS)})",
    )
    p.add_argument(
        "--rediscover",
        action="store_true",
        help="also report which identities over these ops in rules/algebra.rules and "
        "rules/layout.rules the kept rules derive",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


@contextmanager
def _progress(enabled: bool):
    """Two callbacks (enumeration, selection) that drive a rich progress bar on stderr."""
    if not enabled:
        yield None, None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    tasks: dict[object, int] = {}

    def on_enumerate(layer: int, done: int, total: int) -> None:
        key = ("size", layer)
        if key not in tasks:
            tasks[key] = bar.add_task(f"enumerate size {layer}", total=max(total, 1))
        bar.update(tasks[key], completed=done)

    def on_select(done: int, total: int, kept: int) -> None:
        if "select" not in tasks:
            tasks["select"] = bar.add_task("choose rules", total=max(total, 1))
        bar.update(tasks["select"], completed=done, description=f"choose rules ({kept} kept)")

    with bar:
        yield on_enumerate, on_select


def run(args: argparse.Namespace) -> int:
    from eqsat.fileio import write_atomic
    from eqsat.synth.run import SynthConfig, parse_ops, synthesize

    config = SynthConfig(
        ops=parse_ops(args.ops),
        size=args.size,
        matrices=_names(args.matrices),
        scalars=_names(args.scalars),
        seed=args.seed,
        time_budget=args.time,
    )
    config.check()
    show = not args.no_progress and sys.stderr.isatty()
    with _progress(show) as (on_enumerate, on_select):
        result = synthesize(config, on_enumerate, on_select)
    command = "eqsat rules synthesize " + " ".join(
        shlex.quote(a) for a in (getattr(args, "argv", None) or _argv(args))
    )
    text = result.text(command)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    out = sys.stderr if not args.output else sys.stdout
    sel = result.selection
    print(
        f"{result.enumeration.terms} terms, {len(result.enumeration.classes)} classes; "
        f"{result.found} candidate rules found, {sel.derivable} derivable, "
        f"{len(sel.unsound)} refuted, {len(sel.redundant)} dropped as derived, "
        f"{len(result.rules)} kept in {result.seconds:.1f} s"
        + (f" -> {args.output}" if args.output else ""),
        file=out,
    )
    note = result.note()
    if note:
        print(f"note: {note}", file=out)
    if args.rediscover:
        from eqsat.synth.rediscover import rediscover

        found = rediscover([k.rule.text(n, k.guarded) for n, k in result.rules], config.ops)
        print(
            f"rediscovered {len(found.rediscovered)} of {found.total} identities over these "
            "ops in rules/algebra.rules and rules/layout.rules",
            file=out,
        )
        if found.missed:
            print(f"missed: {', '.join(found.missed)}", file=out)
        for name, why in found.not_instantiable:
            print(f"not instantiable: {name} ({why})", file=out)
    return 0


def _argv(args: argparse.Namespace) -> list[str]:
    """The flags as given (for the file header)."""
    out = ["--ops", args.ops, "--size", str(args.size), "--seed", str(args.seed)]
    if args.time is not None:
        out += ["--time", f"{args.time:g}"]
    if args.matrices != "a,b,c":
        out += ["--matrices", args.matrices]
    if args.scalars != "s":
        out += ["--scalars", args.scalars]
    if args.output:
        out += ["-o", args.output]
    return out
