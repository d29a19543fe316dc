"""`eqsat simulate`: run a model (compiled here) or an assembly program on hwsim.

For a model, the simulated outputs are compared with the reference interpreter run on
the ORIGINAL model with the same inputs and params (seeded, overridden by --inputs).
The relative error is normwise: max |sim - ref| / max |ref| over each output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from eqsat.bundle import cli as bundle_cli
from eqsat.commands.common import (
    add_verify_flags,
    bindings_from_args,
    compile_time_params,
    load_model_from_args,
)
from eqsat.commands.compile import add_no_optimize_flag, graph_for_target
from eqsat.commands.optimize import add_optimize_flags
from eqsat.fileio import ArraySpec, load_arrays, print_warning, save_arrays, write_atomic
from eqsat.flags import UsageError, add_dim_flag, seed, verify_seeds
from eqsat.interpreter import evaluate
from eqsat.quant import cli as quant_cli
from eqsat.quant.sqnr import format_sqnr, json_sqnr, sqnr_db
from eqsat.roofline import Roofline, model_roofline
from eqsat.summary import human_bytes
from eqsat.verify.translation import max_errors


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a model or an assembly program on the accelerator",
        description=(
            "Compile MODEL (optimized unless --no-optimize) or read PROGRAM.asm, run it on "
            "the hwsim simulator and print cycles, utilization per unit, DRAM traffic and "
            "the share of the roofline bound reached. For a model, also the max abs/rel "
            "error against the reference interpreter on the original model."
        ),
    )
    p.add_argument("source", metavar="MODEL|PROGRAM.asm", help="a model file or hwsim assembly")
    add_dim_flag(p)
    add_optimize_flags(p)
    add_no_optimize_flag(p)
    p.add_argument(
        "--inputs", metavar="FILE.npz", help="values of inputs/params (or buffers), by name"
    )
    p.add_argument(
        "--seed", type=seed, default=0, help="seed for values not in --inputs (default 0)"
    )
    p.add_argument("--report", metavar="SIM.json", help="write the statistics as JSON here")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the simulated outputs here")
    add_verify_flags(p, "the simulated program (and so the optimizer and the backend)")
    bundle_cli.add_simulate_flags(p)
    p.set_defaults(func=run)


def _model_run(args: argparse.Namespace, hw_name: str):
    from backend import compile_graph
    from hwsim import simulate

    args.model = args.source
    loaded = load_model_from_args(args)
    args.loaded_onnx = loaded.onnx
    graph = loaded.graph
    bindings = bindings_from_args(args, loaded)
    lowered, hw, opt = graph_for_target(args, graph, bindings)
    quant = opt.quant if opt is not None else None
    feeds = {**bindings, **quant.plan.params} if quant else bindings
    consts = quant.all_params if quant else compile_time_params(lowered, feeds)
    compiled = compile_graph(lowered, hw, consts)
    result = simulate(compiled.program, hw, compiled.feeds(feeds), record=_record(args))
    outputs = compiled.results(result.outputs)
    if args.verify:  # checked before run() writes anything
        from eqsat.verify.translation import validate_program

        extra = quant.plan.params if quant else None
        args.validation = validate_program(
            graph, compiled, hw, verify_seeds(args), args.verify_tol, extra, consts
        )
    reference = evaluate(graph, bindings)
    errors = max_errors(outputs, reference)
    if quant is not None:  # the simulated int8 program against the float model
        quant.sqnr = {k: sqnr_db(reference[k], outputs[k]) for k in reference}
    args.roofline = model_roofline(graph, hw)
    args.prepared = compiled.prepared_weights()
    args.lowered = lowered  # what the --report's quantization section describes
    return hw, compiled.program, result.report, outputs, errors, quant


def _asm_run(args: argparse.Namespace):
    from hwsim import load_hardware, parse, simulate
    from hwsim.asm import read_text as read_asm_text

    if not args.no_optimize and args.rules:
        raise UsageError("--rules applies to models; an assembly program is simulated as is")
    path = Path(args.source)
    try:
        text = read_asm_text(path)
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from None
    program = parse(text, str(path))
    hw = load_hardware(args.hw)
    given = {}
    if args.inputs:
        specs = {b.name: ArraySpec(tuple(b.shape)) for b in program.inputs()}
        given = load_arrays(
            args.inputs,
            specs,
            allow_extra=args.allow_extra,
            warn=print_warning,
            what="input buffer of the program",
        )
    feeds = random_buffers(program, args.seed)
    for name, value in given.items():
        if name in feeds:
            feeds[name] = np.asarray(value).astype(feeds[name].dtype)
    result = simulate(program, hw, feeds, record=_record(args))
    return hw, program, result.report, result.outputs, None, None


def _record(args: argparse.Namespace) -> bool:
    """Whether the run keeps its event record (`eqsat profile` sets args.record)."""
    return bool(getattr(args, "record", False))


def simulated_run(args: argparse.Namespace):
    """(hw, program, report, outputs, errors, quant) of args.source: a model compiled
    here (errors: against the reference interpreter) or an assembly program."""
    if Path(args.source).suffix == ".asm":
        if getattr(args, "quantize", None):
            raise UsageError("--quantize applies to models; an assembly program is simulated as is")
        return _asm_run(args)
    return _model_run(args, args.hw)


def random_buffers(program, seed: int) -> dict[str, np.ndarray]:
    """Seeded values for every input buffer: floats standard normal, ints in a small range."""
    rng = np.random.default_rng(seed)
    out = {}
    for b in program.inputs():
        if b.dtype in ("f32", "bf16"):
            out[b.name] = rng.standard_normal(b.shape).astype(np.float32)
        else:
            lo, hi = (-128, 127) if b.dtype == "i8" else (-1000, 1000)
            out[b.name] = rng.integers(lo, hi, b.shape, endpoint=True).astype(
                np.int8 if b.dtype == "i8" else np.int32
            )
    return out


def report_dict(hw, program, report, errors, roofline: Roofline | None = None) -> dict:
    """The statistics; `roofline` is the model's bound (None: the program's own)."""
    bound = roofline.cycles if roofline is not None else report.roofline_cycles
    return {
        "hardware": hw.name,
        "cycles": report.cycles,
        "roofline_cycles": bound,
        "roofline_fraction": bound / report.cycles if report.cycles else 0.0,
        "roofline_of": "model" if roofline is not None else "program",
        "roofline_bound": roofline.bound if roofline is not None else None,
        "program_roofline_cycles": report.roofline_cycles,
        "dram_bytes": report.dram_bytes,
        "dram_bytes_read": report.dram_bytes_read,
        "dram_bytes_written": report.dram_bytes_written,
        "peak_sram_bytes": report.peak_sram_bytes,
        "peak_acc_bytes": report.peak_acc_bytes,
        "instructions": len(program.instrs),
        "instr_counts": dict(sorted(report.instr_counts.items())),
        "utilization": {k: round(v, 6) for k, v in report.utilization.items()},
        "mac_utilization": round(report.mac_utilization, 6),
        "max_abs_error": None if errors is None else errors[0],
        "max_rel_error": None if errors is None else errors[1],
        "kernels": [{"name": k.name, "cycles": k.cycles} for k in report.kernels],
    }


def format_report(d: dict) -> str:
    util = ", ".join(f"{k} {v:.0%}" for k, v in d["utilization"].items())
    lines = [
        f"cycles        {d['cycles']:,} on {d['hardware']} ({d['roofline_of']} roofline "
        f"{d['roofline_cycles']:,}{_bound(d)}: {d['roofline_fraction']:.1%} of the bound reached)",
        f"utilization   {util}; MACs {d['mac_utilization']:.0%}",
        f"DRAM traffic  {human_bytes(d['dram_bytes'])} (read {human_bytes(d['dram_bytes_read'])}, "
        f"written {human_bytes(d['dram_bytes_written'])})",
        f"peak SRAM     {human_bytes(d['peak_sram_bytes'])}; {d['instructions']:,} instructions, "
        f"{len(d['kernels'])} kernels",
    ]
    if d.get("prepared_weights"):
        lines.append(prepared_line(d["prepared_weights"]))
    if d["max_abs_error"] is not None:
        lines.append(
            f"vs reference  max abs error {d['max_abs_error']:.3g}, "
            f"max rel error {d['max_rel_error']:.3g}"
        )
    return "\n".join(lines)


def prepared_line(prepared: list[dict]) -> str:
    """The weights computed once at load time, not per inference (eqsat/weights.py)."""
    total = sum(p["bytes"] for p in prepared)
    names = ", ".join(p["buffer"] for p in prepared[:4]) + (", ..." if len(prepared) > 4 else "")
    return (
        f"weights       {len(prepared)} prepared at load time ({human_bytes(total)}: {names}),"
        " not counted per inference"
    )


def _bound(d: dict) -> str:
    return f", {d['roofline_bound']}-bound" if d.get("roofline_bound") else ""


def run(args: argparse.Namespace) -> int:
    if bundle_cli.is_bundle(args.source):  # BUNDLE.eqsb --dim S=N: dispatch to a bucket
        return bundle_cli.run_simulate(args)
    from eqsat.control.cli import control_command  # models with if/loop regions

    if (code := control_command(args, "simulate")) is not None:
        return code
    is_asm = Path(args.source).suffix == ".asm"
    hw, program, report, outputs, errors, quant = simulated_run(args)
    d = report_dict(hw, program, report, errors, getattr(args, "roofline", None))
    if quant is not None:
        d["sqnr_db"] = json_sqnr(quant.sqnr)
        d["quantization"] = quant_cli.report(quant, args.lowered)  # per layer, as optimize's
    if not is_asm:
        d["prepared_weights"] = [
            {"buffer": name, "bytes": size} for name, size in getattr(args, "prepared", [])
        ]
    if args.output:
        onnx = getattr(args, "loaded_onnx", None)
        save_arrays(args.output, onnx.results(outputs) if onnx is not None else outputs)
    if args.report:
        write_atomic(args.report, json.dumps(d, indent=2) + "\n")
    print(format_report(d))
    if getattr(args, "validation", None) is not None:
        print(args.validation.summary("the simulated program"))
    if quant is not None:
        print(f"{quant.scheme:<13} SQNR vs float model {format_sqnr(quant.sqnr)}")
        if quant.scheme == "auto":  # each layer group's precision, noise and saving
            print("\n".join(quant_cli.summary_lines(quant, args.lowered)))
    if args.output:
        print(f"wrote outputs to {args.output}")
    if args.report:
        print(f"wrote report to {args.report}")
    return 0
