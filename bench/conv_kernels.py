"""Every convolution of a model, optimized and simulated: the form it runs in
(eqsat.costs.conv_form), the cost model's price against the simulated cycles of its
kernels (prep included), and how close it comes to the matrix unit's peak; then the
program's cycles against the model roofline.

Run: python bench/conv_kernels.py MODEL [--hw PRESET] [--dim NAME=VALUE ...]
e.g. python bench/conv_kernels.py ~/.cache/eqsat/zoo/resnet50-*.onnx --hw datacenter --dim B=8
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend import compile_graph  # noqa: E402
from eqsat.costs import conv_form, kernel_work, op_cost  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.roofline import model_roofline  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--hw", default="datacenter")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    dims = {k: int(v) for k, v in (d.split("=") for d in args.dim)}
    loaded = load_model(args.model, dims or None)
    hw = load_hardware(args.hw)
    graph = optimize(loaded.graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph
    compiled = compile_graph(graph, hw)
    report = simulate(compiled.program, hw, compiled.feeds(loaded.bindings(0))).report
    spans = {k.name: k.cycles for k in report.kernels}
    sim: dict[int, int] = collections.defaultdict(int)
    for k in compiled.kernels:
        sim[k.node] += spans[k.name]
    rows = []
    for i, cycles in sim.items():
        node = graph.nodes[i]
        types = [graph.nodes[j].type for j in node.inputs]
        work = kernel_work(node.op, types, node.type, node.attr_dict)
        if work is None or work.kind != "conv":
            continue
        attrs = node.attr_dict
        form = conv_form(hw, node.op, types, node.type, attrs)
        if int(attrs.get("groups", 1)) > 1:  # type: ignore[call-overload]
            form = "grouped"
        model = op_cost(hw, node.op, types, node.type, attrs).cycles  # type: ignore[union-attr]
        peak = work.macs / hw.macs_per_cycle[work.dtype]
        rows.append((cycles, model, peak, form, types[0].shape, types[1].shape))
    rows.sort(key=lambda r: -r[0])
    print(f"{'simulated':>11} {'model':>11} {'error':>7} {'peak':>5}  form        x -> w")
    for cycles, model, peak, form, x, w in rows:
        print(
            f"{cycles:>11,} {model:>11,} {model / cycles - 1:>+7.1%} {peak / cycles:>5.0%}"
            f"  {form:10s}  {x} -> {w}"
        )
    bound = model_roofline(loaded.graph, hw).cycles
    print(
        f"program: {report.cycles:,} simulated cycles, model roofline {bound:,} "
        f"({bound / report.cycles:.1%})"
    )


if __name__ == "__main__":
    main()
