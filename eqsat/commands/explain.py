"""`eqsat explain`: for every kernel of the optimized program, what it covers, which
rule built it, and what it beat."""

from __future__ import annotations

import argparse
import json
import sys

from eqsat.commands.common import load_model_from_args
from eqsat.commands.optimize import add_optimize_flags
from eqsat.config import limits_from_args
from eqsat.explain import explain, format_explanations
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import load_hardware


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="why each kernel of the optimized program is what it is",
        description=(
            "Optimize MODEL with rules that record which rule built each e-node, then show "
            "for every kernel of the result (named op.statement, as `profile` and the "
            "assembly name them): the input statements it computes, the rule that built "
            "it, and the other forms of its e-class with their costs and why each lost "
            "(SRAM overflow, more cycles)."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="a model file (or .onnx)")
    add_dim_flag(p)
    add_optimize_flags(p)
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (e.g. attention.n29)")
    p.add_argument("--json", metavar="OUT.json", help="write the explanations as JSON")
    p.add_argument(
        "--dot",
        metavar="OUT.dot|svg",
        help="draw the e-classes around --kernel (or the whole e-graph of a small model) "
        "with graphviz, the chosen e-nodes filled (needs the [plot] extra; without the "
        "`dot` program the .dot source is written)",
    )
    p.set_defaults(func=run)


def _draw(args: argparse.Namespace, result, items) -> str:
    from eqsat.egraph_dot import MAX_CLASSES, egraph_dot, neighbourhood, write_dot

    priced = result.priced
    chosen = set(result.extraction.choice.values())
    if args.kernel:
        classes = neighbourhood(priced, items[0].eclass)
    elif len(priced.decoded.classes) <= MAX_CLASSES:
        classes = None
    else:
        raise UsageError(
            f"--dot: the e-graph has {len(priced.decoded.classes):,} e-classes, too many to "
            f"draw whole (at most {MAX_CLASSES}); name one with --kernel"
        )
    return write_dot(egraph_dot(priced, chosen, classes), args.dot)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "quantize", None):
        raise UsageError("explain does not quantize; drop --quantize")
    hw = load_hardware(args.hw)
    loaded = load_model_from_args(args)
    rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR], provenance=True)

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    say(f"optimizing {loaded.graph.name} for {hw.name} with rule provenance recorded")
    result = optimize(
        loaded.graph,
        rules,
        hw,
        limits_from_args(args),
        extractor=args.extract,
        ilp_time_limit=args.ilp_time_limit,
        progress=say,
        keep_egraph=True,
    )
    if result.priced is None:  # extraction ran out of time: the input is kept
        raise UsageError("the optimization ran out of time before extraction; raise --time-limit")
    items = explain(result.original, result.graph, result.priced, hw)
    if args.kernel:
        chosen = [e for e in items if e.name == args.kernel]
        if not chosen:
            names = ", ".join(e.name for e in items)
            raise UsageError(f"--kernel {args.kernel}: no such kernel; the kernels are: {names}")
        items = chosen
    if args.json:
        write_atomic(args.json, json.dumps([e.as_dict() for e in items], indent=2) + "\n")
    drawn = _draw(args, result, items) if args.dot else None
    print(format_explanations(items))
    if drawn:
        print(drawn)
    if args.json:
        print(f"wrote explanations to {args.json}")
    return 0
