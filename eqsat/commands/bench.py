"""`eqsat bench`: wall-clock latency per inference on this machine, the model as written
next to eqsat's optimized program, on IREE, the reference interpreter or ONNX Runtime."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from eqsat.commands.common import bindings_from_args, load_model_from_args
from eqsat.commands.compile import add_no_optimize_flag
from eqsat.commands.optimize import add_optimize_flags, optimize_from_args
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag, seed, whole_number
from eqsat.wallclock import (
    Runner,
    interleaved,
    iree_runner,
    ort_runner,
    reference_runner,
    relative_error,
)

BACKENDS = ("iree", "reference", "onnxruntime")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="measure wall-clock latency per inference on this CPU",
        description=(
            "Time MODEL on this machine: for each --backend, the model as written and the "
            "program eqsat extracts for --hw (skip it with --no-optimize). iree: emitted as "
            "MLIR and compiled by IREE for this CPU (the [iree] extra); reference: the numpy "
            "interpreter; onnxruntime: ONNX Runtime on the .onnx file itself with all its "
            "graph optimizations (ONNX models only). The programs take turns, --warmup "
            "untimed calls each first; prints the median, best and worst of --repeat runs "
            "and each program's normwise relative error against the interpreter on the "
            "model as written."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model file (eqsat text format or .onnx)")
    add_dim_flag(p)
    add_optimize_flags(p)
    add_no_optimize_flag(p)
    p.add_argument(
        "--backend",
        type=_backends,
        default=("iree",),
        metavar="B[,B...]",
        help=f"where to run: {', '.join(BACKENDS)} (comma-separated; default iree)",
    )
    p.add_argument(
        "--repeat", type=whole_number(1, 100_000), default=20, metavar="N", help="timed runs (20)"
    )
    p.add_argument(
        "--warmup", type=whole_number(0, 100_000), default=2, metavar="N", help="untimed runs (2)"
    )
    p.add_argument("--inputs", metavar="FILE.npz", help="values of inputs/params, by name")
    p.add_argument(
        "--seed", type=seed, default=0, help="seed for values not in --inputs (default 0)"
    )
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON here")
    p.set_defaults(func=run)


def _backends(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(b.strip() for b in text.split(",") if b.strip()))
    unknown = [b for b in names if b not in BACKENDS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown backend '{', '.join(unknown) or text}': choose from {', '.join(BACKENDS)}"
        )
    return names


def _progress(message: str) -> None:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()


@dataclass
class Row:
    backend: str
    optimized: bool
    runner: Runner


def build_rows(args: argparse.Namespace, loaded, bindings) -> list[Row]:
    """The programs to time, each compiled or created once."""
    graph = loaded.graph
    if "onnxruntime" in args.backend and loaded.onnx is None:
        raise UsageError(
            f"--backend onnxruntime runs the ONNX file itself; {args.model} is not an .onnx model"
        )
    optimized = feeds = consts = None
    if not args.no_optimize and set(args.backend) & {"iree", "reference"}:
        result, hw = optimize_from_args(args, graph, bindings=bindings, params=loaded.params)
        optimized, quant = result.graph, result.quant
        feeds = {**bindings, **quant.plan.params} if quant else bindings
        consts = quant.all_params if quant else None
        what = f"eqsat-optimized ({hw.name}{', ' + args.quantize if quant else ''})"
    rows = []
    for backend in args.backend:
        if backend == "onnxruntime":
            _progress("creating the ONNX Runtime session")
            names = {io.onnx_name: io.name for io in loaded.onnx.inputs}
            label = "ONNX Runtime (ORT_ENABLE_ALL)"
            rows.append(Row(backend, False, ort_runner(args.model, names, bindings, label)))
            continue
        if backend == "iree":
            _progress("compiling the model as written with IREE")
            rows.append(Row(backend, False, iree_runner(graph, bindings, "IREE, as written")))
            if optimized is not None:
                _progress("compiling the optimized program with IREE")
                runner = iree_runner(optimized, feeds, f"IREE, {what}", consts)
                rows.append(Row(backend, True, runner))
        else:
            written = reference_runner(graph, bindings, "interpreter, as written")
            rows.append(Row(backend, False, written))
            if optimized is not None:
                runner = reference_runner(optimized, feeds, f"interpreter, {what}")
                rows.append(Row(backend, True, runner))
    return rows


def run(args: argparse.Namespace) -> int:
    if args.no_optimize and getattr(args, "quantize", None):
        raise UsageError("--quantize works through the optimizer; drop --no-optimize")
    loaded = load_model_from_args(args)
    bindings = bindings_from_args(args, loaded)
    rows = build_rows(args, loaded, bindings)
    runners = [row.runner for row in rows]
    reference = next((r for r in rows if r.backend == "reference" and not r.optimized), None)
    want = (reference.runner if reference else reference_runner(loaded.graph, bindings, "")).outputs
    want_onnx = loaded.onnx.results(want) if loaded.onnx is not None else want
    errors = {}
    for row in rows:
        ref = want_onnx if row.backend == "onnxruntime" else want
        got = row.runner.outputs
        errors[row.runner.label] = max(
            (relative_error(got[k], ref[k]) for k in ref if k in got), default=0.0
        )
    _progress(f"timing {len(rows)} programs: {args.warmup} warm-up and {args.repeat} runs each")

    def round_done(i: int) -> None:
        sys.stderr.write(f"\r  round {i}/{args.repeat}" + ("\n" if i == args.repeat else ""))
        sys.stderr.flush()

    timing = interleaved({r.label: r.call for r in runners}, args.repeat, args.warmup, round_done)
    width = max(len(r.label) for r in runners)
    print(
        f"{loaded.graph.name}: wall time per inference on this CPU, {args.repeat} runs each "
        f"taking turns after {args.warmup} warm-up"
    )
    print(
        f"  {'program':{width}s} {'setup s':>8s} {'median ms':>10s} {'best ms':>9s} "
        f"{'worst ms':>9s}  rel. error"
    )
    for r in runners:
        t = timing[r.label]
        print(
            f"  {r.label:{width}s} {r.setup_seconds:8.2f} {t.median * 1e3:10.2f} "
            f"{t.best * 1e3:9.2f} {t.worst * 1e3:9.2f}  {errors[r.label]:.1e}"
        )
    speedups = {}
    for opt in (row for row in rows if row.optimized):
        written = next(r for r in rows if r.backend == opt.backend and not r.optimized)
        speedups[opt.backend] = (
            timing[written.runner.label].median / timing[opt.runner.label].median
        )
        print(
            f"  {opt.backend}: the eqsat-optimized program runs at "
            f"{speedups[opt.backend]:.2f}x the speed of the model as written (median)"
        )
    if args.json:
        programs = [
            {
                "label": r.label,
                "setup_seconds": r.setup_seconds,
                "median_seconds": timing[r.label].median,
                "best_seconds": timing[r.label].best,
                "worst_seconds": timing[r.label].worst,
                "relative_error": errors[r.label],
            }
            for r in runners
        ]
        report = {
            "model": loaded.graph.name,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "programs": programs,
            "speedup_over_as_written": speedups,
        }
        write_atomic(args.json, json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
