"""int8 programs: the cost model's estimate against simulated cycles, and int8 vs float.

Run: python bench/int8_fidelity.py [--presets datacenter,edge] [--no-examples]
     [--onnx resnet18,bert_base] [--formats qdq,qoperator,dynamic] [-v]

- eqsat's own quantization (`--quantize int8`, as `eqsat simulate` runs it) of
  examples/mlp, bert_layer, resnet_block, swiglu and bench/models/resnet50_bottleneck:
  the optimized float program and the int8 one, estimate (eqsat.costs, what extraction
  trusts) against simulated cycles, and int8 / float simulated;
- with --onnx, the zoo's models quantized by ONNX Runtime (bench/onnx_quantized_models.py
  makes and caches them) as written and optimized, next to the float export optimized.
-v prints the five kernels furthest off per program (eqsat/fidelity.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cost_fidelity import programs  # noqa: E402

from eqsat.fidelity import ProgramRow, measure_program  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware  # noqa: E402

EXAMPLES = [
    ROOT / "examples" / f"{n}.model" for n in ("mlp", "bert_layer", "resnet_block", "swiglu")
]
EXAMPLES.append(ROOT / "bench" / "models" / "resnet50_bottleneck.model")


def _row(label: str, p: ProgramRow, verbose: bool, note: str = "") -> None:
    print(f"  {label:40s} {p.predicted:>12,} {p.simulated:>12,} {p.error:>+7.1%}{note}")
    if verbose:
        for k in sorted(p.kernels, key=lambda r: -abs(r.predicted - r.simulated))[:5]:
            print(f"      {k.label:58s} {k.predicted:>10,} {k.simulated:>10,} {k.error:+.1%}")


def examples(preset: str, rules, verbose: bool) -> None:
    for path in EXAMPLES:
        rows = dict(programs(path, preset, rules, True))
        flt, q = rows["optimized"], rows["int8"]
        _row(f"{path.stem} (float, optimized)", flt, verbose)
        _row(f"{path.stem} (int8)", q, verbose, f"   int8/float {q.simulated / flt.simulated:.2f}")


def onnx_models(preset: str, rules, names: list[str], formats: list[str], verbose: bool) -> None:
    from onnx_quantized_models import DIMS, quantized_files, source_file

    hw = load_hardware(preset)
    for name in names:
        files = {"float": source_file(name), **quantized_files(name)}
        base = None
        for fmt in ["float", *formats]:
            loaded = load_model(files[fmt], DIMS.get(name, {}))
            bindings = loaded.bindings(0)
            labels = ("optimized",) if fmt == "float" else ("written", "optimized")
            for label in labels:
                graph = loaded.graph
                if label == "optimized":
                    graph = optimize(graph, rules, hw).graph
                p = measure_program(graph, hw, bindings)
                note = ""
                if fmt == "float":
                    base = p.simulated
                elif base:
                    note = f"   /float {p.simulated / base:.2f}"
                _row(f"{name} {fmt} ({label})", p, verbose, note)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="datacenter,edge")
    ap.add_argument("--no-examples", action="store_true")
    ap.add_argument("--onnx", default="", help="zoo models quantized by ORT, e.g. resnet18")
    ap.add_argument("--formats", default="qdq,qoperator,dynamic")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    for preset in args.presets.split(","):
        t = time.perf_counter()
        print(f"{preset}:  {'program':38s} {'estimate':>12s} {'simulated':>12s} {'error':>7s}")
        if not args.no_examples:
            examples(preset, rules, args.verbose)
        names = [n for n in args.onnx.split(",") if n]
        if names:
            onnx_models(preset, rules, names, args.formats.split(","), args.verbose)
        print(f"  ({time.perf_counter() - t:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
