"""The emitted MLIR of a small example, as text (a golden file), and the errors of
what the emitter refuses. Needs no IREE."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backend.mlir import MlirEmitError, emit_mlir, statement_locations
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.loading import load_model

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "mlp.mlir"


def test_mlp_mlir_matches_the_golden_file():
    """Regenerate with EQSAT_UPDATE_GOLDEN=1 after an intended change."""
    loaded = load_model(ROOT / "examples" / "mlp.model")
    text = emit_mlir(
        loaded.graph, locations=statement_locations(loaded.model), source="examples/mlp.model"
    ).text
    if os.environ.get("EQSAT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


@pytest.mark.parametrize(("tiled", "golden"), [(False, "fused.mlir"), (True, "fused_tiled.mlir")])
def test_fused_kernel_mlir_matches_the_golden_file(tiled, golden):
    """The README's kernel at each level: matmul + bias + ReLU optimized for edge into
    one tiled kernel (regenerate with EQSAT_UPDATE_GOLDEN=1 after an intended change)."""
    from tests.optimize_helpers import optimize_graph

    source = "tests/mlir/golden/fused.model"
    loaded = load_model(ROOT / source)
    graph = optimize_graph(loaded.graph).graph
    locations = statement_locations(loaded.model)
    text = emit_mlir(graph, locations=locations, source=source, tiled=tiled).text
    path = GOLDEN.parent / golden
    if os.environ.get("EQSAT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_an_op_without_emitter_is_refused_by_name():
    """Every registry op has an emitter; one added later without it (a custom
    instruction's derived op) is an error naming the op, never wrong code."""
    from backend.mlir.core import Apply, Func
    from backend.mlir.emitter import Emitter

    b = GraphBuilder("p")
    b.output("x", b.leaf("input", "x", TensorType(DType.F32, (4,))))
    em = Emitter(b.graph, Func("main"))
    with pytest.raises(MlirEmitError, match="op 'silu_mul' has no MLIR emitter"):
        em.apply(Apply("silu_mul", {}, (4,), "f32", "y"), [])


def test_every_registry_op_has_an_emitter():
    from backend.mlir.table import EMITTERS
    from eqsat.ops import REGISTRY, OpKind

    missing = [n for n, op in REGISTRY.items() if op.kind is not OpKind.LEAF and n not in EMITTERS]
    assert not missing


def test_runtime_channel_scales_are_refused():
    b = GraphBuilder("r")
    x = b.leaf("input", "acc", TensorType(DType.I32, (2, 3)))
    s = b.leaf("input", "s", TensorType(DType.F32, (3,)))
    b.output("q", b.add("requantize_pc", (x, s), {"scale": 0.5}))
    with pytest.raises(MlirEmitError, match="requantize_pc needs its channel scales"):
        emit_mlir(b.graph)
    # known at compile time (a given param value): emitted, tables as constants
    b2 = GraphBuilder("r")
    x = b2.leaf("input", "acc", TensorType(DType.I32, (2, 3)))
    s = b2.leaf("param", "s", TensorType(DType.F32, (3,)))
    b2.output("q", b2.add("requantize_pc", (x, s), {"scale": 0.5}))
    import numpy as np

    text = emit_mlir(b2.graph, consts={"s": np.array([0.25, 0.5, 1.0], np.float32)}).text
    assert "tensor<3xi64>" in text and "arith.muli" in text


def test_fused_kernel_is_the_contraction_and_one_epilogue_generic():
    b = GraphBuilder("k")
    x = b.leaf("input", "x", TensorType(DType.F32, (8, 16)))
    w = b.leaf("param", "w", TensorType(DType.F32, (16, 32)))
    bias = b.leaf("param", "b", TensorType(DType.F32, (32,)))
    b.output("y", b.add("matmul_bias_gelu", (x, w, bias), name="y"))
    text = emit_mlir(b.graph).text
    assert text.count("linalg.matmul ins(%x, %w") == 1
    assert text.count("linalg.generic") == 1  # bias add and gelu in one body
    epilogue = text.split("linalg.generic", 1)[1]
    assert "arith.addf" in epilogue and "math.tanh" in epilogue
    assert "%y = linalg.generic" in text


def test_silu_product_used_twice_is_computed_once():
    """matmul_silu's body uses matmul(x, w) twice: one product, one epilogue."""
    b = GraphBuilder("k")
    x = b.leaf("input", "x", TensorType(DType.F32, (4, 8)))
    w = b.leaf("param", "w", TensorType(DType.F32, (8, 8)))
    b.output("y", b.add("matmul_silu", (x, w), name="y"))
    text = emit_mlir(b.graph).text
    assert text.count("linalg.matmul") == 1 and text.count("linalg.generic") == 1
