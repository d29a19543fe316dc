"""Mixed precision against uniform precision: for each model, every uniform precision
the hardware declares (cycles estimated by the cost model on the extracted program,
SQNR measured against the float model) and `--quantize auto --sqnr-min DB` (its
cycles, the SQNR it predicted and the SQNR measured), as `eqsat optimize` computes them.

Run: python bench/quant_auto.py [--zoo NAMES] [--models NAMES] [--hw edge,datacenter]
     [--sqnr-min 35] [--float] [--rules DIR] [--time-limit S] [--json OUT.json]

Zoo models are the cached ONNX exports (~/.cache/eqsat/zoo, bench/zoo.py builds them),
with their own random weights; inputs and calibration are seeded random, as `eqsat
optimize --quantize auto` without --calibrate. `--float` also optimizes the
unquantized model (the f32 column).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqsat.cli import build_parser  # noqa: E402
from eqsat.commands.optimize import optimize_from_args  # noqa: E402
from eqsat.loading import load_model  # noqa: E402

ZOO = ("bert_base", "gpt2", "vit_b16", "resnet18", "resnet50", "mobilenet_v2")
UNIFORM = ("int8", "fp8", "w8a16", "w4a16", "bf16")


def source(name: str) -> Path | None:
    if name.endswith(".model"):
        return Path(name)
    found = sorted((Path.home() / ".cache" / "eqsat" / "zoo").glob(f"{name}-*.onnx"))
    return found[0] if found else None


def worst(sqnr: dict) -> float:
    return min(sqnr.values(), default=math.inf)


def measure(
    path: Path, hw: str, sqnr_min: float, with_float: bool, rules: list[str], limit: float
) -> dict:
    """One row: the candidates auto priced (mixed and each uniform precision) and
    what it kept."""
    argv = ["optimize", str(path), "--hw", hw, "--quantize", "auto", "-q"]
    argv += [f for r in rules for f in ("--rules", r)] + ["--time-limit", str(limit)]
    args = build_parser().parse_args([*argv, "--sqnr-min", str(sqnr_min)])
    t0 = time.perf_counter()
    loaded = load_model(path)
    result, _ = optimize_from_args(args, loaded.graph, params=loaded.params)
    auto = result.quant.auto
    row = {
        "model": path.stem.split("-")[0],
        "hw": hw,
        "sqnr_min": sqnr_min,
        "uniform": {
            c.name: {"cycles": c.cycles, "sqnr_db": worst(c.sqnr)}
            for c in auto.candidates
            if c.name in UNIFORM
        },
        "mixed": next(
            (
                {"cycles": c.cycles, "sqnr_db": worst(c.sqnr), "predicted_db": worst(c.predicted)}
                for c in reversed(auto.candidates)  # the retried mix, if there is one
                if c.name.startswith("mixed")
            ),
            None,
        ),
        "kept": auto.chosen,
        "auto_cycles": int(result.after.cycles),
        "auto_predicted_db": worst(auto.predicted),
        "auto_measured_db": worst(result.quant.sqnr),
        "precisions": {p: sum(c.precision == p for c in auto.choices) for p in auto.precisions},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if with_float:
        fargv = ["optimize", str(path), "--hw", hw, "-q", *argv[6:]]
        fargs = build_parser().parse_args(fargv)
        row["float_cycles"] = int(optimize_from_args(fargs, loaded.graph)[0].after.cycles)
    return row


def finite(v):
    """JSON has no infinity: an exact SQNR is written as null."""
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [finite(x) for x in v]
    return None if isinstance(v, float) and not math.isfinite(v) else v


def fmt_db(v: float | None) -> str:
    return "inf" if v is None or not math.isfinite(v) else f"{v:.1f}"


def print_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="--quantize auto against uniform precision (est. cycles, dB)")
    table.add_column("model")
    table.add_column("hw")
    if any("float_cycles" in r for r in rows):
        table.add_column("f32", justify="right")
    for p in UNIFORM:
        table.add_column(p, justify="right")
    for col in ("best uniform >= budget", "mixed (pred / meas)", "auto kept", "auto / best"):
        table.add_column(col, justify="right")
    for r in rows:
        cells = [r["model"], r["hw"]]
        if "float_cycles" in r:
            cells.append(f"{r['float_cycles']:,}")
        feasible = []
        for p in UNIFORM:
            u = r["uniform"].get(p)
            if u is None or u["cycles"] is None:
                cells.append("-")
                continue
            ok = u["sqnr_db"] >= r["sqnr_min"]
            cells.append(f"{u['cycles']:,} ({fmt_db(u['sqnr_db'])}{'' if ok else ' x'})")
            if ok:
                feasible.append((u["cycles"], p))
        best = min(feasible, default=None)
        cells.append("f32" if best is None else f"{best[1]} {best[0]:,}")
        m = r["mixed"]
        cells.append(
            "-"
            if m is None
            else f"{m['cycles']:,} ({fmt_db(m['predicted_db'])} / {fmt_db(m['sqnr_db'])})"
        )
        cells.append(f"{r['kept']} {r['auto_cycles']:,} ({fmt_db(r['auto_measured_db'])})")
        ref = best[0] if best is not None else r.get("float_cycles")
        cells.append(f"{r['auto_cycles'] / ref:.3f}" if ref else "-")
        table.add_row(*cells)
    Console(width=200).print(table)
    print("x: misses the budget; cycles are the cost model's estimate of the extracted program")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=",".join(ZOO), help="zoo exports (comma-separated)")
    ap.add_argument("--models", default="", help="model files (comma-separated)")
    ap.add_argument("--hw", default="edge", help="presets (comma-separated)")
    ap.add_argument("--sqnr-min", type=float, default=35.0)
    ap.add_argument("--float", action="store_true", help="also optimize the f32 model")
    ap.add_argument("--json", metavar="OUT.json")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=600.0,
        metavar="S",
        help="each optimization's time limit (default 600: a loaded machine must not cut "
        "saturation short and change the figures)",
    )
    ap.add_argument(
        "--rules", action="append", default=[], metavar="DIR", help="rules (default: rules/)"
    )
    a = ap.parse_args()
    names = [n for n in a.zoo.split(",") if n] + [m for m in a.models.split(",") if m]
    rows = []
    for hw in a.hw.split(","):
        for name in names:
            path = source(name)
            if path is None:
                print(f"  ({name}: no cached export; run bench/zoo.py)", file=sys.stderr)
                continue
            print(f"  {name} on {hw} ...", file=sys.stderr, flush=True)
            rows.append(measure(path, hw, a.sqnr_min, a.float, a.rules, a.time_limit))
            print(f"    {json.dumps(finite(rows[-1]))}", file=sys.stderr, flush=True)
    print_table(rows)
    if a.json:
        Path(a.json).write_text(json.dumps(finite(rows), indent=2, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
