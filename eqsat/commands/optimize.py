"""`eqsat optimize`: equality saturation + hardware-cost extraction on a model."""

from __future__ import annotations

import argparse
import json
import sys

from eqsat.blocks import optimize_blockwise, plan_blocks
from eqsat.blocks.describe import report_json as block_report_json
from eqsat.blocks.describe import summary_lines as block_summary_lines
from eqsat.blocks.scheduler import dask_client, parse_scheduler
from eqsat.budget import default_memory_limit, parse_size
from eqsat.commands.block_flags import add_block_flags, cache_from_args
from eqsat.commands.common import add_verify_flags, load_model_from_args
from eqsat.config import (
    DEFAULT_EXTRACTOR,
    DEFAULT_HARDWARE,
    DEFAULT_LIMITS,
    ILP_TIME_LIMIT,
    limits_from_args,
)
from eqsat.extract.result import OUT_OF_TIME
from eqsat.extract.serialized import to_json_dict
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag, seconds, verify_seeds
from eqsat.loading import save_model
from eqsat.pipeline import OptimizeResult, optimize
from eqsat.quant import cli as quant_cli
from eqsat.quant.cli import add_quant_flags
from eqsat.quant.sqnr import json_sqnr
from eqsat.roofline import model_roofline
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.summary import human_bytes
from hwsim.hardware import Hardware, load_hardware


def add_optimize_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by every command that optimizes (optimize, compile, simulate)."""
    p.add_argument(
        "--hw",
        default=DEFAULT_HARDWARE,
        metavar="PRESET|FILE.toml",
        help=f"target hardware: a preset (edge, datacenter) or a TOML file (default {DEFAULT_HARDWARE})",
    )
    p.add_argument(
        "--rules",
        action="append",
        metavar="FILE_OR_DIR",
        help="rule file or directory of *.rules (repeatable; default: the bundled rules/)",
    )
    p.add_argument(
        "--extract",
        choices=("greedy", "ilp"),
        default=DEFAULT_EXTRACTOR,
        help="extractor: greedy DAG (default) or exact ILP (HiGHS), bounded by greedy's cost "
        "and falling back to greedy's answer on a time-out",
    )
    p.add_argument(
        "--ilp-time-limit",
        type=seconds,
        default=ILP_TIME_LIMIT,
        metavar="S",
        help=f"time limit of the ILP solver in seconds (default {ILP_TIME_LIMIT:g})",
    )
    p.add_argument(
        "--iter-limit",
        type=int,
        default=DEFAULT_LIMITS.iter_limit,
        metavar="N",
        help=f"stop saturation after N rounds (default {DEFAULT_LIMITS.iter_limit})",
    )
    p.add_argument(
        "--node-limit",
        type=int,
        default=DEFAULT_LIMITS.node_limit,
        metavar="N",
        help=f"stop saturation at N program e-nodes (default {DEFAULT_LIMITS.node_limit:,})",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_LIMITS.time_limit,
        metavar="S",
        help="seconds for the whole optimization: saturation stops early enough for "
        "extraction (and --extract ilp) to fit; if extraction still runs out, the input "
        f"program is kept (default {DEFAULT_LIMITS.time_limit:g})",
    )
    p.add_argument(
        "--memory-limit",
        type=_size,
        default=None,
        metavar="SIZE",
        help="resident memory the optimization may use, e.g. 2GB or 512MiB: the e-graph "
        "stops growing where extracting from it would exceed it, and the best program "
        "found so far is kept (default: half of this machine's RAM, "
        f"{human_bytes(default_memory_limit())})",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print no progress")
    add_quant_flags(p)
    add_block_flags(p)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimize",
        help="optimize a model by equality saturation for a hardware target",
        description=(
            "Grow an e-graph of programs equivalent to MODEL with the rewrite rules, "
            "then extract the one the hardware cost model prices cheapest. Prints "
            "estimated cycles and DRAM bytes before and after, the e-graph size and "
            "why saturation stopped, and the rules that fired most."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model file in the eqsat text format")
    add_dim_flag(p)
    add_optimize_flags(p)
    p.add_argument("-o", "--output", metavar="OUT.model", help="write the optimized model here")
    p.add_argument("--report", metavar="REPORT.json", help="write a JSON report here")
    add_verify_flags(p, "the optimized model")
    p.add_argument(
        "--explain",
        action="store_true",
        help="record which rule built each e-node and print, per kernel, the rule and the "
        "alternatives that lost (as `eqsat explain`)",
    )
    p.add_argument(
        "--egraph-out",
        metavar="EGRAPH.json",
        help="write the saturated e-graph, priced in cycles, as egraph-serialize JSON "
        "(what `eqsat extract` and extraction-gym read)",
    )
    p.set_defaults(func=run)


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def optimize_from_args(
    args: argparse.Namespace, graph, keep_egraph: bool = False, bindings=None, params=None
) -> tuple[OptimizeResult, Hardware]:
    """Optimize `graph` as the flags say; with --quantize, calibrate and quantize first
    (params from `bindings` if given, i.e. what simulate feeds, else from `params`, the
    model's params file) and measure SQNR."""
    hw = load_hardware(args.hw)
    limits = limits_from_args(args)
    quant = quant_cli.prepare(args, graph, hw.rounding, bindings, params=params)
    rules = compile_rule_paths(
        args.rules or [DEFAULT_RULES_DIR],
        include_approx=bool(quant),
        provenance=bool(getattr(args, "explain", False)),
    )

    def progress(message: str) -> None:
        if not args.quiet:  # one write: a Ctrl-C cannot fall between a line and its end
            sys.stderr.write(f"{message}\n")
            sys.stderr.flush()

    progress(
        f"optimizing {graph.name} for {hw.name}: {len(rules.names)} rules in "
        f"{len(rules.rulesets)} rulesets ({', '.join(rules.rulesets)})"
    )
    if getattr(args, "scheduler", None):  # a bad spec is an error even where unused
        parse_scheduler(args.scheduler)
    result = _optimize(args, graph, rules, hw, limits, progress, keep_egraph, quant)
    if quant and quant.scheme != "auto" and not keep_egraph:
        # never slower than float: the quantized e-graph is larger and is not split
        # into blocks, so its extraction can miss the float program's best form
        # (--quantize auto already weighs f32 among its candidates)
        float_rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])
        floats = _optimize(args, graph, float_rules, hw, limits, lambda _msg: None, False, None)
        if floats.after.cycles < result.after.cycles:
            progress(
                f"{quant.scheme} does not pay here: the float program is kept "
                f"({floats.after.cycles:,} estimated cycles against {result.after.cycles:,})"
            )
            result = floats
    if quant:
        quant_cli.measure(quant, graph, result.graph)
        result.quant = quant
    return result, hw


def _optimize(args, graph, rules, hw, limits, progress, keep_egraph, quant) -> OptimizeResult:
    """One optimization of `graph` (annotated by `quant`'s plan if given), by blocks
    where the model repeats them and the flags allow."""
    plan = None
    if not quant and not keep_egraph and not getattr(args, "no_blocks", True):
        plan = plan_blocks(graph, rules.nestings)
    if plan is not None and plan.repeats:
        with dask_client(getattr(args, "scheduler", None)) as client:
            return optimize_blockwise(
                graph,
                plan,
                rules,
                hw,
                limits,
                extractor=args.extract,
                ilp_time_limit=args.ilp_time_limit,
                progress=progress,
                cache=cache_from_args(args),
                scheduler=client,
            )
    return optimize(
        quant.plan.graph if quant else graph,
        rules,
        hw,
        limits,
        extractor=args.extract,
        ilp_time_limit=args.ilp_time_limit,
        progress=progress,
        keep_egraph=keep_egraph,
        facts=quant.plan.seeds if quant else "",
        baseline=graph,
    )


def _change(before: float, after: float) -> str:
    if before == 0:
        return ""
    return f"{(after - before) / before * 100:+.1f}%"


def format_summary(result: OptimizeResult, hw: Hardware) -> str:
    sat = result.saturation
    b, a = result.before, result.after
    rows = [
        ("est. cycles", f"{b.cycles:,}", f"{a.cycles:,}", _change(b.cycles, a.cycles)),
        (
            "DRAM bytes",
            human_bytes(b.dram_bytes),
            human_bytes(a.dram_bytes),
            _change(b.dram_bytes, a.dram_bytes),
        ),
        ("kernels", str(b.kernels), str(a.kernels), _change(b.kernels, a.kernels)),
    ]
    roof = model_roofline(result.original, hw)
    rows.append(
        ("of roofline", f"{roof.fraction(b.cycles):.1%}", f"{roof.fraction(a.cycles):.1%}", "")
    )
    lines = [f"{result.graph.name} on {hw.name}:"]
    lines.append(f"  {'':<12} {'before':>14} {'after':>14} {'change':>8}")
    lines += [f"  {r[0]:<12} {r[1]:>14} {r[2]:>14} {r[3]:>8}" for r in rows]
    lines.append(
        f"model roofline: {roof.cycles:,} cycles ({roof.bound}-bound: the model's work "
        "at peak rate; shares above are of the estimates)"
    )
    if result.blocks is not None:
        rounds = max((o.rounds for o in result.blocks.outcomes.values()), default=0)
        lines.append(
            f"e-graphs: {result.egraph_nodes:,} e-nodes in {result.egraph_classes:,} "
            f"e-classes over the distinct blocks, up to {rounds} rounds; stopped: "
            f"{sat.describe_stop()}"
        )
    else:
        lines.append(
            f"e-graph: {result.egraph_nodes:,} e-nodes"
            + (f" in {result.egraph_classes:,} e-classes" if result.egraph_classes else "")
            + " after "
            f"{len(sat.iterations)} rounds; stopped: {sat.describe_stop()}"
        )
    ext = result.extraction
    if ext.status == OUT_OF_TIME:
        lines.append(
            f"extraction: {ext.extractor} stopped by the time limit (--time-limit); "
            "the input is kept"
        )
    else:
        lines.append(
            f"extraction: {ext.extractor} ({ext.status.replace('_', ' ')}), "
            f"DAG cost {ext.dag_cost:,.0f} cycles"
        )
    if result.kept_original and ext.status != OUT_OF_TIME:
        lines.append("  (nothing cheaper than the input was found; the input is kept)")
    # most first, ties by name: the same run prints the same line
    top = sorted(sat.rules_fired.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    if top:
        lines.append("rules that fired most: " + ", ".join(f"{k} ({v})" for k, v in top))
    if result.quant is not None:
        lines += quant_cli.summary_lines(result.quant, result.graph)
    if result.blocks is not None:
        lines += block_summary_lines(result.blocks, result.original)
    t = result.times
    lines.append(
        f"time: saturate {t['saturate']:.2f} s, extract {t['extract']:.2f} s, total {t['total']:.2f} s"
    )
    return "\n".join(lines)


def report_dict(result: OptimizeResult, hw: Hardware) -> dict:
    sat = result.saturation
    out = {
        "model": result.graph.name,
        "hardware": hw.name,
        "cost_before": result.before.cycles,
        "cost_after": result.after.cycles,
        "dram_bytes_before": result.before.dram_bytes,
        "dram_bytes_after": result.after.dram_bytes,
        "kernels_before": result.before.kernels,
        "kernels_after": result.after.kernels,
        "roofline_cycles": (roof := model_roofline(result.original, hw)).cycles,
        "roofline_bound": roof.bound,
        "roofline_fraction_before": roof.fraction(result.before.cycles),
        "roofline_fraction": roof.fraction(result.after.cycles),
        "egraph": {
            "nodes": result.egraph_nodes,
            "classes": result.egraph_classes,
            "iterations": len(sat.iterations),
            "stop_reason": sat.stop_reason,
            "stop": sat.describe_stop(),
            "nodes_per_iteration": [sat.initial_nodes] + [it.nodes for it in sat.iterations],
        },
        "extraction": {
            "extractor": result.extraction.extractor,
            "status": result.extraction.status,
            "dag_cost": result.extraction.dag_cost,
            "kept_original": result.kept_original,
        },
        "rules_fired": dict(sorted(sat.rules_fired.items())),
        "time_s": {k: round(v, 6) for k, v in result.times.items()},
    }
    if result.blocks is not None:
        out["blocks"] = block_report_json(result.blocks, result.original)
    if result.quant is not None:
        out["sqnr_db"] = json_sqnr(result.quant.sqnr)
        out["quantization"] = quant_cli.report(result.quant, result.graph)
    return out


def run(args: argparse.Namespace) -> int:
    from eqsat.control.cli import control_command  # models with if/loop regions

    if (code := control_command(args, "optimize")) is not None:
        return code
    loaded = load_model_from_args(args)
    graph = loaded.graph
    result, hw = optimize_from_args(
        args, graph, keep_egraph=bool(args.egraph_out or args.explain), params=loaded.params
    )
    if args.egraph_out and result.priced is None:
        raise UsageError(
            "--egraph-out: the time limit ran out before the e-graph was priced, so there "
            "is none to write; raise --time-limit"
        )
    validation = None
    if args.verify:  # before anything is written: a wrong result must not reach disk
        from eqsat.verify.translation import validate_graph

        validation = validate_graph(graph, result.graph, verify_seeds(args), args.verify_tol)
    report = json.dumps(report_dict(result, hw), indent=2) + "\n"
    wrote = None
    if args.output:
        params = dict(loaded.params)
        if result.quant is not None:
            params.update(result.quant.all_params)
        wrote = save_model(args.output, result.graph, params)
    if args.report:
        write_atomic(args.report, report)
    if args.egraph_out:
        egraph = to_json_dict(result.priced.extraction_graph(result.roots))
        write_atomic(args.egraph_out, json.dumps(egraph) + "\n")
    print(format_summary(result, hw))
    if args.explain and result.priced is not None:
        from eqsat.explain import explain, format_explanations

        print(format_explanations(explain(result.original, result.graph, result.priced, hw)))
    if validation is not None:
        print(validation.summary("the optimized model"))
    if args.output:
        print(f"wrote optimized model to {args.output}")
        if wrote is not None:
            what = "its quantized params" if result.quant is not None else "its tensors"
            print(f"wrote {what} to {wrote}")
    if args.report:
        print(f"wrote report to {args.report}")
    if args.egraph_out:
        print(f"wrote the priced e-graph to {args.egraph_out}")
    return 0
