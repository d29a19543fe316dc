"""`eqsat run --backend iree`: the model (or an MLIR file emitted from it) compiled by
IREE for this CPU and run on the same inputs the interpreter would get."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from eqsat.errors import UserError
from eqsat.ir.graph import Graph

_ARG = re.compile(r"%([A-Za-z_$.][\w$.]*)\s*:\s*tensor<([^>]*)>")


def module_from_file(path: str, graph: Graph, extra: Mapping[str, np.ndarray] | None = None):
    """An emitted MLIR file as a backend.mlir.MlirModule whose arguments are the
    model's inputs and params or the arrays of `extra` (the quantized params written
    next to it), matched by name, and whose results are the model's outputs."""
    from backend.mlir.core import ssa_safe
    from backend.mlir.emitter import MlirModule

    text = Path(path).read_text()
    head = re.search(r"func\.func\s+@([\w$.]+)\((.*?)\)\s*->", text, re.S)
    if head is None:
        raise UserError(f"{path}: no func.func found")
    known = {name: (t.shape, t.dtype.value) for name, t in graph.bound_names().items()}
    for name, value in (extra or {}).items():
        known.setdefault(name, (value.shape, str(value.dtype)))
    by_ssa: dict[str, str] = {}
    for name in known:
        safe = ssa_safe(name)
        if safe in by_ssa:  # two names spelled alike in MLIR: the file cannot tell them apart
            raise UserError(
                f"{path}: '{by_ssa[safe]}' and '{name}' are both %{safe} in MLIR; "
                "run the model without --mlir"
            )
        by_ssa[safe] = name
    args = []
    for ssa, _ in _ARG.findall(head.group(2)):
        if ssa not in by_ssa:
            raise UserError(
                f"{path}: argument %{ssa} is not an input or param of model '{graph.name}'"
                + (" nor in the params file next to it" if extra is not None else "")
            )
        name = by_ssa[ssa]
        args.append((name, *known[name]))
    results = [name for name, _ in graph.outputs]
    return MlirModule(text, head.group(1), args, results)


def require_iree() -> None:
    """A UserError saying how to install IREE when it is not importable."""
    from backend.mlir.iree import iree_available

    if not iree_available():
        raise UserError(
            "--backend iree needs IREE: pip install 'eqsat[iree]' (iree-base-compiler, "
            "iree-base-runtime)"
        )


@contextmanager
def iree_user_errors(where: str = "", compile_where: str = "") -> Iterator[None]:
    """Emitting MLIR or compiling it with IREE as a user-facing step: the emitter's and
    IREE's refusals become UserErrors prefixed with `where` (`compile_where` instead
    for IREE's compile errors, e.g. the MLIR file that did not compile)."""
    from backend.mlir import MlirEmitError
    from backend.mlir.iree import IreeCompileError, IreeMissing

    try:
        yield
    except (MlirEmitError, IreeMissing, IreeCompileError) as err:
        prefix = compile_where if compile_where and isinstance(err, IreeCompileError) else where
        raise UserError(f"{prefix}{err}") from None


def run_with_iree(
    graph: Graph, bindings: Mapping[str, np.ndarray], mlir_path: str | None, repeat: int
) -> tuple[dict[str, np.ndarray], str]:
    """(outputs by name, a line with compile and run times)."""
    from backend.mlir import emit_mlir
    from backend.mlir.iree import run_iree

    require_iree()
    feeds = dict(bindings)
    with iree_user_errors(compile_where=f"{mlir_path}: " if mlir_path else ""):
        if mlir_path:
            # the params `eqsat compile --quantize int8 --emit mlir -o FILE` wrote
            extra = _sibling_params(mlir_path)
            feeds.update({k: v for k, v in (extra or {}).items() if k not in feeds})
            module = module_from_file(mlir_path, graph, extra)
        else:
            module = emit_mlir(graph)
        run = run_iree(module, feeds, repeats=repeat)
    line = (
        f"IREE (llvm-cpu, this host): compiled in {run.compile_seconds:.2f} s, "
        f"{_ms(run.seconds)} per run (best of {repeat})"
    )
    return run.outputs, line


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _sibling_params(mlir_path: str) -> dict[str, np.ndarray] | None:
    from eqsat.fileio import load_arrays, params_file_for

    path = params_file_for(mlir_path)
    return load_arrays(path) if path.is_file() else None
