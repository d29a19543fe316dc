"""Small ONNX graphs for the peer-comparison tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def two_layers() -> onnx.ModelProto:
    """y = relu(x @ w1 + b1) @ w2 + b2 + x: nodes 0-2 the first layer, 3-5 the second."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.2, (16, 16)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.normal(0, 0.2, (16,)).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.normal(0, 0.2, (16, 16)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.normal(0, 0.2, (16,)).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="bias2"),
        helper.make_node("Add", ["h4", "x"], ["y"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes,
        "two_layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path
