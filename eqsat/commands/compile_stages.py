"""`eqsat compile --emit model|egglog|egraph-json`: stop after an earlier stage than the
backend. model: the optimized program as model text (its params file beside it with
-o); egglog: the egglog program eqsat runs (eqsat/egraph/export.py); egraph-json: the
saturated e-graph priced in cycles (egraph-serialize JSON, as `optimize --egraph-out`)."""

from __future__ import annotations

import argparse
import json
import sys

from eqsat.extract.serialized import to_json_dict
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError

STAGES = ("model", "egglog", "egraph-json")


def emit_stage(args: argparse.Namespace, loaded, optimize) -> int:
    """`optimize(args, graph, keep_egraph=...)` is the compile command's optimizer
    (optimize_from_args)."""
    if args.no_optimize and args.emit != "model":
        raise UsageError(f"--emit {args.emit} shows the optimizer's work: drop --no-optimize")
    if args.emit == "egglog":
        text = _egglog_text(args, loaded)
    elif args.no_optimize:
        text = _model_text(loaded.graph)
    else:
        result, _ = optimize(args, loaded.graph, keep_egraph=args.emit == "egraph-json")
        if args.emit == "model":
            if args.output:
                return _save_model(args, loaded, result)
            text = _model_text(result.graph)
        else:
            if result.priced is None:
                raise UsageError(
                    "--emit egraph-json: the time limit ran out before the e-graph was "
                    "priced, so there is none to write; raise --time-limit"
                )
            egraph = to_json_dict(result.priced.extraction_graph(result.roots))
            text = json.dumps(egraph) + "\n"
    if args.output:
        write_atomic(args.output, text)
        print(f"wrote {args.emit} to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _model_text(graph) -> str:
    from frontend.from_graph import graph_to_model
    from frontend.printer import print_model

    return print_model(graph_to_model(graph))


def _save_model(args: argparse.Namespace, loaded, result) -> int:
    from eqsat.loading import save_model

    params = dict(loaded.params)
    if result.quant is not None:
        params.update(result.quant.all_params)
    beside = save_model(args.output, result.graph, params)
    print(f"wrote model to {args.output}" + (f" and its params to {beside}" if beside else ""))
    return 0


def _egglog_text(args: argparse.Namespace, loaded) -> str:
    from eqsat.egraph.export import egglog_program
    from eqsat.rules.predicates import hardware_facts
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
    from hwsim.hardware import load_hardware

    if getattr(args, "quantize", None):
        raise UsageError(
            "--emit egglog writes the float program's e-graph; the quantization pass "
            "adds its facts at run time: drop --quantize"
        )
    hw = load_hardware(args.hw)
    rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])
    return egglog_program(
        loaded.graph, rules.text, rules.rulesets, hardware_facts(hw), args.iter_limit
    )
