"""Time simulating the optimized BERT-base layer (sequence length 128) on both presets.

Run: /work/venv/bin/python bench/simulate_bert.py [--seq 128]
Target: under 20 s per preset (race checking on, as `eqsat simulate` runs it).
Prints optimize, compile and simulate times, the program size, cycles (optimized vs
as written), DRAM traffic and the DRAM footprint with and without liveness reuse.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend import compile_graph  # noqa: E402
from eqsat.interpreter import random_bindings  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.roofline import model_roofline  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from frontend import load_model  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402


def run(graph, hw, bindings) -> tuple[float, float, object, object]:
    t0 = time.perf_counter()
    compiled = compile_graph(graph, hw)
    t1 = time.perf_counter()
    report = simulate(compiled.program, hw, compiled.feeds(bindings)).report
    return t1 - t0, time.perf_counter() - t1, compiled, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()
    _, graph = load_model(ROOT / "examples" / "bert_layer.model", {"S": args.seq})
    bindings = random_bindings(graph, 0)
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    for hw_name in ("edge", "datacenter"):
        hw = load_hardware(hw_name)
        t = time.perf_counter()
        opt = optimize(graph, rules, hw).graph
        t_opt = time.perf_counter() - t
        tc, ts, compiled, rep = run(opt, hw, bindings)
        _, _, _, plain = run(graph, hw, bindings)
        fp = compiled.footprint
        roof = model_roofline(graph, hw)
        print(
            f"{hw_name}: optimize {t_opt:.2f} s, compile {tc:.2f} s, simulate {ts:.2f} s "
            f"({len(compiled.program.instrs):,} instructions, {len(compiled.kernels)} kernels)"
        )
        print(
            f"  cycles {rep.cycles:,} optimized vs {plain.cycles:,} as written "
            f"({rep.cycles / plain.cycles - 1:+.1%}); model roofline {roof.cycles:,} "
            f"({roof.fraction(rep.cycles):.0%} reached)"
        )
        print(
            f"  DRAM traffic {rep.dram_bytes / 2**20:.1f} MiB vs {plain.dram_bytes / 2**20:.1f} MiB; "
            f"footprint {fp.planned_bytes / 2**20:.1f} MiB planned vs "
            f"{fp.naive_bytes / 2**20:.1f} MiB one buffer per value"
        )


if __name__ == "__main__":
    main()
