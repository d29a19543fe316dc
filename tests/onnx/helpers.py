"""Shared by the ONNX tests: the checked-in model files and a comparison with ONNX
Runtime (the ground truth; in the test extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from eqsat.fold import fold_constants
from eqsat.interpreter import evaluate
from eqsat.verify.onnxruntime import normwise_error, onnx_feeds
from frontend import check_model
from frontend.onnx import ImportedModel, import_onnx

DATA = Path(__file__).resolve().parents[1] / "data" / "onnx"
MODEL_FILES = sorted(DATA.glob("*.onnx"))
TOLERANCE = 1e-4  # normwise relative error against ONNX Runtime


def ort_run(model: onnx.ModelProto | Path, feeds: dict) -> dict[str, np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def eqsat_run(imported: ImportedModel, feeds: dict, dims: dict | None = None) -> dict:
    graph = fold_constants(check_model(imported.model, dims, imported.arrays))
    params = {k: v for k, v in imported.arrays.items() if k in graph.bound_names()}
    return imported.results(evaluate(graph, {**imported.feeds(feeds), **params}))


def worst_error(source, imported: ImportedModel, dims: dict, seed: int = 0) -> float:
    """Worst normwise error of `imported` (run at `dims`) against ONNX Runtime."""
    model = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
    feeds = onnx_feeds(model, dims, seed)
    want = ort_run(source, feeds)
    got = eqsat_run(imported, feeds, dims if imported.dims else None)
    return max(normwise_error(got[k], want[k]) for k in want)


def example_dims(path: Path) -> dict[str, int]:
    """The sizes the file was exported at (its eqsat.dim metadata)."""
    model = onnx.load(str(path), load_external_data=False)
    prefix = "eqsat.dim."
    return {
        p.key[len(prefix) :]: int(p.value) for p in model.metadata_props if p.key.startswith(prefix)
    }


__all__ = [
    "MODEL_FILES",
    "TOLERANCE",
    "eqsat_run",
    "example_dims",
    "import_onnx",
    "ort_run",
    "worst_error",
]
