"""The `--quantize w4a16 | w8a16 | bf16` side of the quantization flags (eqsat/quant/cli.py):
the --group-size flag, its checks, planning against the hardware file, and the report."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import numpy as np

from eqsat.flags import UsageError
from eqsat.interpreter import random_bindings, random_inputs
from eqsat.ir.graph import Graph
from eqsat.quant.run import QuantRun
from eqsat.quant.sqnr import format_sqnr
from eqsat.quant.weight_only import (
    DEFAULT_GROUP,
    DEFAULT_SCALE_DTYPE,
    SCHEMES,
    check_hardware,
    plan_weight_only,
)
from hwsim.hardware import load_hardware


def add_weight_only_flags(g) -> None:
    g.add_argument(
        "--group-size",
        type=int,
        metavar="G",
        help=f"with --quantize w4a16/w8a16/fp8: input channels that share one weight scale "
        f"(default {DEFAULT_GROUP}, as GPTQ/AWQ kernels use; an even number dividing the "
        "weights' rows)",
    )
    g.add_argument(
        "--group-scale-dtype",
        choices=("f32", "bf16"),
        help="with --quantize w4a16/w8a16/fp8: the dtype the group scales are stored in "
        f"(default {DEFAULT_SCALE_DTYPE}, as GPTQ/AWQ kernels store theirs in 16 bits; the "
        "weights are quantized on the rounded scales' grid, the scales used in f32)",
    )
    g.add_argument(
        "--weight-bits",
        action="append",
        metavar="NAME=BITS",
        help="with --quantize w4a16/w8a16: store the weight param NAME at BITS (4 or 8) "
        "instead of the scheme's width (repeatable), e.g. --weight-bits wk=8 --weight-bits "
        "wv=8 keeps a decoder's key/value projections, whose outputs are the cache, in int8",
    )


def weight_bits(args: argparse.Namespace) -> dict[str, int]:
    """--weight-bits NAME=BITS pairs as a mapping (checked: BITS 4 or 8)."""
    out: dict[str, int] = {}
    for spec in getattr(args, "weight_bits", None) or []:
        name, sep, bits = spec.partition("=")
        if not sep or not name or bits not in ("4", "8"):
            raise UsageError(f"--weight-bits {spec}: expected NAME=4 or NAME=8 (a weight param)")
        out[name] = int(bits)
    return out


def check_weight_only_flags(args: argparse.Namespace) -> None:
    quant = getattr(args, "quantize", None)
    group = getattr(args, "group_size", None)
    if weight_bits(args) and quant not in ("w4a16", "w8a16"):
        raise UsageError("--weight-bits applies to --quantize w4a16 or w8a16")
    if group is not None and quant not in ("w4a16", "w8a16", "fp8"):
        raise UsageError("--group-size applies to --quantize w4a16, w8a16 or fp8")
    if getattr(args, "group_scale_dtype", None) and quant not in ("w4a16", "w8a16", "fp8"):
        raise UsageError("--group-scale-dtype applies to --quantize w4a16, w8a16 or fp8")
    if group is not None and (group < 2 or group % 2):
        raise UsageError(f"--group-size must be an even integer >= 2, got {group}")
    if quant in SCHEMES and getattr(args, "calibrate", None):
        raise UsageError(
            f"--calibrate: --quantize {quant} quantizes weights only and needs no "
            "calibration (it is for int8)"
        )


def prepare_weight_only(
    args: argparse.Namespace,
    graph: Graph,
    bindings: Mapping[str, np.ndarray] | None,
    params: Mapping[str, np.ndarray] | None,
):
    """The QuantRun of a weight-only scheme: params from `bindings` (what simulate runs),
    else the model's params file over seeded random ones; SQNR on seeded random inputs
    (or the bindings' inputs)."""
    check_weight_only_flags(args)
    scheme = SCHEMES[args.quantize]
    hw = load_hardware(args.hw)
    act = check_hardware(scheme, hw, str(args.hw))
    group = args.group_size or DEFAULT_GROUP
    names = {str(n.attr("name")) for _, n in graph.params}
    inputs = {str(n.attr("name")) for _, n in graph.inputs}
    if bindings is not None:
        values = {k: np.asarray(v) for k, v in bindings.items() if k in names}
        eval_inputs = [{k: v for k, v in bindings.items() if k in inputs}]
    else:
        values = {k: v for k, v in random_bindings(graph, 0).items() if k in names}
        values.update(params or {})
        eval_inputs = [random_inputs(graph, 0)]
    widths = weight_bits(args)
    sdtype = getattr(args, "group_scale_dtype", None) or DEFAULT_SCALE_DTYPE
    plan = plan_weight_only(graph, values, scheme.bits, group, act, scheme.fmt, widths, sdtype)
    unknown = sorted(set(widths) - set(plan.layers))
    if unknown:
        raise UsageError(
            f"--weight-bits {', '.join(unknown)}: not the weight of a quantizable matmul of "
            f"{graph.name} (those are: {', '.join(plan.layers) or 'none'})"
        )
    grouping = "" if scheme.bits == 16 else f", groups of {group} ({sdtype} scales)"
    kept = "".join(f", {name} int{b}" for name, b in sorted(widths.items()))
    described = f"weights only{grouping}{kept}; activations {act}"
    return QuantRun(plan, values, eval_inputs, described, scheme=scheme.name)


def weight_only_kernels(graph: Graph) -> int:
    return sum(1 for _, n in graph if n.op == "matmul_wq")


def weight_only_report(run, optimized: Graph) -> dict:
    return {
        "scheme": run.scheme,
        "calibration": None,
        "detail": run.calibration,
        "quantizable_matmuls": len(run.plan.layers),
        "weight_only_kernels": weight_only_kernels(optimized),
        "param_bytes": sum(n.type.nbytes for _, n in optimized.params),
    }


def weight_only_summary(run, optimized: Graph) -> list[str]:
    kernels = (
        f"{weight_only_kernels(optimized)} weight-only kernels"
        if run.scheme != "bf16"
        else f"{sum(1 for _, n in optimized.params if n.type.dtype.value == 'bf16')} bf16 weights"
    )
    return [
        f"{run.scheme}: {kernels} for {len(run.plan.layers)} weights of quantizable matmuls "
        f"({run.calibration})",
        f"SQNR vs float: {format_sqnr(run.sqnr)}",
    ]
