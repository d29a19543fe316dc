"""Import + optimize time of real transformers from ONNX: 12-layer BERT-base (target
under 15 s on 2 cores) and GPT-2 small (under 20 s), sequence length 128, `edge`.

Run: python bench/import_speed.py [--repeat 3]   (needs the [zoo] extra to export the
models once; later runs read bench/zoo.py's cache)
Prints, per model, the wall time of reading + importing + checking + folding the ONNX
file, of optimizing (saturation and extraction), and their sum (best of --repeat).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eqsat.loading import load_model
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import load_hardware

TARGETS = {"bert_base": 15.0, "gpt2": 20.0}


def main() -> None:
    from zoo import cache_dir, export
    from zoo_models import ZOO

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    hw = load_hardware("edge")
    for name, target in TARGETS.items():
        path = export(ZOO[name](False), cache_dir())
        best = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            graph = load_model(path, {"B": 1, "S": 128}).graph
            t1 = time.perf_counter()
            rules = compile_rule_paths([DEFAULT_RULES_DIR])
            result = optimize(graph, rules, hw)
            t2 = time.perf_counter()
            run = (t1 - t0, t2 - t1, t2 - t0)
            best = run if best is None or run[2] < best[2] else best
        imp, opt, total = best
        verdict = "ok" if total < target else "OVER"
        print(
            f"{name}: import {imp:.2f} s + optimize {opt:.2f} s = {total:.2f} s "
            f"(target {target:g} s: {verdict}); {len(graph.nodes)} nodes, "
            f"{result.egraph_nodes:,} e-nodes, est. cycles {result.before.cycles:,} -> "
            f"{result.after.cycles:,}"
        )


if __name__ == "__main__":
    main()
