"""`eqsat explore`: a model on many variants of a hardware description (eqsat.explore)."""

from __future__ import annotations

import argparse
import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

from eqsat.blocks.scheduler import dask_client
from eqsat.commands.block_flags import cache_from_args
from eqsat.commands.common import load_model_from_args
from eqsat.config import DEFAULT_HARDWARE
from eqsat.explore import evaluate_point, expand_sweeps, pareto_front, parse_sweep
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim.hardware import derive, load_hardware

PLOT_FORMATS = (".png", ".svg", ".pdf")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="design-space exploration: compile and simulate a model on hardware variants",
        description=(
            "Compile and simulate MODEL (or only price it with the cost model, --estimate) "
            "on every combination of the swept hardware fields, print the results and the "
            "Pareto front of cycles against an area proxy (MACs in the array, SRAM bytes). "
            "Each point is cached: a rerun resumes where the last one stopped."
        ),
        epilog="example: eqsat explore examples/mlp.model --sweep array=8,16,32 "
        "--sweep sram_bytes=128KiB,256KiB --estimate -o points.csv --plot pareto.png",
    )
    p.add_argument("model", metavar="MODEL", help="model file (text format or .onnx)")
    p.add_argument(
        "--sweep",
        action="append",
        required=True,
        type=_sweep,
        metavar="KEY=V1,V2,...",
        help="values of one hardware field (repeatable; every combination is a point). Keys: "
        "array (square array_rows = array_cols), array_rows, array_cols, sram_bytes, "
        "acc_bytes (sizes such as 256KiB), dram_bytes_per_cycle, clock_ghz, vector_lanes, "
        "dram_latency_cycles, dma_engines, launch_cycles, issue_cycles",
    )
    p.add_argument(
        "--hw",
        default=DEFAULT_HARDWARE,
        metavar="PRESET|FILE.toml",
        help=f"the hardware the sweeps vary (default {DEFAULT_HARDWARE})",
    )
    p.add_argument(
        "--rules", action="append", metavar="FILE_OR_DIR", help="rule files (default: rules/)"
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="price each point with the cost model instead of simulating it (much faster)",
    )
    p.add_argument(
        "--scheduler",
        metavar="local[:N]|ADDRESS",
        help="evaluate the points on a Dask cluster (the [dask] extra): local:N worker "
        "processes here, or a running scheduler's address",
    )
    p.add_argument("-o", "--output", metavar="OUT.csv|OUT.json", help="write every point here")
    p.add_argument(
        "--plot", metavar="PARETO.png", help="draw cycles against MACs with the Pareto front"
    )
    p.add_argument("--cache-dir", metavar="DIR", help="the compile cache (default: the user's)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated inputs")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_dim_flag(p)
    p.set_defaults(func=run)


def _sweep(text: str):
    try:
        return parse_sweep(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--sweep {text}: ")) from None


def run(args: argparse.Namespace) -> int:
    if args.output and Path(args.output).suffix not in (".csv", ".json"):
        raise UsageError(f"-o {args.output}: write .csv or .json")
    if args.plot:
        if Path(args.plot).suffix not in PLOT_FORMATS:
            raise UsageError(f"--plot {args.plot}: write one of {', '.join(PLOT_FORMATS)}")
        from eqsat.explore.plot import require_matplotlib

        require_matplotlib()
    base = load_hardware(args.hw)
    sweep = expand_sweeps(args.sweep)
    labels = [label for label, _ in sweep]
    hardware = [derive(base, c, "--sweep") for _, c in sweep]
    graph = load_model_from_args(args).graph
    rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])
    cache = cache_from_args(args)
    cache_dir = str(cache.directory) if cache is not None else None
    points = [None] * len(hardware)
    with dask_client(args.scheduler) as client, _progress(args.quiet, len(hardware)) as bar:
        if client is None:
            for i, (hw, c) in enumerate(zip(hardware, labels, strict=True)):
                points[i] = evaluate_point(
                    graph, rules, hw, c, args.estimate, cache_dir, seed=args.seed
                )
                bar(points[i])
        else:
            from distributed import as_completed

            futures = {
                client.submit(
                    evaluate_point,
                    graph,
                    rules,
                    hw,
                    c,
                    args.estimate,
                    cache_dir,
                    seed=args.seed,
                    pure=False,
                ): i
                for i, (hw, c) in enumerate(zip(hardware, labels, strict=True))
            }
            for fut in as_completed(futures):
                points[futures[fut]] = fut.result()
                bar(points[futures[fut]])
    front = pareto_front([(p.cycles, p.area_macs, p.area_sram_bytes) for p in points])
    print(format_points(points, front, base.name, graph.name))
    if args.output:
        write_atomic(args.output, points_text(points, front, Path(args.output).suffix))
        print(f"wrote {len(points)} points to {args.output}")
    if args.plot:
        from eqsat.explore.plot import plot_pareto

        plot_pareto(points, front, f"{graph.name} on variants of {base.name}", Path(args.plot))
        print(f"wrote the Pareto plot to {args.plot}")
    return 0


class _progress:
    """A rich progress bar on stderr (nothing with -q or when stderr is not a terminal
    rich can draw on)."""

    def __init__(self, quiet: bool, total: int):
        self.quiet, self.total, self.bar = quiet, total, None

    def __enter__(self):
        if not self.quiet:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("design points", total=self.total)
        return self.advance

    def advance(self, point) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def format_points(points, front, hw_name: str, model: str) -> str:
    what = "estimated" if points and points[0].estimated else "simulated"
    on = set(front)
    lines = [f"{model}: {len(points)} variants of {hw_name}, {what} cycles (* on the Pareto front)"]
    head = f"  {'':1} {'point':<40} {'cycles':>14} {'time':>10} {'MACs':>6} {'SRAM':>9} {'compile s':>9}"
    lines.append(head)
    for i, p in sorted(enumerate(points), key=lambda ip: ip[1].cycles):
        lines.append(
            f"  {'*' if i in on else ' '} {p.changes:<40} {p.cycles:>14,} "
            f"{p.seconds * 1e3:>8.3f}ms {p.area_macs:>6} {p.area_sram_bytes // 1024:>7}Ki "
            f"{p.compile_seconds:>8.2f}{'c' if p.cached else ' '}"
        )
    cached = sum(p.cached for p in points)
    if cached:
        lines.append(f"  ({cached} points from the cache, marked c)")
    return "\n".join(lines)


def points_text(points, front, suffix: str) -> str:
    on = set(front)
    rows = [{**asdict(p), "pareto": i in on} for i, p in enumerate(points)]
    if suffix == ".json":
        return json.dumps(rows, indent=2) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
