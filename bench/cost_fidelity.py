"""How well the analytic cost model (eqsat.costs, used by extraction) predicts the
simulator, kernel by kernel, over the example models on both presets.

Run: /work/venv/bin/python bench/cost_fidelity.py [--no-optimize] [-v]

For every graph node that the backend lowers to kernels, the prediction of
eqsat.costs.op_cost is compared with the simulated cycles of the node's kernels (its
main kernel plus any layout kernel it needed, e.g. a convolution's NHWC prep).
Layout ops the backend turns into views (transpose, slice, ...) have no kernel and
are not compared. Prints the median and worst relative error |model - sim| / sim,
the Spearman rank correlation, and the median per op kind.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scipy.stats import spearmanr  # noqa: E402

from backend import compile_graph  # noqa: E402
from eqsat.costs import op_cost  # noqa: E402
from eqsat.interpreter import random_bindings  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from frontend import load_model  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402


def measure(graph, hw):
    """[(kernel label, op, kind, predicted, simulated)] for one graph on one machine."""
    compiled = compile_graph(graph, hw)
    result = simulate(
        compiled.program, hw, compiled.feeds(random_bindings(graph, 0)), check_races=False
    )
    spans = {k.name: k.cycles for k in result.report.kernels}
    sim: dict[int, int] = defaultdict(int)
    for k in compiled.kernels:
        if k.node >= 0:
            sim[k.node] += spans[k.name]
    rows = []
    for i, cycles in sim.items():
        node = graph.nodes[i]
        in_types = [graph.nodes[j].type for j in node.inputs]
        try:
            cost = op_cost(hw, node.op, in_types, node.type, node.attr_dict)
        except Exception as e:  # eqsat.costs cannot price this node
            print(f"  ({graph.name} {node.op}: eqsat.costs failed: {e})", file=sys.stderr)
            continue
        if cost is None:
            continue
        label = f"{graph.name}/{node.name or 'n' + str(i)}:{node.op}"
        rows.append((label, node.op, node.opdef.kind.value, cost.cycles, cycles))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-optimize", action="store_true", help="only the models as written")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every kernel")
    args = ap.parse_args()
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    for hw_name in ("edge", "datacenter"):
        hw = load_hardware(hw_name)
        rows = []
        for path in sorted((ROOT / "examples").glob("*.model")):
            _, graph = load_model(path)
            rows += measure(graph, hw)
            if not args.no_optimize:
                rows += measure(optimize(graph, rules, hw).graph, hw)
        errors = [abs(p - s) / s for _, _, _, p, s in rows]
        worst = max(range(len(rows)), key=lambda j: errors[j])
        rho = spearmanr([r[3] for r in rows], [r[4] for r in rows]).statistic
        print(
            f"{hw_name}: {len(rows)} kernels; median error {statistics.median(errors):.1%}, "
            f"worst {errors[worst]:.1%} ({rows[worst][0]}: model {rows[worst][3]:,}, "
            f"sim {rows[worst][4]:,}); Spearman {rho:.3f}"
        )
        kinds: dict[str, list[float]] = defaultdict(list)
        for (_, _, kind, _, _), e in zip(rows, errors, strict=True):
            kinds[kind].append(e)
        print(
            "  by kind: "
            + ", ".join(
                f"{k} {statistics.median(v):.1%} (n={len(v)})" for k, v in sorted(kinds.items())
            )
        )
        if args.verbose:
            for (label, _, _, p, s), e in sorted(
                zip(rows, errors, strict=True), key=lambda t: -t[1]
            ):
                print(f"    {label:50} model {p:>10,} sim {s:>10,} {e:+.1%}")


if __name__ == "__main__":
    main()
