"""`eqsat import`: an ONNX model (or a saved torch.export program) to eqsat's format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eqsat.flags import UsageError, add_dim_flag, seed
from eqsat.fold import fold_constants
from eqsat.loading import params_file_for, write_model_files
from eqsat.summary import human_bytes, human_count, summarize
from frontend import check_model, print_model
from frontend.ast import RegionAssign

DEFAULT_CHECK_TOL = 1e-4


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="import an ONNX model (or a torch.export .pt2) into eqsat's format",
        description=(
            "Translate MODEL.onnx (opset 13 or newer) or a saved torch.export program "
            "(.pt2, exported to ONNX through torch.onnx first) into an eqsat model: "
            "OUT.model (text) and OUT.params.npz (initializers and large constants). "
            "Shape arithmetic is folded; dynamic axes become symbolic dimensions with a "
            "default (set defaults with --dim NAME=N; --static binds them all to numbers). "
            "Every command also takes a .onnx file directly."
        ),
    )
    p.add_argument("source", metavar="MODEL.onnx|MODEL.pt2", nargs="?", help="the model to import")
    p.add_argument(
        "-o", "--output", metavar="OUT.model", help="write the model here (and OUT.params.npz)"
    )
    add_dim_flag(p)
    p.add_argument(
        "--static",
        action="store_true",
        help="bind every dynamic axis to a number (its --dim value or default) instead of "
        "keeping it symbolic",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="run the imported model with the reference interpreter and the file with ONNX "
        "Runtime on the same random inputs; exit 1 if an output differs by more than "
        f"--check-tol (default {DEFAULT_CHECK_TOL:g}, normwise relative)",
    )
    p.add_argument("--check-tol", type=float, default=DEFAULT_CHECK_TOL, metavar="REL")
    p.add_argument("--seed", type=seed, default=0, help="seed of the --check inputs (default 0)")
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="read a .pt2 file: torch.export.load unpickles it, which runs any code the file "
        "holds; only for a file you made yourself",
    )
    p.add_argument(
        "--supported",
        action="store_true",
        help="list the ONNX ops the importer translates and exit",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from frontend.onnx import import_onnx, supported_ops

    if args.supported:
        for domain, ops in supported_ops().items():
            print(f"{domain} ({len(ops)} ops):")
            print("  " + ", ".join(ops))
        return 0
    if not args.source:
        raise UsageError("eqsat import: give the model to import (or --supported)")
    source = Path(args.source)
    dims = dict(args.dim)
    onnx_path, cleanup = _as_onnx(source, args.trust_pickle)
    try:
        imported = import_onnx(onnx_path, dims, symbolic=not args.static, file=str(source))
        if imported.model is None:
            raise UsageError(
                f"{source}: every output is empty (zero-sized): there is nothing to compute"
            )
        if any(isinstance(i, RegionAssign) for i in imported.model.items):
            from eqsat.control.cli import import_with_regions  # If/Loop/Scan regions

            return import_with_regions(args, imported, onnx_path, source)
        shown = str(params_file_for(args.output or "OUT.model"))
        graph = fold_constants(check_model(imported.model, None, imported.arrays, shown))
        errors = None
        if args.check:
            from eqsat.verify.onnxruntime import compare_with_onnxruntime

            errors = compare_with_onnxruntime(
                onnx_path, imported, graph, imported.arrays, args.seed
            )
    finally:
        cleanup()
    _report(imported, graph, source)
    if errors is not None:
        worst = max(errors.values(), default=0.0)
        for name, err in errors.items():
            print(f"  vs ONNX Runtime  {name}: normwise relative error {err:.2e}")
        if not worst <= args.check_tol:
            print(
                f"error: the import differs from ONNX Runtime by {worst:.2e} (> {args.check_tol:g}); nothing written",
                file=sys.stderr,
            )
            return 1
    if args.output:
        text = print_model(imported.model)
        wrote = write_model_files(args.output, text, imported.arrays)
        print(f"wrote {args.output}" + (f" and {wrote}" if wrote else ""))
    return 0


def _report(imported, graph, source: Path) -> None:
    s = summarize(graph)
    dims = ", ".join(f"{k} = {v}" for k, v in imported.dims.items()) or "none"
    print(f"imported {source} as model '{graph.name}'")
    for io in imported.inputs:
        note = "" if io.name == io.onnx_name else f" (onnx '{io.onnx_name}')"
        print(f"  input  {io.name}: {s.inputs.get(io.name, '?')}{note}")
    for io in imported.outputs:
        note = "" if io.name == io.onnx_name else f" (onnx '{io.onnx_name}')"
        print(f"  output {io.name}: {s.outputs.get(io.name, '?')}{note}")
    print(f"  symbolic dimensions: {dims}")
    ops = ", ".join(f"{op} {n}" for op, n in s.ops.most_common(12))
    print(f"  {sum(s.ops.values())} ops ({ops})")
    print(
        f"  params: {human_count(s.param_count)} ({human_bytes(s.param_bytes)}); FLOPs {human_count(s.flops)}"
    )
    for note in imported.notes:
        print(f"  note: {note}")


def _as_onnx(source: Path, trust_pickle: bool):
    """The ONNX file to import, and a cleanup for a temporary one (from a .pt2). A .pt2
    is read with pickle (torch.export.load): only when the user vouches for the file."""
    if source.suffix != ".pt2":
        return source, lambda: None
    if not trust_pickle:
        raise UsageError(
            f"{source}: a .pt2 file is read with pickle (torch.export.load), which runs any "
            "code the file holds; pass --trust-pickle if you made the file yourself"
        )
    from frontend.torch_export import exported_program_to_onnx

    path = exported_program_to_onnx(source)
    return path, lambda: path.unlink(missing_ok=True)
