"""An imported model against ONNX Runtime on the same inputs: the importer's check.

Inputs are drawn per ONNX input: floats standard normal; integers in [0, n) where n is
the smallest table a `Gather` reads with them (token ids stay in the vocabulary),
else 0 or 1; inputs named like masks are ones with the tail of the last row zeroed
(a padded sequence). The error of each output is normwise: max |got - want| / max |want|.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from eqsat.errors import UserError
from eqsat.interpreter import evaluate
from eqsat.ir.graph import Graph
from frontend.onnx import ImportedModel
from frontend.onnx.names import sanitize


def onnx_feeds(
    model: onnx.ModelProto,
    dims: Mapping[str, int],
    seed: int = 0,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> dict[str, np.ndarray]:
    """`shapes`: the imported model's input shapes by (sanitized) name, which win over
    `dims` (an import that fixed a dynamic dimension has it in the shapes only)."""
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    bounds = _index_bounds(model)
    out = {}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        tt = vi.type.tensor_type
        shape = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                name = sanitize(d.dim_param) if d.dim_param else sanitize(f"{vi.name}_{axis}")
                shape.append(int(dims.get(name, 1)))
        fixed = (shapes or {}).get(sanitize(vi.name))
        if fixed is not None and len(fixed) == len(shape):
            shape = list(fixed)
        np_type = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np_type.kind == "f":
            out[vi.name] = rng.standard_normal(shape).astype(np_type)
        elif np_type == np.bool_ or "mask" in vi.name.lower():
            mask = np.ones(shape, dtype=np_type)
            if len(shape) >= 2 and shape[-1] > 1:
                mask[(-1,) * (len(shape) - 1) + (slice(shape[-1] // 2 + 1, None),)] = 0
            out[vi.name] = mask
        else:
            out[vi.name] = rng.integers(0, bounds.get(vi.name, 2), shape).astype(np_type)
    return out


def _index_bounds(model: onnx.ModelProto) -> dict[str, int]:
    """Input -> rows of the smallest initializer table a Gather indexes with it."""
    tables = {t.name: list(t.dims) for t in model.graph.initializer}
    out: dict[str, int] = {}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[0] in tables:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            rows = tables[node.input[0]][axis]
            out[node.input[1]] = min(out.get(node.input[1], rows), rows)
    return out


def compare_with_onnxruntime(
    path: str | Path,
    imported: ImportedModel,
    graph: Graph,
    params: Mapping[str, np.ndarray],
    seed: int = 0,
) -> dict[str, float]:
    """Normwise relative error of each output of `graph` (the checked import) against
    ONNX Runtime running the file, on the same seeded inputs."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise UserError(
            "comparing with ONNX Runtime needs the onnxruntime package (pip install onnxruntime)"
        ) from None
    model = onnx.load(str(path), load_external_data=False)
    shapes = {str(n.attr("name")): n.type.shape for _, n in graph.inputs}
    feeds = onnx_feeds(model, graph.dims, seed, shapes)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True))
    bindings = {
        **imported.feeds(feeds),
        **{k: v for k, v in params.items() if k in graph.bound_names()},
    }
    got = imported.results(evaluate(graph, bindings))
    return {name: normwise_error(got[name], want[name]) for name in want}


def normwise_error(got: np.ndarray, want: np.ndarray) -> float:
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if g.shape != w.shape:
        return float("inf")
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w))
    scale = float(np.max(np.abs(w[np.isfinite(w)]))) if np.isfinite(w).any() else 0.0
    err = float(np.max(diff)) if diff.size else 0.0
    return err / scale if scale else err


__all__ = ["compare_with_onnxruntime", "normwise_error", "onnx_feeds"]
