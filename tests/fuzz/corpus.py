"""Valid seed inputs of each kind, built from the repository's own files."""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.model"


@cache
def models() -> tuple[str, ...]:
    files = sorted((ROOT / "examples").glob("*.model")) + sorted(
        (ROOT / "tests/data").glob("*.model")
    )
    return tuple(p.read_text() for p in files)


@cache
def rules() -> tuple[str, ...]:
    files = sorted((ROOT / "rules").glob("*.rules")) + sorted((ROOT / "tests/data").glob("*.rules"))
    return tuple(p.read_text() for p in files)


@cache
def hardware() -> tuple[str, ...]:
    files = [*sorted((ROOT / "hwsim/presets").glob("*.toml")), ROOT / "tests/data/tiny_sram.toml"]
    return tuple(p.read_text() for p in files)


@cache
def onnx_models() -> tuple[bytes, ...]:
    return tuple(p.read_bytes() for p in sorted((ROOT / "tests/data/onnx").glob("*.onnx")))


@cache
def mlp_inputs() -> dict[str, np.ndarray]:
    """Inputs and params of examples/mlp.model, as `eqsat run --inputs` takes them."""
    from eqsat.interpreter import random_bindings
    from frontend import load_model

    _, graph = load_model(MLP)
    return {k: np.asarray(v) for k, v in random_bindings(graph, 0).items()}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@cache
def assembly() -> str:
    """examples/mlp.model compiled as written for `edge`."""
    from backend import compile_graph
    from frontend import load_model
    from hwsim import load_hardware

    _, graph = load_model(MLP)
    return compile_graph(graph, load_hardware("edge")).asm


@cache
def egraph_json() -> str:
    """examples/mlp.model's e-graph after saturation, priced (what --egraph-out writes)."""
    import contextlib
    import tempfile

    from eqsat.cli import main

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        out = Path(tmp) / "e.json"
        code = main(["optimize", str(MLP), "-q", "--iter-limit", "2", "--egraph-out", str(out)])
        assert code == 0
        return json.dumps(json.loads(out.read_text()))
