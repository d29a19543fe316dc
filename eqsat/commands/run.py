"""`eqsat run`: evaluate a model with the reference interpreter."""

from __future__ import annotations

import argparse

from eqsat.commands.common import bindings_from_args, load_model_from_args
from eqsat.fileio import save_arrays
from eqsat.flags import UsageError, add_allow_extra_flag, add_dim_flag, seed, whole_number
from eqsat.interpreter import evaluate
from eqsat.summary import describe_value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="evaluate a model with the reference interpreter",
        description=(
            "Evaluate MODEL with the numpy reference interpreter. Inputs and params come "
            "from --inputs where present there and are drawn from --seed otherwise "
            "(inputs standard normal, params normal with std 1/sqrt(fan-in)). "
            "Every output is written to OUT.npz under its name."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model file in the eqsat text format")
    add_dim_flag(p)
    p.add_argument("--inputs", metavar="FILE.npz", help="values for inputs and params, by name")
    add_allow_extra_flag(p)
    p.add_argument(
        "--seed", type=seed, default=0, help="seed for values not in --inputs (default 0)"
    )
    p.add_argument(
        "--save-inputs",
        metavar="IN.npz",
        help="write the inputs and params used, to run another model on the same values",
    )
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs here")
    p.add_argument(
        "--backend",
        choices=("interpreter", "iree"),
        default="interpreter",
        help="interpreter: the numpy reference (default); iree: emit the model as MLIR "
        "(backend/mlir), compile it with IREE for this CPU and run it, reporting wall time "
        "(needs the [iree] extra)",
    )
    p.add_argument(
        "--mlir",
        metavar="FILE.mlir",
        help="with --backend iree: run this MLIR (written by `eqsat compile --emit mlir`, "
        "e.g. the optimized program) instead of the model as written; its arguments are "
        "fed by name",
    )
    p.add_argument(
        "--repeat",
        type=whole_number(1, 1_000_000),
        default=10,
        metavar="N",
        help="with --backend iree: run N times and report the fastest (default 10)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eqsat.control.cli import control_command  # models with if/loop regions

    if (code := control_command(args, "run")) is not None:
        return code
    loaded = load_model_from_args(args)
    graph = loaded.graph
    bindings = bindings_from_args(args, loaded)
    if args.mlir and args.backend != "iree":
        raise UsageError("--mlir runs through IREE: add --backend iree")
    if args.backend == "iree":
        from eqsat.iree_run import run_with_iree

        outputs, timing = run_with_iree(graph, bindings, args.mlir, args.repeat)
    else:
        outputs, timing = evaluate(graph, bindings), None
    if loaded.onnx is not None:  # by ONNX name, in the ONNX output types
        outputs = loaded.onnx.results(outputs)
    if args.save_inputs:
        save_arrays(args.save_inputs, bindings)
    if args.output:
        save_arrays(args.output, outputs)
    print(f"model {graph.name}: {len(outputs)} output{'s' if len(outputs) != 1 else ''}")
    for name, value in outputs.items():
        print(describe_value(name, value))
    if timing is not None:
        print(timing)
    if args.save_inputs:
        print(f"wrote inputs and params to {args.save_inputs}")
    if args.output:
        print(f"wrote outputs to {args.output}")
    return 0
