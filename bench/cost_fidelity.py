"""How well the cost model (eqsat.costs, what extraction trusts) predicts the simulator.

Run: python bench/cost_fidelity.py [--zoo [NAMES]] [--zoo-int8] [--no-quant]
     [--presets P,..] [-v] [--json OUT.json]

For the examples (as written, optimized, and optimized after int8 quantization) and,
with --zoo, the model zoo's cached exports (bench/zoo.py builds them), on each preset:
- per kernel kind (matmul, conv, int8, normalize, pooling, attention, ...), the median
  and worst |model - sim| / sim over every node the backend lowers to kernels
  (eqsat/fidelity.py: a node's kernels include its prep and weight copies);
- per program, the estimate against the simulated cycles, and whether the optimized
  program simulates slower than the program as written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqsat.cli import build_parser  # noqa: E402
from eqsat.commands.compile import graph_for_target  # noqa: E402
from eqsat.config import DEFAULT_LIMITS, Limits  # noqa: E402
from eqsat.fidelity import ProgramRow, by_kind, measure_program  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware  # noqa: E402

ZOO = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "llama", "vit_b16")


def zoo_files(names) -> list[Path]:
    folder = Path.home() / ".cache" / "eqsat" / "zoo"
    out = []
    for name in names:
        found = sorted(folder.glob(f"{name}-*.onnx"))
        if not found:
            print(f"  ({name}: no cached export in {folder}; run bench/zoo.py)", file=sys.stderr)
            continue
        out.append(found[0])
    return out


def quantized(path: Path, preset: str, time_limit: float = DEFAULT_LIMITS.time_limit):
    """(graph, bindings, params) of the int8 program the CLI would simulate."""
    args = build_parser().parse_args(
        [
            *("simulate", str(path), "--hw", preset, "--quantize", "int8", "-q"),
            *("--time-limit", str(time_limit)),
        ]
    )
    loaded = load_model(path)
    bindings = loaded.bindings(0)
    graph, _, result = graph_for_target(args, loaded.graph, bindings)
    quant = result.quant
    return graph, bindings, {**quant.plan.params, **quant.all_params}


def programs(path: Path, preset: str, rules, quant: bool, limits: Limits = DEFAULT_LIMITS):
    """[(label, ProgramRow)] for one model on one preset."""
    hw = load_hardware(preset)
    loaded = load_model(path)
    graph, bindings = loaded.graph, loaded.bindings(0)
    written = measure_program(graph, hw, bindings)
    result = optimize(graph, rules, hw, limits=limits)
    if result.kept_original:
        stop = result.saturation.stop_reason
        print(
            f"  ({path.stem} on {preset}: input program kept; saturation: {stop})", file=sys.stderr
        )
    optimized = measure_program(result.graph, hw, bindings)
    out = [("as written", written), ("optimized", optimized)]
    if quant:
        qgraph, qbindings, params = quantized(path, preset, limits.time_limit)
        out.append(("int8", measure_program(qgraph, hw, qbindings, params)))
    return out


def print_preset(preset: str, entries: list[tuple[str, str, ProgramRow]], verbose: bool) -> None:
    rows = [k for _, _, p in entries for k in p.kernels]
    print(f"{preset}: {len(rows)} kernels")
    for s in by_kind(rows):
        w = s.worst
        print(
            f"  {s.kind:12s} n={s.count:4d}  median {s.median:6.1%}  worst {w.error:+7.1%} "
            f"({w.label}: model {w.predicted:,}, sim {w.simulated:,})"
        )
    print(f"  {'program':34s} {'estimate':>13s} {'simulated':>13s} {'error':>7s}")
    written = {}
    for model, label, p in entries:
        note = ""
        if label == "as written":
            written[model] = p.simulated
        elif label == "optimized" and p.simulated > written.get(model, p.simulated):
            note = f"  SLOWER than as written ({written[model]:,})"
        name = f"{model} ({label})"
        print(f"  {name:34s} {p.predicted:>13,} {p.simulated:>13,} {p.error:>+7.1%}{note}")
    if verbose:
        for r in sorted(rows, key=lambda r: -abs(r.error)):
            print(
                f"    {r.label:60s} model {r.predicted:>12,} sim {r.simulated:>12,} {r.error:+.1%}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--zoo",
        nargs="?",
        const=",".join(ZOO),
        default="",
        metavar="NAMES",
        help=f"also the zoo's cached exports (default all: {','.join(ZOO)})",
    )
    ap.add_argument("--no-examples", action="store_true", help="leave out examples/*.model")
    ap.add_argument("--no-quant", action="store_true", help="leave out the int8 programs")
    ap.add_argument(
        "--zoo-int8",
        action="store_true",
        help="the zoo's int8 programs too (slow and memory-hungry: calibration runs the "
        "reference interpreter on 4 random inputs)",
    )
    ap.add_argument("--presets", default="edge,datacenter", help="comma-separated presets")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        help="seconds the optimizer may take per model (default 300: on busy shared cores "
        "the CLI's 30 s can stop it early and keep the input, which measures nothing)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print every kernel")
    ap.add_argument("--json", metavar="OUT.json", help="write every row as JSON")
    args = ap.parse_args()
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    from eqsat.control.load import file_has_regions

    examples = [p for p in sorted((ROOT / "examples").glob("*.model")) if not file_has_regions(p)]
    sources = [] if args.no_examples else examples
    sources += zoo_files([n for n in args.zoo.split(",") if n])
    dump = {}
    for preset in args.presets.split(","):
        entries = []
        for path in sources:
            t = time.perf_counter()
            model = path.stem.split("-")[0]
            quant = not args.no_quant and (path.suffix == ".model" or args.zoo_int8)
            limits = replace(DEFAULT_LIMITS, time_limit=args.time_limit)
            for label, row in programs(path, preset, rules, quant, limits):
                entries.append((model, label, row))
            print(f"  {model} on {preset}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
        print_preset(preset, entries, args.verbose)
        dump[preset] = [
            {
                "model": m,
                "program": label,
                "predicted": p.predicted,
                "simulated": p.simulated,
                "kernels": [vars(k) | {"kind": k.kind} for k in p.kernels],
            }
            for m, label, p in entries
        ]
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1) + "\n")


if __name__ == "__main__":
    main()
