"""`eqsat roofline`: the model against the hardware's roofline, over a sweep of one
dimension, with the value to serve at."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from eqsat.batch_sweep import choose, parse_sweep, ridge_point, sweep
from eqsat.commands.common import load_model_from_args
from eqsat.commands.compile import add_no_optimize_flag
from eqsat.commands.optimize import add_optimize_flags
from eqsat.config import limits_from_args
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag
from eqsat.loading import load_model
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.summary import human_bytes, human_count, text_table
from hwsim import load_hardware


def _sweep_flag(text: str) -> tuple[str, list[int]]:
    try:
        return parse_sweep(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "roofline",
        help="the model against the hardware's roofline, over a batch-size sweep",
        description=(
            "For each value of a swept dimension (--sweep B=1,2,4,...; default: the model's "
            "own dims): FLOPs, DRAM bytes, compute and memory time at peak, the bound, the "
            "cost model's expected cycles, the simulated cycles (unless --no-simulate), the "
            "memory needed (weights, inputs, outputs and live activations) and whether it "
            "fits the device; the hardware's ridge point; and the value to serve at: the "
            "smallest compute-bound one that fits the memory."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="a model file (or .onnx)")
    add_dim_flag(p)
    add_optimize_flags(p)
    add_no_optimize_flag(p)
    p.add_argument(
        "--sweep", type=_sweep_flag, metavar="NAME=V1,V2,...", help="the dimension to sweep"
    )
    p.add_argument("--no-simulate", action="store_true", help="model and estimate only (fast)")
    p.add_argument(
        "--plot", metavar="OUT.png|svg", help="draw the roofline and the sweep (needs [plot])"
    )
    p.add_argument("--json", metavar="OUT.json", help="write the table as JSON")
    p.set_defaults(func=run)


def format_table(d: dict) -> str:
    dim = d["dim"]
    head = (
        dim,
        "GFLOP",
        "DRAM",
        "FLOP/B",
        "bound",
        "roofline",
        "expected",
        "simulated",
        "memory",
        "fits",
    )
    rows = [head]
    for p in d["points"]:
        sim = "-" if p["simulated_cycles"] is None else f"{p['simulated_cycles']:,}"
        fits = {True: "yes", False: "NO", None: "?"}[p["fits"]]
        rows.append((
            str(p["value"]), f"{p['flops'] / 1e9:.3g}", human_bytes(p["dram_bytes"]),
            f"{p['intensity']:.1f}", p["bound"], f"{p['roofline_cycles']:,}",
            f"{p['expected_cycles']:,}", sim, human_bytes(p["memory_bytes"]), fits,
        ))  # fmt: skip
    lines = text_table(rows)
    lines.append(
        f"ridge point of {d['hardware']} ({d['dtype']}): {d['ridge']:.1f} FLOP/byte; "
        f"device memory {human_bytes(d['capacity']) if d['capacity'] else 'not given'}"
    )
    c = d["chosen"]
    if c is None:
        lines.append(f"serve at: none ({d['reason']})")
    else:
        lines.append(
            f"serve at {dim}={c['value']}: {d['reason']}; latency {c['latency_s'] * 1e3:.3g} ms, "
            f"{human_count(c['throughput_per_s'])} items/s"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.plot:  # before the sweep's minutes, not after
        from eqsat.roofline_plot import require_matplotlib

        require_matplotlib()
    hw = load_hardware(args.hw)
    loaded = load_model_from_args(args)
    base_dims = dict(args.dim)
    if args.sweep:
        dim, values = args.sweep
        if dim not in loaded.graph.dims:
            known = ", ".join(sorted(loaded.graph.dims)) or "none"
            raise UsageError(
                f"--sweep {dim}: the model has no dimension '{dim}' (its dimensions: {known})"
            )
    else:
        dim, values = "", [0]
    limits = limits_from_args(args)
    rules = None if args.no_optimize else compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])

    def bind(v: int):
        if not dim:
            return loaded.graph
        return load_model(args.model, {**base_dims, dim: v}).graph

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"roofline {dim}: {msg}" if dim else "roofline", file=sys.stderr, flush=True)

    points = sweep(bind, values, hw, rules, limits, not args.no_simulate, say)
    chosen, reason = choose(points)
    dtype = points[0].dtype
    d = {
        "model": loaded.graph.name,
        "hardware": hw.name,
        "dim": dim or "-",
        "dtype": dtype,
        "ridge": ridge_point(hw, dtype),
        "capacity": hw.dram_capacity_bytes,
        "points": [p.as_dict(hw) for p in points],
        "chosen": None if chosen is None else chosen.as_dict(hw),
        "reason": reason,
        "kernel_bounds": dict(Counter(k.bound for k in (chosen.kernels if chosen else []))),
    }
    if args.plot:
        from eqsat.roofline_plot import plot_sweep

        plot_sweep(
            args.plot, points, chosen, hw, dim or "-", dtype, f"{loaded.graph.name} on {hw.name}"
        )
    if args.json:
        write_atomic(args.json, json.dumps(d, indent=2) + "\n")
    print(format_table(d))
    for what, path in (("plot", args.plot), ("table", args.json)):
        if path:
            print(f"wrote {what} to {path}")
    return 0
