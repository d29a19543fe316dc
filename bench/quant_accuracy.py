"""Int8 accuracy and speed: SQNR of every output against the float model, and the
simulated cycles of the int8 program against the float program optimized the same way.

Run: python bench/quant_accuracy.py [--models NAMES] [--zoo [NAMES]] [--dim K=V ...]
     [--hw edge] [--estimate] [--json OUT.json] [-- QUANT FLAGS]

Models: the held-out blocks in bench/models/ (a SwiGLU feed-forward with LLaMA-7B
shapes, a GPT-2 block, a ResNet-50 bottleneck, an RMSNorm decoder block) and, with
--zoo, the model zoo's cached ONNX exports (~/.cache/eqsat/zoo; bench/zoo.py builds
them). Anything after `--` goes to the quantizer as on the command line
(`-- --calibration mse --smooth-alpha 0.5`; `-- --sqnr-min 35`: the int8 accuracy floor,
which may keep layer groups in a higher precision, counted in the row). Inputs are seeded standard normal, the
weights the model's seeded params (the zoo's random-weight exports carry their own);
calibration sees 4 other seeded inputs, as `eqsat simulate --quantize int8` does.
`--estimate` prices the programs with the cost model instead of simulating them
(quicker on the big zoo models; the model is within a few % of the simulator,
bench/cost_fidelity.py).
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
from eqsat.commands.compile import graph_for_target  # noqa: E402
from eqsat.config import Limits  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.program_cost import program_cost  # noqa: E402
from eqsat.quant.run import int8_kernels  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware  # noqa: E402

HELD_OUT = ("swiglu_7b", "gpt2_block", "resnet50_bottleneck", "rmsnorm_block")
ZOO = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "vit_b16", "llama")


def sources(models: list[str], zoo: list[str]) -> list[Path]:
    out = [ROOT / "bench" / "models" / f"{m}.model" for m in models]
    folder = Path.home() / ".cache" / "eqsat" / "zoo"
    for name in zoo:
        found = sorted(folder.glob(f"{name}-*.onnx"))
        if not found:
            print(f"  ({name}: no cached export in {folder}; run bench/zoo.py)", file=sys.stderr)
            continue
        out.append(found[0])
    return out


def cycles(graph, hw, bindings, params, estimate: bool) -> int:
    """Simulated cycles of `graph` (or the cost model's estimate)."""
    if estimate:
        return int(program_cost(graph, hw).cycles)
    from backend import compile_graph
    from hwsim import simulate

    compiled = compile_graph(graph, hw, dict(params) if params else None)
    feeds = {**bindings, **(params or {})}
    result = simulate(compiled.program, hw, compiled.feeds(feeds), check_races=False)
    return int(result.report.cycles)


def measure(
    path: Path,
    hw_name: str,
    dims: list[str],
    quant_flags: list[str],
    estimate: bool,
    time_limit: float,
):
    """One row: per-output SQNR, float and int8 cycles, times."""
    hw = load_hardware(hw_name)
    dim_flags = [f for d in dims for f in ("--dim", d)]
    argv = ["simulate", str(path), "--hw", hw_name, "--quantize", "int8", "-q"]
    argv += ["--time-limit", str(time_limit)]
    args = build_parser().parse_args(argv + dim_flags + quant_flags)
    dim_values = {k: int(v) for k, v in (d.split("=") for d in dims)}
    t0 = time.perf_counter()
    loaded = load_model(path, dim_values or None)
    bindings = loaded.bindings(0)
    t1 = time.perf_counter()
    qgraph, _, result = graph_for_target(args, loaded.graph, bindings)
    t2 = time.perf_counter()
    quant = result.quant
    limits = Limits(time_limit=time_limit)
    float_graph = optimize(
        loaded.graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw, limits=limits
    ).graph
    float_cycles = cycles(float_graph, hw, bindings, None, estimate)
    int8_cycles = cycles(qgraph, hw, bindings, quant.all_params, estimate)
    return {
        "model": path.stem.split("-")[0],
        "sqnr_db": {k: (v if math.isfinite(v) else None) for k, v in quant.sqnr.items()},
        "layers": len(quant.plan.layers),
        "int8_kernels": int8_kernels(qgraph),
        "rotated": [r.label for r in quant.plan.rotations if r.chosen],  # --rotate
        # --sqnr-min: the layer groups the accuracy floor kept out of int8, by precision
        "kept": {
            p: sum(c.precision == p for c in quant.floor.kept)
            for p in sorted({c.precision for c in quant.floor.kept})
        }
        if quant.floor is not None
        else {},
        "groups": len(quant.floor.choices) if quant.floor is not None else None,
        "float_cycles": float_cycles,
        "int8_cycles": int8_cycles,
        "ratio": int8_cycles / float_cycles,
        "load_s": t1 - t0,
        "quantize_s": t2 - t1,
        "total_s": time.perf_counter() - t0,
    }


def main() -> int:
    argv = sys.argv[1:]
    quant_flags = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(HELD_OUT), help="held-out models (bench/models)")
    ap.add_argument(
        "--zoo", nargs="?", const=",".join(ZOO), default="", metavar="NAMES", help="zoo exports"
    )
    ap.add_argument("--dim", action="append", default=[], metavar="K=V", help="dimension override")
    ap.add_argument("--hw", default="edge")
    ap.add_argument("--estimate", action="store_true", help="cost-model cycles, no simulation")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=600.0,
        help="optimizer wall-time limit (default 600 s: the 30 s default can cut extraction "
        "short on a loaded machine, which keeps the float input)",
    )
    ap.add_argument("--min-db", type=float, default=35.0, help="the SQNR target (default 35)")
    ap.add_argument("--json", metavar="OUT.json")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    rows = []
    kind = "est." if args.estimate else "sim."
    print(f"int8 vs float on {args.hw} {' '.join(quant_flags)}")
    print(
        f"{'model':22} {'min SQNR':>9} {'layers':>6} {'float ' + kind:>14} "
        f"{'int8 ' + kind:>14} {'ratio':>6} {'time':>7}  outputs"
    )
    for path in sources(models, [z for z in args.zoo.split(",") if z]):
        row = measure(path, args.hw, args.dim, quant_flags, args.estimate, args.time_limit)
        rows.append(row)
        finite = [v for v in row["sqnr_db"].values() if v is not None]
        worst = min(finite) if finite else math.inf
        flag = "" if worst >= args.min_db and row["ratio"] <= 0.5 else "  <-- misses"
        outs = ", ".join(
            f"{k} {'inf' if v is None else f'{v:.1f}'}" for k, v in row["sqnr_db"].items()
        )
        if row["kept"]:
            kept = ", ".join(f"{n} {p}" for p, n in row["kept"].items())
            outs += f" (kept out of int8: {kept} of {row['groups']} groups)"
        print(
            f"{row['model']:22} {worst:8.1f}  {row['layers']:6d} {row['float_cycles']:14,d} "
            f"{row['int8_cycles']:14,d} {row['ratio']:6.3f} {row['total_s']:6.1f}s  {outs}{flag}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
