"""`eqsat optimize | compile | simulate | run` on a model with `if`/`loop` regions.

Each command calls `control_command(args, NAME)` first; it handles the model when the
file holds regions and returns the exit code, else None (the static path goes on).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from eqsat.control.interpret import run_control
from eqsat.control.load import LoadedControl, file_has_regions, load_control
from eqsat.control.optimize import ControlOptimizeResult, format_costs, optimize_control
from eqsat.fileio import load_arrays, save_arrays, write_atomic
from eqsat.flags import UsageError
from frontend.ast import RegionAssign


def control_command(args: argparse.Namespace, command: str) -> int | None:
    path = getattr(args, "model", None) or getattr(args, "source", None)
    dims = dict(getattr(args, "dim", None) or [])
    if command == "simulate" and path is not None and str(path).endswith(".asm"):
        from hwsim.asm import read_text
        from hwsim.host_asm import is_host_text

        if is_host_text(read_text(path)):
            return _simulate_host_listing(args, path)
        return None
    if path is None or not file_has_regions(path, dims):
        return None
    for flag in ("quantize", "explain", "egraph_out"):
        if getattr(args, flag, None):
            raise UsageError(f"--{flag.replace('_', '-')} does not take models with regions yet")
    if command == "compile" and getattr(args, "emit", "asm") != "asm":
        raise UsageError("--emit: models with regions compile to hwsim assembly only")
    loaded = load_control(path, dims)
    if not any(isinstance(i, RegionAssign) for i in loaded.model.items):
        return None  # an ONNX If folded at import: a static graph after all
    return {"optimize": _optimize, "compile": _compile, "simulate": _simulate, "run": _run}[
        command
    ](args, loaded)


def _say(args: argparse.Namespace):
    def progress(message: str) -> None:
        if not getattr(args, "quiet", False):
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    return progress


def optimized(args: argparse.Namespace, loaded: LoadedControl):
    """(program to lower, hardware, ControlOptimizeResult or None)."""
    from eqsat.config import limits_from_args
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
    from hwsim.hardware import load_hardware

    hw = load_hardware(args.hw)
    if getattr(args, "no_optimize", False):
        return loaded.program, hw, None
    rules = compile_rule_paths(args.rules or [DEFAULT_RULES_DIR])
    result = optimize_control(
        loaded.program,
        rules,
        hw,
        limits_from_args(args),
        extractor=getattr(args, "extract", "greedy"),
        progress=_say(args),
    )
    return result.program, hw, result


def bindings(args: argparse.Namespace, loaded: LoadedControl) -> dict[str, np.ndarray]:
    given = None
    if getattr(args, "inputs", None):
        given = load_arrays(args.inputs, loaded.input_specs())
    return loaded.bindings(getattr(args, "seed", 0) or 0, given, getattr(args, "inputs", "") or "")


def summary(result: ControlOptimizeResult, hw) -> str:
    p = result.program
    lines = [f"{p.name} on {hw.name}: {len(p.steps)} steps, {p.regions()} regions"]
    lines += [f"  {line}" for line in result.log.lines] or ["  (no control pass applied)"]
    for label, res in result.results.items():
        lines.append(
            f"  {label:<14} est. cycles {res.before.cycles:>12,} -> {res.after.cycles:>12,}"
            f"  kernels {res.before.kernels} -> {res.after.kernels}"
        )
    lines.append("estimated cycles by step (host control: dispatches and read-backs):")
    lines += format_costs(result.before, result.after)
    return "\n".join(lines)


def _optimize(args: argparse.Namespace, loaded: LoadedControl) -> int:
    _, hw, result = optimized(args, loaded)
    validation = None
    if getattr(args, "verify", False):  # before anything is written
        from eqsat.control.verify import validate_control
        from eqsat.flags import verify_seeds

        validation = validate_control(
            loaded.program,
            lambda values: run_control(result.program, values)[0],
            "the optimized model",
            verify_seeds(args),
            args.verify_tol,
            loaded.params,
        )
    if args.report:
        d = {
            "passes": result.log.lines,
            "before": [vars(c) for c in result.before],
            "after": [vars(c) for c in result.after],
        }
        write_atomic(args.report, json.dumps(d, indent=2) + "\n")
    print(summary(result, hw))
    if validation is not None:
        print(validation.summary("the optimized model"))
    if args.output:
        from eqsat.control.to_model import control_to_model
        from eqsat.loading import write_model_files
        from frontend import print_model

        model, arrays = control_to_model(result.program)
        arrays.update(loaded.params)
        wrote = write_model_files(args.output, print_model(model), arrays)
        print(f"wrote optimized model to {args.output}" + (f" and {wrote}" if wrote else ""))
    return 0


def _compile(args: argparse.Namespace, loaded: LoadedControl) -> int:
    from backend.control import compile_control

    program, hw, _result = optimized(args, loaded)
    compiled = compile_control(program, hw)
    if args.output:
        write_atomic(args.output, compiled.asm)
    else:
        sys.stdout.write(compiled.asm)
    out = sys.stderr if not args.output else sys.stdout
    print(
        f"{program.name} for {hw.name}: {len(compiled.compiled)} programs "
        f"({program.regions()} regions), {compiled.instructions()} instructions",
        file=out,
    )
    if args.output:
        print(f"wrote assembly to {args.output}", file=out)
    return 0


def _simulate(args: argparse.Namespace, loaded: LoadedControl) -> int:
    from backend.control import compile_control

    values = bindings(args, loaded)
    program, hw, _ = optimized(args, loaded)
    compiled = compile_control(program, hw)
    outputs, report = compiled.run(values)
    reference, _trace = run_control(loaded.program, values)
    validation = None
    if getattr(args, "verify", False):  # before anything is written
        from eqsat.control.verify import validate_control
        from eqsat.flags import verify_seeds

        validation = validate_control(
            loaded.program,
            lambda v: compiled.run(v)[0],
            "the simulated program",
            verify_seeds(args),
            args.verify_tol,
            loaded.params,
        )
    errors = {}
    for name, want in reference.items():
        got = outputs[name].astype(np.float64)
        want = want.astype(np.float64)
        err = float(np.abs(got - want).max()) if want.size else 0.0
        scale = float(np.abs(want).max()) if want.size else 0.0
        errors[name] = (err, err / scale if scale else err)
    d = {
        "hardware": hw.name,
        "cycles": report.cycles,
        "device_cycles": report.device_cycles,
        "host_control_cycles": report.control_cycles,
        "dispatches": report.dispatches,
        "dispatch_cycles": report.dispatch_cycles,
        "readbacks": report.readbacks,
        "readback_cycles": report.readback_cycles,
        "runs": dict(report.runs),
        "branches": [taken for _, taken in report.branches],
        "trips": report.trips,
        "instructions": sum(sum(r.instr_counts.values()) for _, r in report.reports),
        "errors": {k: {"max_abs": a, "max_rel": r} for k, (a, r) in errors.items()},
    }
    if args.output:
        onnx = loaded.onnx
        save_arrays(args.output, onnx.results(outputs) if onnx is not None else outputs)
    if args.report:
        write_atomic(args.report, json.dumps(d, indent=2) + "\n")
    print(f"{program.name} on {hw.name}: {report.cycles:,} cycles")
    print(f"  device        {report.device_cycles:>12,} cycles ({report.dispatches} programs run)")
    print(
        f"  host control  {report.control_cycles:>12,} cycles ({report.dispatches} dispatches "
        f"x {hw.dispatch_cycles:,}, {report.readbacks} read-backs x {hw.host_readback_cycles:,})"
    )
    if report.branches:
        taken = ", ".join("then" if t else "else" for _, t in report.branches)
        print(f"  branches      {taken}")
    if report.trips:
        print(f"  loop trips    {', '.join(map(str, report.trips))}")
    for name, (a, r) in errors.items():
        print(f"  {name}: max abs error {a:.3g}, max rel error {r:.3g} vs the reference")
    if validation is not None:
        print(validation.summary("the simulated program"))
    if args.output:
        print(f"wrote outputs to {args.output}")
    if args.report:
        print(f"wrote report to {args.report}")
    return 0


def _host_inputs(host, values: dict, seed: int) -> dict[str, np.ndarray]:
    """Values the host program reads before any program writes them: from `values`
    (--inputs), else drawn at random in the shape of the buffer they feed."""
    from hwsim.host import Branch, Run

    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    written: set[str] = set(host.constants)

    def need(name: str, make) -> None:
        if name not in written and name not in out:
            out[name] = np.asarray(values[name]) if name in values else make()

    def walk(steps) -> None:
        for step in steps:
            if isinstance(step, Run):
                buffers = host.programs[step.program].buffer_map
                for f in step.feeds:
                    if f.value is None:
                        continue
                    if f.perm and f.value not in values and f.value not in written:
                        raise UsageError(
                            f"'{f.value}' is fed transposed: give its value with --inputs"
                        )
                    b = buffers[f.buffer]
                    need(f.value, lambda b=b: _random_buffer(rng, b))
                written.update(r.value for r in step.results)
            elif isinstance(step, Branch):
                if isinstance(step.cond, str):
                    need(step.cond, lambda: np.array(rng.integers(0, 2), dtype=np.int8))
                walk(step.then)
                walk(step.orelse)
                written.update(r for r, _, _ in step.results)
            else:
                for flag in (step.trips, step.cond):
                    if isinstance(flag, str) and not isinstance(flag, bool):
                        need(flag, lambda: np.array(rng.integers(1, 4), dtype=np.int32))
                for inner, init in step.carried:
                    fed = [
                        host.programs[run.program].buffer_map[f.buffer]
                        for run in step.body
                        if isinstance(run, Run)
                        for f in run.feeds
                        if f.value == inner and not f.perm
                    ]
                    if not fed and init not in values and init not in written:
                        raise UsageError(f"loop initial value '{init}': give it with --inputs")
                    need(init, lambda b=fed[:1]: _random_buffer(rng, b[0]))
                written.update(inner for inner, _ in step.carried)
                written.update([step.index] if step.index else [])
                walk(step.body)
                written.update(step.next_values)
                written.update(r for r, _ in step.results)

    walk(host.steps)
    return out


def _random_buffer(rng, buffer) -> np.ndarray:
    if buffer.dtype in ("f32", "bf16"):
        return rng.standard_normal(buffer.shape).astype(np.float32)
    return rng.integers(-3, 4, size=buffer.shape).astype(
        np.int32 if buffer.dtype == "i32" else np.int8
    )


def _simulate_host_listing(args: argparse.Namespace, path) -> int:
    """`eqsat simulate OUT.asm` of a host listing (`eqsat compile` of a model with
    regions): the values it reads come from --inputs by name, else at random."""
    from hwsim.asm import read_text
    from hwsim.hardware import load_hardware
    from hwsim.host import run_host
    from hwsim.host_asm import parse_host_program

    host = parse_host_program(read_text(path), str(path))
    hw = load_hardware(args.hw)
    given = load_arrays(args.inputs) if getattr(args, "inputs", None) else {}
    values = _host_inputs(host, given, getattr(args, "seed", 0) or 0)
    outputs, report = run_host(host, hw, values)
    if args.output:
        save_arrays(args.output, outputs)
    print(f"{host.name} on {hw.name}: {report.cycles:,} cycles")
    print(f"  device        {report.device_cycles:>12,} cycles ({report.dispatches} programs run)")
    print(
        f"  host control  {report.control_cycles:>12,} cycles ({report.dispatches} dispatches "
        f"x {hw.dispatch_cycles:,}, {report.readbacks} read-backs x {hw.host_readback_cycles:,})"
    )
    if report.trips:
        print(f"  loop trips    {', '.join(map(str, report.trips))}")
    if args.output:
        print(f"wrote outputs to {args.output}")
    return 0


def _run(args: argparse.Namespace, loaded: LoadedControl) -> int:
    from eqsat.summary import describe_value

    if getattr(args, "backend", "reference") not in (None, "reference", "interpreter"):
        raise UsageError("--backend: models with regions run on the reference interpreter only")
    values = bindings(args, loaded)
    outputs, trace = run_control(loaded.program, values)
    if loaded.onnx is not None:
        outputs = loaded.onnx.results(outputs)
    if getattr(args, "save_inputs", None):
        save_arrays(args.save_inputs, values)
    if args.output:
        save_arrays(args.output, outputs)
    n = len(outputs)
    print(f"model {loaded.program.name}: {n} output{'s' if n != 1 else ''}")
    for name, value in outputs.items():
        print(describe_value(name, value))
    for k, taken in trace.branches:
        print(f"step {k}: if took the {'then' if taken else 'else'} branch")
    for k, trips in trace.trips:
        print(f"step {k}: loop ran {trips} trip{'s' if trips != 1 else ''}")
    if args.output:
        print(f"wrote outputs to {args.output}")
    return 0


def import_with_regions(args: argparse.Namespace, imported, onnx_path, source) -> int:
    """`eqsat import` of an ONNX graph whose If/Loop/Scan became regions."""
    from eqsat.control.check import check_control_model
    from eqsat.loading import params_file_for, write_model_files
    from frontend import print_model

    shown = str(params_file_for(args.output or "OUT.model"))
    program = check_control_model(imported.model, None, imported.arrays, shown)
    print(f"imported {source} as model '{program.name}' with {program.regions()} region(s)")
    for io in imported.inputs:
        print(f"  input  {io.name}: {program.inputs.get(io.name, '?')}")
    for io in imported.outputs:
        print(f"  output {io.name} (onnx '{io.onnx_name}')")
    for note in imported.notes:
        print(f"  note: {note}")
    if args.check:
        from eqsat.control.onnx_check import compare_control_with_onnxruntime

        errors = compare_control_with_onnxruntime(onnx_path, imported, program, args.seed)
        for name, err in errors.items():
            print(f"  vs ONNX Runtime  {name}: normwise relative error {err:.2e}")
        worst = max(errors.values(), default=0.0)
        if not worst <= args.check_tol:
            print(
                f"error: the import differs from ONNX Runtime by {worst:.2e} "
                f"(> {args.check_tol:g}); nothing written",
                file=sys.stderr,
            )
            return 1
    if args.output:
        wrote = write_model_files(args.output, print_model(imported.model), imported.arrays)
        print(f"wrote {args.output}" + (f" and {wrote}" if wrote else ""))
    return 0
