"""Graphs ONNX Runtime optimized (its own com.microsoft fused ops: FusedMatMul,
BiasGelu, FastGelu, SkipLayerNormalization) import as their meaning and match ONNX
Runtime, so that ORT's graph can be simulated next to eqsat's."""

from __future__ import annotations

import collections

import onnx
import pytest

from frontend.onnx import import_onnx
from tests.onnx.helpers import MODEL_FILES, TOLERANCE, example_dims, worst_error

pytestmark = pytest.mark.filterwarnings("ignore")
ort = pytest.importorskip("onnxruntime")


def _ops(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(
        f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in model.graph.node
    )


def test_session_optimized_graph(tmp_path):
    src = next(p for p in MODEL_FILES if p.stem == "bert_base_ts")
    out = tmp_path / "bert_ort.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(out)
    options.log_severity_level = 3
    ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])
    ops = _ops(onnx.load(str(out)))
    assert ops["com.microsoft:FusedMatMul"] and ops["com.microsoft:BiasGelu"]
    dims = example_dims(src)
    assert worst_error(out, import_onnx(out, dims, symbolic=False), dims) < TOLERANCE


@pytest.mark.parametrize(("stem", "kind"), [("bert_base_ts", "bert"), ("gpt2_ts", "gpt2")])
def test_transformers_optimizer_graph(tmp_path, stem, kind):
    pytest.importorskip("sympy", reason="onnxruntime.transformers needs sympy")
    from onnxruntime.transformers import optimizer

    src = next(p for p in MODEL_FILES if p.stem == stem)
    optimized = optimizer.optimize_model(
        str(src), model_type=kind, num_heads=2, hidden_size=32, opt_level=0
    )
    out = tmp_path / f"{stem}_ort.onnx"
    optimized.save_model_to_file(str(out))
    ops = _ops(onnx.load(str(out)))
    assert ops["com.microsoft:SkipLayerNormalization"]
    dims = example_dims(src)
    assert worst_error(out, import_onnx(out, dims, symbolic=False), dims) < TOLERANCE
