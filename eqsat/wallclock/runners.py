"""One callable per (backend, program): built once (compiled, session created), then
called with the same inputs every time. Each carries its outputs from a first call,
keyed by the model's output names, so that results can be checked before timing."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eqsat.errors import UserError
from eqsat.ir.graph import Graph


@dataclass
class Runner:
    label: str
    call: Callable[[], object]
    setup_seconds: float  # compile (IREE), session creation (ORT), 0 (interpreter)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """Normwise relative error over the finite elements of `want`; inf where the
    non-finite ones (a masked score's -inf) are not the same in both."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(w)
    same = (g[~finite] == w[~finite]) | (np.isnan(g[~finite]) & np.isnan(w[~finite]))
    if not same.all():
        return float("inf")
    g, w = g[finite], w[finite]
    return float(np.linalg.norm(g - w) / max(float(np.linalg.norm(w)), 1e-30))


def reference_runner(graph: Graph, feeds: Mapping[str, np.ndarray], label: str) -> Runner:
    """The numpy reference interpreter on `graph`."""
    from eqsat.interpreter import evaluate

    def call():
        return evaluate(graph, feeds)

    return Runner(label, call, 0.0, dict(call()))


def iree_runner(
    graph: Graph,
    feeds: Mapping[str, np.ndarray],
    label: str,
    consts: Mapping[str, np.ndarray] | None = None,
) -> Runner:
    """`graph` emitted as MLIR (backend/mlir) and compiled by IREE for this CPU;
    `consts` are arrays the graph reads that are not in `feeds` (quantized params)."""
    from backend.mlir import emit_mlir
    from backend.mlir.iree import IreeProgram
    from eqsat.iree_run import iree_user_errors, require_iree

    require_iree()
    with iree_user_errors(where=f"{graph.name}: "):
        module = emit_mlir(graph, consts=consts)
        program = IreeProgram(module)
    args = program.arguments({**(consts or {}), **feeds})

    def call():
        return program(args)

    return Runner(label, call, program.compile_seconds, call())


def ort_runner(
    path: str | Path, onnx_names: Mapping[str, str], feeds: Mapping[str, np.ndarray], label: str
) -> Runner:
    """ONNX Runtime (CPU provider, all graph optimizations) on the ONNX file itself.
    `onnx_names` maps each ONNX input name to the model's input name in `feeds`."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise UserError(
            "--backend onnxruntime needs onnxruntime: pip install onnxruntime"
        ) from None
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    setup = time.perf_counter() - start
    types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
    ort_feeds = {
        i.name: np.asarray(feeds[onnx_names[i.name]]).astype(types.get(i.type, np.float32))
        for i in session.get_inputs()
    }
    names = [o.name for o in session.get_outputs()]

    def call():
        return session.run(names, ort_feeds)

    return Runner(label, call, setup, dict(zip(names, call(), strict=True)))
