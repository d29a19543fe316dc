"""Benchmark: one compile for a range of sequence lengths (bundles, eqsat/bundle).

Compiles a model once for S in LO..HI by buckets (all buckets in one e-graph), writes the
bundle, then dispatches a few lengths: bucket chosen, simulated cycles, the padding
overhead (estimated as `eqsat simulate BUNDLE` reports it and, with --exact, measured
against an exact-shape compile of that length), and the error against the reference
interpreter on the model at that length. The held-out check: a GPT-2 block compiled for
S in 1..256 runs at S=100 within 1e-3 of the reference.

    python bench/buckets.py                                   # GPT-2 block, S=1..256
    python bench/buckets.py --exact --separate                # + measured overhead, 4 compiles
    python bench/buckets.py --auto 4                          # + buckets chosen by the DP
    python bench/buckets.py --model examples/bert_layer.model --range 1..512 \\
        --buckets 64,128,256,512 --at 1,100,300,512
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from eqsat.bundle import (  # noqa: E402
    DimRange,
    ModelSource,
    choose_buckets,
    compile_bundle,
    default_buckets,
    load_bundle,
    read_lengths,
    run_bundle,
    save_bundle,
)
from eqsat.bundle.build import padded_bucket  # noqa: E402
from eqsat.bundle.choose import expected_cycles  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.program_cost import program_cost  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.summary import human_bytes  # noqa: E402
from hwsim.hardware import load_hardware  # noqa: E402

HELD_OUT_TOL = 1e-3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "bench" / "models" / "gpt2_block.model"))
    ap.add_argument("--dim", default="S")
    ap.add_argument("--range", default="1..256", help="LO..HI of the dimension")
    ap.add_argument("--buckets", default="32,64,128,256")
    ap.add_argument("--at", default="1,37,100,129,200,256", help="lengths to dispatch")
    ap.add_argument("--hw", default="edge")
    ap.add_argument("--exact", action="store_true", help="measure overhead vs exact compiles")
    ap.add_argument("--separate", action="store_true", help="also time one optimization per bucket")
    ap.add_argument(
        "--auto",
        type=int,
        metavar="K",
        help="also choose K buckets for a length distribution (--lengths, else 2,000 "
        "seeded lognormal lengths) and compare expected est. cycles with --buckets",
    )
    ap.add_argument("--lengths", help="a lengths file for --auto")
    args = ap.parse_args()
    lo, hi = (int(v) for v in args.range.split(".."))
    dim = DimRange(args.dim, lo, hi)
    buckets = [int(b) for b in args.buckets.split(",")]
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    if args.auto:
        auto_buckets(args, dim, buckets)

    t, cpu = time.perf_counter(), time.process_time()
    bundle = compile_bundle(args.model, dim, buckets, args.hw, rules=rules)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    s = bundle.stats
    print(f"{bundle.name} on {args.hw}: {dim}, buckets {', '.join(map(str, buckets))}")
    print(
        f"compile: {seconds:.1f} s ({cpu:.1f} s CPU) for all buckets (one e-graph of "
        f"{s['egraph_nodes']:,} "
        f"e-nodes, {s['rounds']} rounds, {s['stop']}; optimization {s['optimize_seconds']:.1f} s, "
        f"{s['optimize_cpu_seconds']:.1f} s CPU)"
    )
    if args.separate:
        hw = load_hardware(args.hw)
        source = ModelSource.from_file(args.model)
        t, cpu = time.perf_counter(), time.process_time()
        for b in buckets:
            optimize(padded_bucket(source, args.dim, b).graph, rules, hw)
        print(
            f"         {time.perf_counter() - t:.1f} s ({time.process_time() - cpu:.1f} s CPU) "
            "to optimize the buckets one by one"
        )
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bundle.eqsb"
        t = time.perf_counter()
        size = save_bundle(bundle, path)
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        bundle = load_bundle(path)
        load_s = time.perf_counter() - t
    print(f"bundle: {human_bytes(size)} (written in {write_s:.2f} s, read in {load_s:.2f} s)")
    for b in bundle.buckets:
        print(f"  bucket {b:>5}: est. {bundle.programs[b].est_cycles:>14,} cycles")

    header = f"{'S':>5} {'bucket':>6} {'cycles':>14} {'est. overhead':>16}"
    if args.exact:
        header += f" {'exact cycles':>14} {'measured ovh.':>14}"
    print(header + f" {'max abs err':>12} {'max rel err':>12}")
    held_out = None
    for n in (int(v) for v in args.at.split(",")):
        run = run_bundle(bundle, {args.dim: n}, verify=True, exact=args.exact)
        frac = run.overhead_cycles / run.cycles if run.cycles else 0.0
        line = f"{n:>5} {run.bucket:>6} {run.cycles:>14,} {run.overhead_cycles:>10,} {frac:>5.1%}"
        if args.exact:
            line += f" {run.exact_cycles:>14,} {run.measured_overhead_cycles:>14,}"
        print(line + f" {run.errors[0]:>12.3g} {run.errors[1]:>12.3g}")
        if n == 100:
            held_out = run.errors[1]
    if held_out is not None:
        ok = held_out <= HELD_OUT_TOL
        print(
            f"held-out check ({args.dim}=100 within {HELD_OUT_TOL:g} of the reference): "
            f"{'PASS' if ok else 'FAIL'} (max rel error {held_out:.3g})"
        )
        return 0 if ok else 1
    return 0


def auto_buckets(args, dim: DimRange, buckets: list[int]) -> None:
    """The DP's choice against the given buckets and powers of two, in expected
    estimated cycles per request (the cost model on the model as written)."""
    source = ModelSource.from_file(args.model)
    hw = load_hardware(args.hw)
    if args.lengths:
        counts = read_lengths(args.lengths)
        what = args.lengths
    else:
        rng = np.random.default_rng(0)
        mu = np.log(max(dim.hi / 4, 1))
        drawn = np.clip(rng.lognormal(mu, 0.6, 2000).astype(int), dim.lo, dim.hi)
        values, freq = np.unique(drawn, return_counts=True)
        counts = {int(v): int(c) for v, c in zip(values, freq, strict=True)}
        what = f"2,000 lognormal lengths (median {np.median(drawn):.0f})"
    cache: dict[int, float] = {}

    def cycles(size: int) -> float:
        if size not in cache:
            cache[size] = float(program_cost(source.graph(args.dim, size), hw).cycles)
        return cache[size]

    t = time.perf_counter()
    choice = choose_buckets(counts, dim, args.auto, cycles)
    seconds = time.perf_counter() - t
    print(
        f"--buckets auto over {what}: {', '.join(map(str, choice.buckets))} "
        f"({choice.candidates} candidates priced, {seconds:.1f} s)"
    )
    for label, b in (
        ("auto", choice.buckets),
        ("given", buckets),
        ("powers of two", default_buckets(dim)),
    ):
        print(
            f"  {label:<14} {len(b):>2} programs: "
            f"{expected_cycles(counts, b, cycles):>14,.0f} est. cycles per request"
        )


if __name__ == "__main__":
    sys.exit(main())
