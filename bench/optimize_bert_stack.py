"""Benchmark: `eqsat optimize` on the BERT-base layer stacked 1, 2, 4, 8 and 12 times.

Prints, per depth: optimize time (saturation, extraction, total), e-graph size, stop
reason, and estimated cycles before/after on the chosen hardware. The target is 12
layers in under 10 s on a 2-core machine, with time growing no faster than linearly.

    python bench/optimize_bert_stack.py [--hw edge|datacenter] [--depths 1 2 4 8 12]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model
from hwsim.hardware import load_hardware

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks import stacked as stack_layers

LAYER = Path(__file__).resolve().parents[1] / "examples" / "bert_layer.model"


def stacked(depth: int):
    """`depth` BERT layers, each with its own weights (bench/blocks.py stacks any layer)."""
    return stack_layers(LAYER, depth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hw", default="edge")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    args = parser.parse_args()
    hw = load_hardware(args.hw)
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    print(f"BERT-base layers stacked, hardware {hw.name}, {len(rules.names)} rewrites")
    header = f"{'layers':>6} {'ops':>5} {'e-nodes':>8} {'rounds':>6} {'stop':>10} {'saturate s':>10} {'extract s':>9} {'total s':>8} {'s/layer':>7} {'cycles -%':>9}"
    print(header)
    for depth in args.depths:
        graph = check_model(stacked(depth))
        t0 = time.perf_counter()
        result = optimize(graph, rules, hw)
        total = time.perf_counter() - t0
        sat = result.saturation
        saving = 100 * (1 - result.after.cycles / result.before.cycles)
        ops = sum(1 for n in graph.nodes if not n.is_leaf)
        print(
            f"{depth:>6} {ops:>5} {result.egraph_nodes:>8,} {len(sat.iterations):>6} "
            f"{sat.stop_reason:>10} {result.times['saturate']:>10.2f} {result.times['extract']:>9.2f} "
            f"{total:>8.2f} {total / depth:>7.2f} {saving:>9.1f}"
        )


if __name__ == "__main__":
    main()
