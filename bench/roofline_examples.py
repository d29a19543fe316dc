"""The bundled examples on the roofline of each preset: each optimized model as a
point (arithmetic intensity of the model, FLOPs per simulated cycle), the roofs of
the matrix unit for f32, bf16 and int8 and the DRAM slope. Needs the `[plot]` extra.

    python bench/roofline_examples.py bench/figures/roofline_examples.png

Prints the figures it plots.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqsat.batch_sweep import measure_point  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware  # noqa: E402


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "roofline_examples.png"
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    from eqsat.control.load import file_has_regions

    examples = [p for p in sorted((ROOT / "examples").glob("*.model")) if not file_has_regions(p)]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, preset in zip(axes, ("edge", "datacenter"), strict=True):
        hw = load_hardware(preset)
        xs = []
        print(f"{preset}: example, FLOP/byte, FLOP/cycle, share of the roof")
        for path in examples:
            graph = load_model(path, {}).graph
            p = measure_point(graph, 0, hw, rules)
            achieved = p.flops / p.simulated_cycles
            roof = min(2 * hw.macs_per_cycle["f32"], p.intensity * hw.dram_bytes_per_cycle)
            print(f"  {path.stem:<14} {p.intensity:9.1f} {achieved:10.1f} {achieved / roof:6.0%}")
            ax.plot(p.intensity, achieved, "o")
            ax.annotate(path.stem, (p.intensity, achieved), xytext=(4, 3),
                        textcoords="offset points", fontsize=8)  # fmt: skip
            xs.append(p.intensity)
        lo, hi = min(xs) / 4, max(xs) * 8
        for dtype, style in (("f32", "k-"), ("bf16", "k--"), ("i8", "k:")):
            peak = 2 * hw.macs_per_cycle[dtype]
            ridge = peak / hw.dram_bytes_per_cycle
            ax.plot([lo, ridge, hi], [lo * hw.dram_bytes_per_cycle, peak, peak], style,
                    lw=1, label=f"{dtype} peak {peak:,} FLOP/cycle")  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity of the model (FLOP/byte)",
               ylabel="FLOP per simulated cycle", title=f"examples on {preset}")  # fmt: skip
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
