"""`eqsat compile --emit mlir --dynamic S`: the symbolic dimensions to leave dynamic
(`?`) in the emitted function, found by rebuilding the program at a probe value of
each (backend/mlir/dynamic.py)."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

from eqsat.flags import UsageError


def add_dynamic_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dynamic",
        metavar="NAME[,NAME]",
        type=lambda text: tuple(n.strip() for n in text.split(",") if n.strip()),
        default=(),
        help="with --emit mlir: leave these symbolic dimensions dynamic (`?`), so that "
        "one function runs for any value; the program is optimized at the bound value "
        "(--dim or the model's default) and must not change with the dimension",
    )


def check_dynamic_flag(args: argparse.Namespace, loaded) -> None:
    """--dynamic's usage errors, before any optimization runs."""
    names = getattr(args, "dynamic", ())
    if not names:
        return
    if args.emit != "mlir":
        raise UsageError("--dynamic works with --emit mlir only")
    if getattr(args, "quantize", None):
        raise UsageError(
            "--dynamic with --quantize: the calibration depends on the dimension's value; "
            "emit the int8 program for one value"
        )
    dims = loaded.graph.dims
    unknown = [n for n in names if n not in dims]
    if unknown:
        known = ", ".join(sorted(dims)) or "none"
        raise UsageError(
            f"--dynamic {', '.join(unknown)}: model '{loaded.graph.name}' has no such "
            f"dimension (its dimensions: {known})"
        )


def dynamic_shapes(
    args: argparse.Namespace, loaded, lowered, rebuild: Callable[[argparse.Namespace], object]
):
    """Per node of `lowered`, its shape with the --dynamic axes symbolic; None without
    --dynamic. `rebuild(args)` makes the program again for args' --dim."""
    from backend.mlir.dynamic import symbolic_shapes

    names = getattr(args, "dynamic", ())
    if not names:
        return None
    check_dynamic_flag(args, loaded)
    dims = dict(loaded.graph.dims)

    def build(at):
        probe = copy.copy(args)
        probe.dim, probe.quiet = list(at.items()), True
        return rebuild(probe)

    return symbolic_shapes(build, dims, names, lowered)
