"""`eqsat profile`: where the cycles of a simulated run go, kernel by kernel."""

from __future__ import annotations

import argparse
import json
import sys

from eqsat.commands.compile import add_no_optimize_flag
from eqsat.commands.optimize import add_optimize_flags
from eqsat.commands.simulate import simulated_run
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag, seed
from eqsat.measured import explain_measured, parse_measured
from eqsat.profile import UNITS, KernelProfile, profile_run
from eqsat.summary import human_bytes, human_count, text_table
from eqsat.trace import trace_events


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="simulate and show where the cycles go, kernel by kernel",
        description=(
            "Compile MODEL (optimized unless --no-optimize) or read PROGRAM.asm, simulate it "
            "and show, per kernel (named op.statement after the model), its cycles and "
            "share of the run, FLOPs, DRAM bytes, arithmetic intensity, what bounds it "
            "(matrix or vector compute, memory, or overhead and latency), the share of its "
            "own roofline it reaches, and a hint where it is far from that bound. Figures "
            "come from the simulator's event record, not from the cost model."
        ),
    )
    p.add_argument("source", metavar="MODEL|PROGRAM.asm", help="a model file or hwsim assembly")
    add_dim_flag(p)
    add_optimize_flags(p)
    add_no_optimize_flag(p)
    p.add_argument("--inputs", metavar="FILE.npz", help="values of inputs/params, by name")
    p.add_argument("--seed", type=seed, default=0, help="seed for values not in --inputs")
    p.add_argument(
        "--trace",
        metavar="OUT.json",
        help="write a Chrome trace-event file (open it in Perfetto or chrome://tracing): "
        "a lane per engine, a slice per instruction, kernels as slices of their own lane",
    )
    p.add_argument("--json", metavar="OUT.json", help="write the per-kernel figures as JSON")
    p.add_argument(
        "--top", type=int, default=0, metavar="N", help="show only the N slowest kernels"
    )
    p.add_argument(
        "--measured",
        metavar="TIME",
        help="a runtime measured elsewhere (12.5ms, 800us, 0.3s or 41000cycles): say how far "
        "it is from the simulated one and which resource of the hardware file (DRAM "
        "bandwidth, compute rate, overheads) would have to be off, by how much, to explain it",
    )
    p.add_argument(
        "--clock",
        type=float,
        metavar="GHZ",
        help="clock of the measured machine, for --measured in seconds (default: the "
        "hardware file's clock_ghz)",
    )
    p.set_defaults(func=run, output=None, report=None, verify=False, verify_tol=None)


def profile_dict(hw, report, kernels: list[KernelProfile]) -> dict:
    total = report.cycles
    return {
        "hardware": hw.name,
        "cycles": total,
        "busy": {u: report.busy.get(u, 0) for u in UNITS},
        "kernels": [k.as_dict(total) for k in kernels],
    }


def _rows(d: dict, top: int) -> list[dict]:
    rows = d["kernels"]
    if top:
        rows = sorted(rows, key=lambda r: -r["cycles"])[:top]
    return rows


HEADER = ("kernel", "cycles", "share", "FLOPs", "DRAM", "FLOP/B", "bound", "of bound")


def _cells(r: dict) -> tuple[str, ...]:
    intensity = "-" if r["intensity"] is None else f"{r['intensity']:.1f}"
    return (
        r["name"],
        f"{r['cycles']:,}",
        f"{r['share']:.1%}",
        human_count(r["flops"]),
        human_bytes(r["dram_bytes"]),
        intensity,
        r["bound"],
        f"{r['roofline_share']:.0%}",
    )


def format_table(d: dict, top: int = 0) -> str:
    """Plain text: fixed-width columns, then the hints."""
    lines = text_table([HEADER, *(_cells(r) for r in _rows(d, top))], left=(0, 6))
    lines.append(_total_line(d))
    lines += _hint_lines(d, top)
    return "\n".join(lines)


def _total_line(d: dict) -> str:
    busy = ", ".join(f"{u} {v / d['cycles']:.0%}" for u, v in d["busy"].items() if d["cycles"])
    return f"total {d['cycles']:,} cycles on {d['hardware']}; units busy: {busy}"


def _hint_lines(d: dict, top: int) -> list[str]:
    out = [f"  {r['name']}: {h}" for r in _rows(d, top) for h in r["hints"]]
    return ["hints:", *out] if out else []


def print_rich(d: dict, top: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{d['hardware']}: {d['cycles']:,} cycles")
    for i, h in enumerate(HEADER):
        table.add_column(h, justify="left" if i in (0, 6) else "right")
    for r in _rows(d, top):
        table.add_row(*_cells(r))
    console = Console()
    console.print(table)
    console.print(_total_line(d))
    for line in _hint_lines(d, top):
        console.print(line, highlight=False)


def run(args: argparse.Namespace) -> int:
    if args.clock is not None and not args.clock > 0:
        raise UsageError(f"--clock must be a positive number of GHz, got {args.clock}")
    args.record = True
    hw, program, report, _outputs, _errors, _quant = simulated_run(args)
    kernels = profile_run(program, hw, report)
    d = profile_dict(hw, report, kernels)
    if args.trace:
        name = getattr(args, "source", "program")
        write_atomic(args.trace, json.dumps(trace_events(program, hw, report, kernels, name)))
    if args.json:
        write_atomic(args.json, json.dumps(d, indent=2) + "\n")
    if sys.stdout.isatty():
        try:
            print_rich(d, args.top)
        except ImportError:
            print(format_table(d, args.top))
    else:
        print(format_table(d, args.top))
    if args.measured:
        clock = args.clock or hw.clock_ghz
        try:
            measured = parse_measured(args.measured, clock)
        except ValueError as err:
            raise UsageError(f"--measured: {err}") from None
        for line in explain_measured(measured, report.cycles, kernels).lines():
            print(line)
    for what, path in (("trace", args.trace), ("profile", args.json)):
        if path:
            print(f"wrote {what} to {path}")
    return 0
