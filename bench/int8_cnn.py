"""Int8 through whole CNNs: per model and preset, the SQNR of the int8 program, float
and int8 cycles simulated (both optimized the same way), their ratio, the cost model's
estimate of the int8 program and its error against the simulator, and the int8 kernels
the program runs (qconv2d epilogue kernels, depthwise qconv2d, i8 max pooling).

Run: python bench/int8_cnn.py [--models resnet50_bottleneck] [--zoo resnet18,...]
     [--presets edge,datacenter] [--json OUT.json]

Inputs and calibration as bench/quant_accuracy.py (seeded standard normal inputs, the
zoo exports' own random weights). Targets (issue 12): on `edge` int8 at most 0.5x of
float, on `datacenter` never slower, every estimate within 10%, SQNR >= 35 dB.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quant_accuracy import sources  # noqa: E402

from eqsat.cli import build_parser  # noqa: E402
from eqsat.commands.compile import graph_for_target  # noqa: E402
from eqsat.config import Limits  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.program_cost import program_cost  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.weights import prepared_nodes  # noqa: E402
from hwsim import load_hardware  # noqa: E402


def simulated(graph, hw, bindings, params) -> int:
    from backend import compile_graph
    from hwsim import simulate

    compiled = compile_graph(graph, hw, dict(params) if params else None)
    feeds = {**bindings, **(params or {})}
    report = simulate(compiled.program, hw, compiled.feeds(feeds), check_races=False).report
    return int(report.cycles)


def int8_ops(graph) -> dict[str, int]:
    """The program's int8 kernels by op: integer products and convolutions (fused or
    not), and the other kernels that write i8 tensors (pooling, requantization)."""
    live = graph.live()
    prepared = prepared_nodes(graph)  # quantized weights: computed at load time
    found = Counter(
        n.op
        for i, n in graph
        if live[i]
        and i not in prepared
        and not n.is_leaf
        and (n.op.startswith(("qconv2d", "qmatmul")) or n.type.dtype.value == "i8")
    )
    return dict(sorted(found.items()))


def measure(path: Path, hw_name: str, time_limit: float) -> dict:
    hw = load_hardware(hw_name)
    argv = ["simulate", str(path), "--hw", hw_name, "--quantize", "int8", "-q"]
    args = build_parser().parse_args([*argv, "--time-limit", str(time_limit)])
    t0 = time.perf_counter()
    loaded = load_model(path, None)
    bindings = loaded.bindings(0)
    qgraph, _, result = graph_for_target(args, loaded.graph, bindings)
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    fgraph = optimize(loaded.graph, rules, hw, limits=Limits(time_limit=time_limit)).graph
    params = result.quant.all_params
    float_sim = simulated(fgraph, hw, bindings, None)
    int8_sim = simulated(qgraph, hw, bindings, params)
    int8_est = int(program_cost(qgraph, hw).cycles)
    sqnr = [v for v in result.quant.sqnr.values() if math.isfinite(v)]
    return {
        "model": path.stem.split("-")[0],
        "hw": hw_name,
        "min_sqnr_db": min(sqnr) if sqnr else None,
        "float_cycles": float_sim,
        "int8_cycles": int8_sim,
        "ratio": int8_sim / float_sim,
        "int8_estimate": int8_est,
        "estimate_error": int8_est / int8_sim - 1,
        "int8_ops": int8_ops(qgraph),
        "seconds": time.perf_counter() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models", default="resnet50_bottleneck", help="held-out models (bench/models)"
    )
    ap.add_argument("--zoo", default="resnet18,resnet50,mobilenet_v2", help="zoo exports")
    ap.add_argument("--presets", default="edge,datacenter")
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--json", metavar="OUT.json")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    zoo = [z for z in args.zoo.split(",") if z]
    rows = []
    print(
        f"{'model':20} {'hw':10} {'SQNR':>6} {'float sim.':>12} {'int8 sim.':>12} {'ratio':>6} "
        f"{'int8 est.':>12} {'est. err':>8} {'time':>6}  int8 kernels"
    )
    for path in sources(models, zoo):
        for hw_name in args.presets.split(","):
            r = measure(path, hw_name, args.time_limit)
            rows.append(r)
            ops = ", ".join(f"{k} {v}" for k, v in r["int8_ops"].items())
            db = math.inf if r["min_sqnr_db"] is None else r["min_sqnr_db"]  # all f32: inf
            print(
                f"{r['model']:20} {hw_name:10} {db:6.1f} {r['float_cycles']:12,d} "
                f"{r['int8_cycles']:12,d} {r['ratio']:6.3f} {r['int8_estimate']:12,d} "
                f"{r['estimate_error']:+8.1%} {r['seconds']:5.0f}s  {ops}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
