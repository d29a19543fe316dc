"""--emit mlir-tiled: the extracted GEMM tiles as scf.for loops over tensor slices.
A tiled product with an epilogue (rows, columns and K all tiled) and the optimized
BERT layer's tiled program run on IREE like the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.mlir import emit_mlir
from backend.mlir.iree import run_iree
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.loading import load_model
from tests.mlir.helpers import normwise_error, parse_with_iree, parse_with_xdsl
from tests.optimize_helpers import optimized_example

ROOT = Path(__file__).resolve().parents[2]


def test_tiled_product_with_epilogue_runs_on_iree():
    b = GraphBuilder("tiled")
    f32 = DType.F32
    x = b.leaf("input", "x", TensorType(f32, (2, 64, 96)))
    w = b.leaf("param", "w", TensorType(f32, (96, 80)))
    bias = b.leaf("param", "bias", TensorType(f32, (80,)))
    r = b.leaf("input", "r", TensorType(f32, (2, 64, 80)))
    y = b.add("matmul_bias_add", (x, w, bias, r), {"tile": (32, 40, 48)}, name="y")
    b.output("y", y)
    graph = b.graph
    module = emit_mlir(graph, tiled=True)
    text = module.text
    # rows (128 / 32) and columns (80 / 40) of output tiles, K (96 / 48) inside, its
    # first step peeled
    assert text.count("scf.for") == 3
    assert "y.tile_matmul.first = linalg.matmul" in text
    assert "[32, 96] [1, 1]" in text and "[96, 40] [1, 1]" in text and "[32, 48]" in text
    assert "tensor.insert_slice" in text
    parse_with_xdsl(text)
    parse_with_iree(text)
    bindings = random_bindings(graph, 0)
    got = run_iree(module, bindings).outputs["y"]
    want = evaluate(graph, bindings)["y"]
    assert normwise_error(got, want) < 1e-5
    # same numbers as the untiled emission
    np.testing.assert_allclose(
        got, run_iree(emit_mlir(graph), bindings).outputs["y"], rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
def test_tiled_bert_layer_runs_on_iree(hw):
    """The BERT layer optimized for each preset, its GEMM tiles as loops: same outputs.
    On datacenter the FFN's second product is tiled along K only (a K loop at the top
    level), which IREE refused before the loop's first step was peeled."""
    result = optimized_example("bert_layer", hw)
    tiles = [n.attr("tile") for _, n in result.graph if n.attr_dict.get("tile")]
    assert tiles, "extraction chose no tiles: nothing to test"
    module = emit_mlir(result.graph, tiled=True)
    text = module.text
    # rows and columns, or K, of each product a tile cuts into equal steps (one that
    # does not divide its axis leaves it untiled: backend/mlir/tiled.py)
    loops = 0
    for _, n in result.graph:
        if n.attr_dict.get("tile"):
            g = result.graph.nodes
            dims = (n.type.shape[-2], n.type.shape[-1], g[n.inputs[0]].type.shape[-1])
            loops += any(d % t == 0 and t < d for d, t in zip(dims, n.attr("tile"), strict=True))
    assert text.count("scf.for") >= loops
    parse_with_xdsl(text)
    parse_with_iree(text)
    loaded = load_model(ROOT / "examples" / "bert_layer.model")
    bindings = loaded.bindings(0)
    got = run_iree(module, bindings).outputs["y"]
    assert normwise_error(got, evaluate(loaded.graph, bindings)["y"]) < 1e-4
