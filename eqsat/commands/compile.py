"""`eqsat compile`: optimize a model (unless --no-optimize) and lower it to hwsim assembly."""

from __future__ import annotations

import argparse
import sys

from eqsat.bundle import cli as bundle_cli
from eqsat.commands.common import compile_time_params, load_model_from_args
from eqsat.commands.compile_stages import STAGES, emit_stage
from eqsat.commands.mlir_dynamic import add_dynamic_flag, check_dynamic_flag, dynamic_shapes
from eqsat.commands.optimize import add_optimize_flags, optimize_from_args
from eqsat.fileio import write_atomic
from eqsat.flags import UsageError, add_dim_flag
from eqsat.quant import cli as quant_cli
from eqsat.quant.sqnr import json_sqnr
from eqsat.summary import human_bytes
from hwsim.hardware import load_hardware


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compile",
        help="compile a model to accelerator assembly",
        description=(
            "Optimize MODEL for the target hardware (skip with --no-optimize), lower the "
            "extracted program to the hwsim ISA (tiled, double-buffered kernels, DRAM "
            "buffers reused by liveness) and write the assembly. Prints the kernels, the "
            "instruction count and the DRAM footprint against one buffer per value."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model file in the eqsat text format")
    add_dim_flag(p, ranges=True)
    add_optimize_flags(p)
    add_no_optimize_flag(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT.asm|OUT.eqsb",
        help="write the assembly here (default: stdout); a bundle (--dim NAME=LO..HI) "
        "is written to OUT.eqsb",
    )
    bundle_cli.add_compile_flags(p)
    p.add_argument(
        "--emit",
        choices=("asm", "mlir-accel", "mlir", "mlir-tiled", *STAGES),
        default="asm",
        help="what to write: hwsim assembly (default), or mlir-accel: the same program as "
        "MLIR in the accel dialect (backend/mlir_accel/accel.irdl.mlir), or mlir: the "
        "extracted graph as one func.func in upstream dialects (linalg, tensor, arith, "
        "math) for IREE or any MLIR pipeline (backend/mlir/), or mlir-tiled: the same with the "
        "GEMM tiles extraction chose as scf.for loops; or an earlier stage: model (the "
        "optimized model text), egglog (the egglog program eqsat runs: rules, model, "
        "schedule), egraph-json (the saturated e-graph priced in cycles)",
    )
    add_dynamic_flag(p)
    p.add_argument(
        "--report",
        metavar="REPORT.json",
        help="write a JSON report here: kernels, and with --quantize the SQNR per output and "
        "the quantization (with --quantize auto: each layer's precision, scales, ranges, "
        "sensitivity and cycles saved)",
    )
    p.set_defaults(func=run)


def add_no_optimize_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-optimize",
        action="store_true",
        help="lower the model as written (one kernel per op), without equality saturation",
    )


def graph_for_target(args: argparse.Namespace, graph, bindings=None, params=None):
    """(graph to lower, hardware, optimize result or None): optimized unless
    --no-optimize. With --quantize, result.quant holds the quantized params."""
    if args.no_optimize:
        if getattr(args, "quantize", None):
            raise UsageError("--quantize works through the optimizer; drop --no-optimize")
        return graph, load_hardware(args.hw), None
    result, hw = optimize_from_args(args, graph, bindings=bindings, params=params)
    return result.graph, hw, result


def emitted_text(emit: str, compiled, name: str) -> str:
    """The compiled program in the --emit format."""
    if emit == "mlir-accel":
        from backend.mlir_accel import emit_accel_mlir

        return emit_accel_mlir(compiled.program, name)
    return compiled.asm


def run(args: argparse.Namespace) -> int:
    if bundle_cli.wants_bundle(args):  # --dim NAME=LO..HI: one bundle for the range
        return bundle_cli.run_compile(args)
    from eqsat.control.cli import control_command  # models with if/loop regions

    if (code := control_command(args, "compile")) is not None:
        return code
    from backend import compile_graph

    loaded = load_model_from_args(args)
    check_dynamic_flag(args, loaded)
    if args.emit in STAGES:
        return emit_stage(args, loaded, _optimize_loaded(loaded))
    graph = loaded.graph
    lowered, hw, result = graph_for_target(args, graph, params=loaded.params)
    quant = result.quant if result is not None else None
    if args.emit in ("mlir", "mlir-tiled"):
        return _write_mlir(args, loaded, lowered, quant)
    consts = quant.all_params if quant else compile_time_params(lowered, loaded.params)
    compiled = compile_graph(lowered, hw, consts)
    fp = compiled.footprint
    text = emitted_text(args.emit, compiled, lowered.name)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    out = sys.stderr if not args.output else sys.stdout
    n_main = sum(1 for k in compiled.kernels if k.role == "main")
    print(
        f"{lowered.name} for {hw.name}: {len(compiled.kernels)} kernels ({n_main} for ops), "
        f"{len(compiled.program.instrs)} instructions",
        file=out,
    )
    saved = 1 - fp.planned_bytes / fp.naive_bytes if fp.naive_bytes else 0.0
    print(
        f"DRAM footprint {human_bytes(fp.planned_bytes)} with liveness reuse, "
        f"{human_bytes(fp.naive_bytes)} with one buffer per value ({saved:.0%} saved)",
        file=out,
    )
    prepared = compiled.prepared_weights()
    if prepared:
        print(
            f"{len(prepared)} weights prepared at load time (computed from the params when "
            f"the program is fed, not by the program): {', '.join(n for n, _ in prepared)}",
            file=out,
        )
    _report_quant(args, quant, lowered, out, "program inputs")
    if args.output:
        print(f"wrote {'assembly' if args.emit == 'asm' else args.emit} to {args.output}", file=out)
    return 0


def _report_quant(args: argparse.Namespace, quant, lowered, out, role: str) -> None:
    """With --quantize: the quantization summary, and the quantized params (`role`
    says what they are to the program) written beside -o. --report: the JSON report."""
    if getattr(args, "report", None):
        _write_report(args, quant, lowered)
    if quant is None:
        return
    for line in quant_cli.summary_lines(quant, lowered):
        print(line, file=out)
    if args.output:
        path = quant_cli.write_params(quant, lowered, args.output)
        print(f"wrote the quantized params ({role}) to {path}", file=out)


def _write_report(args: argparse.Namespace, quant, lowered) -> None:
    """REPORT.json of compile, written whole (write_atomic) or not at all."""
    import json

    d = {
        "model": lowered.name,
        "hardware": args.hw,
        "kernels": sum(1 for _, n in lowered if n.op not in ("input", "param", "const", "literal")),
    }
    if quant is not None:
        d["sqnr_db"] = json_sqnr(quant.sqnr)
        d["quantization"] = quant_cli.report(quant, lowered)
    write_atomic(args.report, json.dumps(d, indent=2, allow_nan=False) + "\n")


def _optimize_loaded(loaded):
    def optimize(args: argparse.Namespace, graph, keep_egraph: bool = False):
        return optimize_from_args(args, graph, keep_egraph=keep_egraph, params=loaded.params)

    return optimize


def _rebuild(args: argparse.Namespace):
    """The graph to lower for args (its --dim): what run() computes, for --dynamic."""
    loaded = load_model_from_args(args)
    return graph_for_target(args, loaded.graph, params=loaded.params)[0]


def _write_mlir(args: argparse.Namespace, loaded, lowered, quant) -> int:
    """--emit mlir / mlir-tiled: the extracted graph as upstream MLIR (no hwsim lowering)."""
    from backend.mlir import MlirEmitError, emit_mlir, statement_locations
    from eqsat.errors import UserError

    try:
        module = emit_mlir(
            lowered,
            locations=statement_locations(loaded.model),
            source=args.model,
            consts=quant.all_params if quant else compile_time_params(lowered, loaded.params),
            tiled=args.emit == "mlir-tiled",
            shapes=dynamic_shapes(args, loaded, lowered, _rebuild),
        )
    except MlirEmitError as err:
        raise UserError(f"{args.model}: cannot emit MLIR: {err}") from None
    if args.output:
        write_atomic(args.output, module.text)
    else:
        sys.stdout.write(module.text)
    out = sys.stderr if not args.output else sys.stdout
    print(
        f"{lowered.name}: func.func @{module.func} with {len(module.args)} arguments, "
        f"{len(module.results)} results, {module.text.count(chr(10))} lines of MLIR",
        file=out,
    )
    _report_quant(args, quant, lowered, out, "function arguments")
    if args.output:
        print(f"wrote MLIR to {args.output}", file=out)
    return 0
