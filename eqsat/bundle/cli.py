"""What `eqsat compile` and `eqsat simulate` do with bundles (the commands stay thin).

compile: `--dim S=LO..HI [--buckets LIST|auto [--lengths FILE] [--num-buckets K]]
-o OUT.eqsb`. simulate: `BUNDLE.eqsb --dim S=N [--verify] [--exact]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from eqsat.bundle.build import Bundle, compile_bundle, hardware_from_spec, hardware_spec
from eqsat.bundle.choose import choose_buckets, expected_cycles, read_lengths
from eqsat.bundle.dispatch import BundleRun, run_bundle
from eqsat.bundle.fileformat import SUFFIX, is_bundle, load_bundle, save_bundle
from eqsat.bundle.ranges import DimRange, check_buckets, default_buckets, parse_buckets
from eqsat.bundle.source import ModelSource
from eqsat.flags import UsageError
from eqsat.summary import human_bytes


def add_compile_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--buckets",
        type=parse_buckets,
        metavar="SIZES|auto",
        help="with --dim NAME=LO..HI: the sizes to compile a program for (comma-separated; "
        "the largest must be HI), or auto: chosen from --lengths to minimize expected cycles "
        "(default: powers of two up to HI, and HI)",
    )
    p.add_argument(
        "--lengths",
        metavar="FILE",
        help="with --buckets auto: the length distribution, one length per line, "
        "optionally followed by its count",
    )
    p.add_argument(
        "--num-buckets",
        type=int,
        default=None,
        metavar="K",
        help="with --buckets auto: at most K programs (default 4)",
    )


def add_simulate_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--exact",
        action="store_true",
        help="for a bundle: also optimize, compile and simulate the model at exactly the "
        "given size and report the measured padding overhead",
    )


def wants_bundle(args: argparse.Namespace) -> bool:
    return any(isinstance(v, range) for _, v in args.dim) or args.buckets is not None


def _split_dims(args: argparse.Namespace) -> tuple[DimRange, dict[str, int]]:
    ranges = [(k, v) for k, v in args.dim if isinstance(v, range)]
    if len(ranges) != 1:
        raise UsageError(
            "a bundle varies exactly one dimension: give one --dim NAME=LO..HI"
            + (f" (got {len(ranges)})" if ranges else "")
        )
    return DimRange.from_flag(*ranges[0]), {k: v for k, v in args.dim if isinstance(v, int)}


def run_compile(args: argparse.Namespace) -> int:
    """`eqsat compile MODEL --dim S=LO..HI ... -o OUT.eqsb`."""
    from eqsat.config import limits_from_args
    from eqsat.program_cost import program_cost
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths

    dim, fixed = _split_dims(args)
    if getattr(args, "quantize", None):
        raise UsageError("--quantize does not apply to bundles")
    if args.emit != "asm":
        raise UsageError("a bundle holds hwsim programs: --emit must be asm")
    if not args.output or not str(args.output).endswith(SUFFIX):
        raise UsageError(f"a bundle is written to a file: give -o OUT{SUFFIX}")
    if args.buckets != "auto" and (args.lengths or args.num_buckets is not None):
        raise UsageError("--lengths and --num-buckets go with --buckets auto")
    source = ModelSource.from_file(args.model, fixed)
    say = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    hw = hardware_from_spec(hardware_spec(args.hw))
    if args.buckets == "auto":
        if not args.lengths:
            raise UsageError("--buckets auto needs the length distribution: --lengths FILE")
        counts = read_lengths(args.lengths)
        cache: dict[int, float] = {}

        def cycles(size: int) -> float:
            if size not in cache:
                cache[size] = float(program_cost(source.graph(dim.name, size), hw).cycles)
            return cache[size]

        t = time.perf_counter()
        choice = choose_buckets(counts, dim, args.num_buckets or 4, cycles)
        pow2 = default_buckets(dim)
        print(
            f"buckets chosen from {sum(counts.values()):,} lengths ({choice.candidates} "
            f"candidates, {time.perf_counter() - t:.1f} s): {', '.join(map(str, choice.buckets))}; "
            f"expected {choice.expected_cycles:,.0f} est. cycles per request "
            f"(powers of two {', '.join(map(str, pow2))}: {expected_cycles(counts, pow2, cycles):,.0f})"
        )
        buckets = choice.buckets
    else:
        buckets = args.buckets if args.buckets is not None else default_buckets(dim)
    try:
        buckets = check_buckets(dim, buckets)
    except ValueError as e:
        raise UsageError(f"--buckets: {e}") from None
    rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])
    bundle = compile_bundle(
        source,
        dim,
        buckets,
        args.hw,
        rules=rules,
        limits=limits_from_args(args),
        extractor=args.extract,
        ilp_time_limit=args.ilp_time_limit,
        optimize=not args.no_optimize,
        progress=say,
    )
    size = save_bundle(bundle, args.output)
    print(describe(bundle))
    print(f"wrote bundle ({human_bytes(size)}) to {args.output}")
    return 0


def describe(bundle: Bundle) -> str:
    s = bundle.stats
    lines = [
        f"{bundle.name} for {bundle.hardware().name}: {bundle.dim}, "
        f"{len(bundle.programs)} programs in {s.get('compile_seconds', 0):.1f} s"
        + (
            f" (one e-graph: {s['egraph_nodes']:,} e-nodes, {s['rounds']} rounds, {s['stop']})"
            if "egraph_nodes" in s
            else ""
        )
    ]
    for b, p in sorted(bundle.programs.items()):
        masks = ", ".join(sorted(p.masks)) or "none"
        lines.append(
            f"  {bundle.dim.name}={b:<6} est. {p.est_cycles:>14,} cycles, "
            f"{p.asm.count(chr(10)):>8,} asm lines, masks: {masks}"
        )
    return "\n".join(lines)


def run_simulate(args: argparse.Namespace) -> int:
    """`eqsat simulate BUNDLE.eqsb --dim S=N`."""
    from eqsat.fileio import load_arrays, print_warning, save_arrays, write_atomic

    for flag in ("quantize", "rules"):
        if getattr(args, flag, None):
            raise UsageError(f"--{flag} applies when compiling; a bundle runs as compiled")
    bundle = load_bundle(args.source)
    inputs = load_arrays(args.inputs, warn=print_warning) if args.inputs else None
    dims = {}
    for k, v in args.dim:
        dims[k] = v
    run = run_bundle(bundle, dims, inputs, seed=args.seed, verify=True, exact=args.exact)
    d = report(bundle, run)
    if args.verify:
        tol = args.verify_tol or 1e-3
        if run.errors[1] > tol:
            print(format_report(d))
            raise UsageError(
                f"--verify: max rel error {run.errors[1]:.3g} above the tolerance {tol:g}; "
                "nothing written"
            )
    if args.output:
        save_arrays(args.output, run.outputs)
    if args.report:
        write_atomic(args.report, json.dumps(d, indent=2) + "\n")
    print(format_report(d))
    if args.output:
        print(f"wrote outputs to {args.output}")
    if args.report:
        print(f"wrote report to {args.report}")
    return 0


def report(bundle: Bundle, run: BundleRun) -> dict:
    return {
        "model": bundle.name,
        "hardware": bundle.hardware().name,
        "dim": bundle.dim.name,
        "range": [bundle.dim.lo, bundle.dim.hi],
        "buckets": bundle.buckets,
        "n": run.n,
        "bucket": run.bucket,
        "cycles": run.cycles,
        "est_exact_cycles": run.est_exact_cycles,
        "est_bucket_cycles": run.est_bucket_cycles,
        "padding_overhead_cycles": run.overhead_cycles,
        "padding_overhead_fraction": run.overhead_cycles / run.cycles if run.cycles else 0.0,
        "exact_cycles": run.exact_cycles,
        "measured_overhead_cycles": run.measured_overhead_cycles,
        "max_abs_error": None if run.errors is None else run.errors[0],
        "max_rel_error": None if run.errors is None else run.errors[1],
    }


def format_report(d: dict) -> str:
    name, n, b = d["dim"], d["n"], d["bucket"]
    lines = [
        f"bundle        {d['model']} on {d['hardware']}: {name}={d['range'][0]}..{d['range'][1]}, "
        f"buckets {', '.join(map(str, d['buckets']))}",
        f"dispatch      {name}={n} -> bucket {b} ({b - n} padded positions)",
        f"cycles        {d['cycles']:,} (simulated, bucket {b})",
        f"padding       {d['padding_overhead_cycles']:,} cycles of overhead "
        f"({d['padding_overhead_fraction']:.1%}): the bucket's cycles times 1 - est({name}={n}) / "
        f"est({name}={b}), the model as written priced at {d['est_exact_cycles']:,} and "
        f"{d['est_bucket_cycles']:,}",
    ]
    if d["exact_cycles"] is not None:
        lines.append(
            f"exact         {d['exact_cycles']:,} cycles compiled for {name}={n}: measured "
            f"overhead {d['measured_overhead_cycles']:,} cycles"
        )
    if d["max_abs_error"] is not None:
        lines.append(
            f"vs reference  max abs error {d['max_abs_error']:.3g}, "
            f"max rel error {d['max_rel_error']:.3g} (the model at {name}={n})"
        )
    return "\n".join(lines)


__all__ = [
    "add_compile_flags",
    "add_simulate_flags",
    "is_bundle",
    "run_compile",
    "run_simulate",
    "wants_bundle",
]
