"""The `--quantize` flags of optimize/compile/simulate and what they do around the
optimizer: calibrate and plan before saturation, measure SQNR after."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eqsat.fileio import load_arrays, params_file_for, print_warning, save_arrays, spec_for
from eqsat.flags import UsageError, add_allow_extra_flag
from eqsat.interpreter import evaluate, random_bindings, random_inputs
from eqsat.ir.graph import Graph
from eqsat.quant.calibrate import (
    DEFAULT_PERCENTILE,
    METHODS,
    RANDOM_SAMPLES,
    calibration_samples,
)
from eqsat.quant.passes import QuantPlan, plan_quantization
from eqsat.quant.qparams import SCHEMES as ACTIVATION_SCHEMES
from eqsat.quant.run import QuantRun, int8_kernels
from eqsat.quant.sqnr import format_sqnr, sqnr_db

AUTO_SQNR_MIN = 35.0  # --quantize auto's budget without --sqnr-min
SCHEMES = ("int8", "w8a16", "w4a16", "fp8", "bf16", "auto")  # w*, fp8, bf16: quant/weight_only.py


def add_quant_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("quantization")
    g.add_argument(
        "--quantize",
        choices=SCHEMES,
        help="post-training quantization: int8 (per-channel symmetric weights, per-tensor "
        "asymmetric activations, i32 accumulation, fixed-point requantization); "
        "w8a16 / w4a16 (weight-only: int8 / int4 weights with group-wise scales, "
        "dequantized on the way into SRAM; 16-bit activations); fp8 (E4M3 weights, group "
        "scales, where the hardware declares fp8); bf16 (bf16 weights and "
        "activations); auto (a precision per layer within --sqnr-min); enables the "
        "approximate rules of rules/quant.rules",
    )
    from eqsat.quant.weight_only_run import add_weight_only_flags

    add_weight_only_flags(g)
    g.add_argument(
        "--calibrate",
        metavar="FILE.npz",
        help="calibration samples: each input by name, one sample or N stacked on a leading "
        "axis; params by name are the weights to quantize (default: seeded random inputs, "
        "with a warning)",
    )
    g.add_argument(
        "--calibration",
        choices=METHODS,
        default="minmax",
        help="activation range: minmax (default), percentile, mse (the clip with the least "
        "expected quantization error) or entropy (TensorRT's KL calibration)",
    )
    g.add_argument(
        "--percentile",
        type=float,
        default=DEFAULT_PERCENTILE,
        metavar="P",
        help=f"with --calibration percentile: keep the P-th/(100-P)-th percentiles "
        f"(default {DEFAULT_PERCENTILE:g})",
    )
    g.add_argument(
        "--smooth-alpha",
        type=float,
        nargs="?",
        const=0.5,
        default=None,
        metavar="A",
        help="SmoothQuant: divide each matmul input's channels by s = max|x|^A / "
        "max|w|^(1-A), multiply the weights' rows by s (exact), the division folded into "
        "a norm's gamma or a gated product's up projection (default A 0.5; off without "
        "the flag)",
    )
    from eqsat.quant.rotation import MODES as ROTATE_MODES

    g.add_argument(
        "--rotate",
        choices=ROTATE_MODES,
        default="auto",
        help="online Hadamard rotation of int8 matmul inputs (x @ w = (x H) @ (H^T w), H^T w "
        "compiled in, x H a fast Walsh-Hadamard transform at run time): auto (default) "
        "where calibration shows the activation's int8 SQNR gains >= 1 dB (heavy tails, as "
        "SwiGLU's gated product), all (every input whose last axis has a power-of-two "
        "factor >= 16), none",
    )
    g.add_argument(
        "--activation-scheme",
        choices=ACTIVATION_SCHEMES,
        default="asymmetric",
        help="int8 activation ranges: asymmetric (default; a zero point), symmetric (zero "
        "point 0) or auto (symmetric where the calibrated range is balanced within 10%%, "
        "asymmetric where it is skewed, as after ReLU/GELU/SiLU)",
    )
    g.add_argument(
        "--sqnr-min",
        type=float,
        default=None,
        metavar="DB",
        help="with --quantize auto: the end-to-end SQNR budget; each layer's sensitivity is "
        "measured on calibration data and every layer gets one of the precisions the "
        "hardware file declares (int8, fp8, w8a16, w4a16, bf16, f32): the fewest estimated "
        "cycles whose predicted SQNR stays >= DB (an exact knapsack), kept only if faster "
        "than every uniform precision that meets DB (default 35). With --quantize int8: an "
        "accuracy floor; where int8 everywhere is predicted under DB, the layer groups "
        "whose int8 noise costs the most per cycle stay in a higher declared precision "
        "(the same knapsack; the report names them; default: no floor)",
    )
    add_allow_extra_flag(g)


def check_flags(args: argparse.Namespace) -> None:
    quant = getattr(args, "quantize", None)
    if not quant and getattr(args, "calibrate", None):
        raise UsageError("--calibrate needs --quantize int8")
    if quant and getattr(args, "verify", False):
        raise UsageError(
            "--verify checks an exact optimization on random params; with --quantize the "
            "check is the SQNR report (against the float model, with the quantized params)"
        )
    from eqsat.quant.weight_only_run import check_weight_only_flags

    check_weight_only_flags(args)
    if not 50.0 < args.percentile <= 100.0:
        raise UsageError(f"--percentile must be in (50, 100], got {args.percentile:g}")
    alpha = getattr(args, "smooth_alpha", None)
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise UsageError(f"--smooth-alpha must be in [0, 1], got {alpha:g}")
    if quant == "auto" and alpha is not None:
        raise UsageError("--quantize auto measures layers without smoothing; drop --smooth-alpha")


def calibration_specs(graph: Graph) -> dict:
    """What a --calibrate file may hold: inputs (one sample or N stacked), params."""
    specs = {str(n.attr("name")): spec_for(n.type, samples=True) for _, n in graph.inputs}
    specs.update({str(n.attr("name")): spec_for(n.type) for _, n in graph.params})
    return specs


def prepare(
    args: argparse.Namespace,
    graph: Graph,
    rounding: str,
    bindings: Mapping[str, np.ndarray] | None = None,
    warn=None,
    params: Mapping[str, np.ndarray] | None = None,
) -> QuantRun | None:
    """Calibrate and plan when --quantize is given. `bindings`: the values the caller
    will run with (simulate); else params come from the calibration file, the model's
    params file (`params`) or the seed (0), in that order."""
    check_flags(args)
    if not getattr(args, "quantize", None):
        return None
    if args.quantize not in ("int8", "auto"):  # weight-only (eqsat/quant/weight_only.py)
        from eqsat.quant.weight_only_run import prepare_weight_only

        return prepare_weight_only(args, graph, bindings, params)
    params_given = params
    warn = warn or print_warning
    arrays = (
        load_arrays(
            args.calibrate,
            calibration_specs(graph),
            allow_extra=getattr(args, "allow_extra", False),
            warn=warn,
        )
        if args.calibrate
        else None
    )
    names = {str(n.attr("name")) for _, n in graph.params}
    if bindings is not None:
        params = {k: np.asarray(v) for k, v in bindings.items() if k in names}
    else:
        params = {k: v for k, v in random_bindings(graph, 0).items() if k in names}
        params.update(params_given or {})
        for k, v in (arrays or {}).items():
            if k in names:
                params[k] = np.asarray(v)
    samples = calibration_samples(graph, arrays, args.calibrate or "")
    if arrays is None:
        warn(
            f"warning: no --calibrate file: activation ranges observed on {RANDOM_SAMPLES} "
            "seeded random (standard normal) inputs, not on real data"
        )
        described = f"{RANDOM_SAMPLES} seeded random samples"
    else:
        described = f"{len(samples)} sample(s) from {args.calibrate}"
    method = args.calibration
    if method == "percentile":
        described += f", percentile {args.percentile:g}"
    elif method == "minmax":
        described += ", min/max"
    else:
        described += f", {method}"
    alpha = getattr(args, "smooth_alpha", None)
    if alpha is not None:
        described += f", SmoothQuant alpha {alpha:g}"
    inputs = {str(n.attr("name")) for _, n in graph.inputs}
    if bindings is not None:  # what the caller runs
        eval_inputs = [{k: v for k, v in bindings.items() if k in inputs}]
    elif arrays is None:  # seed 0, which calibration (seeds 1..N) never saw
        eval_inputs = [random_inputs(graph, 0)]
    else:
        eval_inputs = samples
    if args.quantize == "auto":
        from eqsat.quant.auto import plan_auto
        from hwsim import load_hardware

        hw = load_hardware(args.hw)
        auto = plan_auto(
            graph,
            params,
            samples,
            hw,
            AUTO_SQNR_MIN if args.sqnr_min is None else args.sqnr_min,
            method,
            args.percentile,
            getattr(args, "activation_scheme", "asymmetric"),
            price=candidate_pricer(args, graph, hw, params, eval_inputs),
        )
        described += f", mixed precision for >= {auto.sqnr_min:g} dB"
        run = QuantRun(auto.plan, params, eval_inputs, described, scheme="auto")
        run.layer_choices, run.auto = auto.choices, auto
        return run
    scheme = getattr(args, "activation_scheme", "asymmetric")
    if scheme != "asymmetric":
        described += f", {scheme} activations"
    rotate = getattr(args, "rotate", "none")
    plan = plan_quantization(
        graph,
        params,
        samples,
        rounding,
        method,
        args.percentile,
        alpha,
        activation_scheme=scheme,
        rotate=rotate,
    )
    if any(r.chosen for r in plan.rotations):
        described += f", Hadamard rotation ({rotate})"
    floor = None
    if getattr(args, "sqnr_min", None) is not None:
        from eqsat.quant.floor import apply_floor
        from hwsim import load_hardware

        floor = apply_floor(graph, params, plan, samples, load_hardware(args.hw), args.sqnr_min)
        plan = floor.plan
        described += f", accuracy floor {args.sqnr_min:g} dB"
    run = QuantRun(plan, params, eval_inputs, described)
    run.floor = floor
    return run


def candidate_pricer(args: argparse.Namespace, graph: Graph, hw, params, eval_inputs):
    """`--quantize auto`'s judge of a whole plan: optimize it as the command will
    (same rules, limits, extractor) and measure it; (estimated cycles, SQNR per output)."""
    from eqsat.config import DEFAULT_EXTRACTOR, DEFAULT_LIMITS, ILP_TIME_LIMIT, limits_from_args
    from eqsat.pipeline import optimize
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths

    paths = getattr(args, "rules", None) or [DEFAULT_RULES_DIR]
    rules = compile_rule_paths(paths, include_approx=True)
    limits = limits_from_args(args) if hasattr(args, "iter_limit") else DEFAULT_LIMITS

    def price(plan: QuantPlan) -> tuple[int, dict[str, float]]:
        result = optimize(
            plan.graph,
            rules,
            hw,
            limits,
            extractor=getattr(args, "extract", DEFAULT_EXTRACTOR),
            ilp_time_limit=getattr(args, "ilp_time_limit", ILP_TIME_LIMIT),
            facts=plan.seeds,
            baseline=graph,
        )
        return int(result.after.cycles), measured(result.graph, plan)

    refs: list[dict[str, np.ndarray]] = []

    def measured(optimized: Graph, plan: QuantPlan) -> dict[str, float]:
        """SQNR per output over the evaluation inputs (the float outputs computed once)."""
        if not refs:
            refs.extend(evaluate(graph, {**params, **sample}) for sample in eval_inputs)
        got = [evaluate(optimized, {**params, **plan.params, **sample}) for sample in eval_inputs]
        return {
            k: sqnr_db(
                np.concatenate([np.ravel(r[k]) for r in refs]).astype(np.float64),
                np.concatenate([np.ravel(g[k]) for g in got]).astype(np.float64),
            )
            for k in refs[0]
        }

    return price


def measure(run: QuantRun, original: Graph, optimized: Graph) -> dict[str, float]:
    """SQNR of each output of `optimized` against the float `original`, over the
    evaluation inputs (stacked)."""
    refs: dict[str, list[np.ndarray]] = {}
    gots: dict[str, list[np.ndarray]] = {}
    for sample in run.eval_inputs:
        ref = evaluate(original, {**run.params, **sample})
        got = evaluate(optimized, {**run.all_params, **sample})
        for k in ref:
            refs.setdefault(k, []).append(np.asarray(ref[k], dtype=np.float64).reshape(-1))
            gots.setdefault(k, []).append(np.asarray(got[k], dtype=np.float64).reshape(-1))
    run.sqnr = {k: sqnr_db(np.concatenate(refs[k]), np.concatenate(gots[k])) for k in refs}
    return run.sqnr


def report(run: QuantRun, optimized: Graph) -> dict:
    if run.scheme == "auto":  # --quantize auto: per layer precision, scales, noise, cycles
        from eqsat.quant.report import auto_report

        return auto_report(run, optimized)
    if run.scheme != "int8":
        from eqsat.quant.weight_only_run import weight_only_report

        return weight_only_report(run, optimized)
    from eqsat.quant.floor import floor_report

    plan = run.plan
    return {
        "scheme": "int8",
        "calibration": run.calibration,
        "quantizable_matmuls": len(plan.layers),
        "int8_kernels": int8_kernels(optimized),
        "activations": {
            t.name: {"lo": t.lo, "hi": t.hi, "scale": t.scale, "zero_point": t.zero_point}
            for t in plan.tensors
        },
        "smoothed_activations": plan.smoothed,
        "rotations": [
            {
                "activation": r.label,
                "block": r.block,
                "int8_sqnr_db": round(r.plain_db, 3),
                "rotated_int8_sqnr_db": round(r.rotated_db, 3),
                "rotated": r.chosen,
            }
            for r in plan.rotations
        ],
        **({"floor": floor_report(run.floor)} if run.floor else {}),
    }


def summary_lines(run: QuantRun, optimized: Graph) -> list[str]:
    if run.scheme == "auto":
        from eqsat.quant.report import auto_summary

        return auto_summary(run, optimized)
    if run.scheme != "int8":
        from eqsat.quant.weight_only_run import weight_only_summary

        return weight_only_summary(run, optimized)
    lines = [
        f"int8: {int8_kernels(optimized)} int8 kernels for {len(run.plan.layers)} quantizable "
        f"matmuls and convs; calibration: {run.calibration}",
        f"SQNR vs float: {format_sqnr(run.sqnr)}",
    ]
    lines += [  # --rotate: each candidate activation's int8 SQNR as written and rotated
        f"  rotate {r.label} (block {r.block}): int8 {r.plain_db:.1f} dB, rotated "
        f"{r.rotated_db:.1f} dB: {'rotated' if r.chosen else 'as written'}"
        for r in run.plan.rotations
    ]
    if run.floor is not None:
        from eqsat.quant.floor import floor_summary

        lines += floor_summary(run.floor)
    return lines


def used_params(run: QuantRun, graph: Graph) -> dict[str, np.ndarray]:
    """The new (quantized) params `graph` reads."""
    names = {str(n.attr("name")) for _, n in graph.params}
    return {k: v for k, v in run.plan.params.items() if k in names}


def write_params(run: QuantRun, graph: Graph, output: str) -> Path:
    """The quantized params next to OUT.asm (OUT.params.npz)."""
    path = params_file_for(output)
    save_arrays(path, used_params(run, graph))
    return path
