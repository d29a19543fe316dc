"""Graphs ONNX Runtime optimized (its own com.microsoft fused ops: FusedMatMul,
BiasGelu, FastGelu, SkipLayerNormalization) import as their meaning and match ONNX
Runtime, so that ORT's graph can be simulated next to eqsat's."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest

from eqsat.verify.onnxruntime import normwise_error
from frontend.onnx import import_onnx
from tests.onnx.helpers import (
    MODEL_FILES,
    TOLERANCE,
    eqsat_run,
    example_dims,
    ort_run,
    worst_error,
)

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


def _attention_model(mask_kind: str, **attrs) -> onnx.ModelProto:
    """One com.microsoft Attention node over x [B, S, 24] with 3 heads."""
    from onnx import TensorProto, helper

    hidden = 24
    sizes = attrs.get("qkv_hidden_sizes", [hidden] * 3)
    rng = np.random.default_rng(3)
    weight = rng.normal(0, 0.3, (hidden, sum(sizes))).astype(np.float32)
    bias = rng.normal(0, 0.3, (sum(sizes),)).astype(np.float32)
    inits = [
        onnx.numpy_helper.from_array(weight, "w"),
        onnx.numpy_helper.from_array(bias, "bias"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", hidden])]
    mask_input = {
        "none": None,
        "raw2": helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "S"]),
        "raw3": helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "S", "S"]),
        "lengths": helper.make_tensor_value_info("mask", TensorProto.INT32, ["B"]),
    }[mask_kind]
    names = ["x", "w", "bias"]
    if mask_input is not None:
        inputs.append(mask_input)
        names.append("mask")
    if attrs.pop("with_bias_input", False):
        names += [""] * (4 - len(names)) + ["", "attention_bias"]
        inputs.append(
            helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, [1, 3, "S", "S"])
        )
    node = helper.make_node("Attention", names, ["y"], domain="com.microsoft", num_heads=3, **attrs)
    graph = helper.make_graph(
        [node],
        "attention",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize(
    ("mask_kind", "attrs"),
    [
        ("none", {}),
        ("raw2", {}),
        ("raw3", {"mask_filter_value": -1e4}),
        ("lengths", {}),
        ("none", {"unidirectional": 1}),
        ("raw2", {"unidirectional": 1, "scale": 0.5}),
        ("none", {"qkv_hidden_sizes": [24, 24, 12]}),
        ("none", {"with_bias_input": True}),
    ],
)
def test_fused_attention(mask_kind, attrs):
    model = _attention_model(mask_kind, **attrs)
    b, s = 2, 5
    rng = np.random.default_rng(0)
    feeds = {"x": rng.normal(size=(b, s, 24)).astype(np.float32)}
    if mask_kind == "raw2":
        feeds["mask"] = np.array([[1] * s, [1] * 3 + [0] * (s - 3)], dtype=np.int32)
    elif mask_kind == "raw3":
        feeds["mask"] = (rng.random((b, s, s)) > 0.3).astype(np.int32)
        feeds["mask"][:, :, 0] = 1
    elif mask_kind == "lengths":
        feeds["mask"] = np.array([s, 2], dtype=np.int32)
    if "attention_bias" in [i.name for i in model.graph.input]:
        feeds["attention_bias"] = rng.normal(size=(1, 3, s, s)).astype(np.float32)
    want = ort_run(model, feeds)
    dims = {"B": b, "S": s}
    got = eqsat_run(import_onnx(model, dims), feeds, dims)
    assert normwise_error(got["y"], want["y"]) < TOLERANCE


def test_attention_with_past_state_is_refused():
    from frontend.onnx.errors import OnnxImportError

    model = _attention_model("none")
    model.graph.node[0].output.append("present")
    with pytest.raises(OnnxImportError, match="past/present"):
        import_onnx(model, {"B": 1, "S": 4})
