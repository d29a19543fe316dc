"""An imported model with regions against ONNX Runtime (`eqsat import --check`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from eqsat.control.interpret import run_control
from eqsat.control.program import ControlProgram


def compare_control_with_onnxruntime(
    path: str | Path,
    imported,
    program: ControlProgram,
    seed: int = 0,
    feeds: Mapping[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """Normwise relative error (max |got - want| / max |want|) of each ONNX output of
    the reference interpreter on the imported program against ONNX Runtime, on
    `feeds` (by ONNX input name) or inputs drawn as `eqsat import --check` draws them."""
    import onnxruntime

    from eqsat.verify.onnxruntime import onnx_feeds

    model = onnx.load(str(path))
    if feeds is None:
        shapes = {n: t.shape for n, t in program.inputs.items()}
        feeds = onnx_feeds(model, imported.dims, seed, shapes)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in session.get_outputs()]
    want = dict(zip(wanted, session.run(wanted, dict(feeds)), strict=True))
    bindings = imported.feeds(dict(feeds))
    bindings.update({k: v for k, v in imported.arrays.items() if k in program.params})
    got, _ = run_control(program, bindings)
    got = imported.results(got)
    errors = {}
    for name, w in want.items():
        g = np.asarray(got[name], dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        scale = float(np.abs(w).max()) if w.size else 0.0
        err = float(np.abs(g - w).max()) if w.size else 0.0
        errors[name] = err / scale if scale else err
    return errors
