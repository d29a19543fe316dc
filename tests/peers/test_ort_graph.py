"""bench/peers_ort.py: ONNX Runtime's optimized graph as eqsat runs it: FusedConv
written back as standard nodes (same results as ORT's own kernel), one group per ORT
node, and the program simulated equal to its reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from peers_groups import group_program, onnx_node_of
from peers_ort import expand_fused_conv, ort_graph

from backend import compile_graph
from eqsat.loading import load_model
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.verify.translation import validate_program
from hwsim import load_hardware
from tests.onnx.helpers import DATA, ort_run
from tests.peers.helpers import save

pytestmark = pytest.mark.filterwarnings("ignore")
pytest.importorskip("onnxruntime")


def _fused_conv(activation: str, params: list[float], residual: bool):
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.normal(0, 0.3, (4,)).astype(np.float32), "b"),
    ]
    inputs = ["x", "w", "b"] + (["z"] if residual else [])
    attrs = {"activation": activation, "pads": [1, 1, 1, 1], "strides": [1, 1]}
    if params:
        attrs["activation_params"] = params
    node = helper.make_node("FusedConv", inputs, ["y"], domain="com.microsoft", **attrs)
    values = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])]
    if residual:
        values.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 6, 6]))
    graph = helper.make_graph(
        [node], "fc", values, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize(
    ("activation", "params", "residual"),
    [("Relu", [], False), ("Relu", [], True), ("Clip", [0.0, 6.0], False), ("Sigmoid", [], True)],
)
def test_fused_conv_written_back_means_the_same(activation, params, residual):
    model = _fused_conv(activation, params, residual)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.normal(size=(1, 3, 6, 6)).astype(np.float32)}
    if residual:
        feeds["z"] = rng.normal(size=(1, 4, 6, 6)).astype(np.float32)
    expanded, groups = expand_fused_conv(model)
    assert all(n.domain == "" for n in expanded.graph.node)
    assert groups == [0] * len(expanded.graph.node)
    np.testing.assert_allclose(
        ort_run(expanded, feeds)["y"], ort_run(model, feeds)["y"], rtol=1e-5, atol=1e-5
    )


def test_ort_graph_of_a_resnet_runs_one_kernel_per_ort_node(tmp_path):
    src = DATA / "resnet18_ts.onnx"
    ort = ort_graph(src)
    # ORT_ENABLE_ALL lays convolutions out in NCHWc on x86; EXTENDED's graph is used.
    assert ort.level == "ORT_ENABLE_EXTENDED"
    assert ort.fusions["FusedConv"] > 0
    path = save(ort.model, tmp_path / "ort.onnx")
    graph = load_model(path, {"B": 2}).graph
    of = onnx_node_of(graph, [list(n.output) for n in ort.model.graph.node])
    assert all(of[i] is not None for i, n in graph if not n.is_leaf)
    groups = [ort.groups[k] if k is not None else None for k in of]
    hw = load_hardware("edge")
    fusion = compile_rule_paths([DEFAULT_RULES_DIR / "fusion.rules"])
    program = group_program(graph, groups, ort.kinds, fusion, hw)
    fused = [g for g in program.groups if g.label == "com.microsoft:FusedConv"]
    assert len(fused) == ort.fusions["FusedConv"]
    assert all(g.kernels == ["conv2d_bias_relu"] for g in fused)
    compiled = compile_graph(program.graph, hw)
    assert validate_program(graph, compiled, hw, (0,)).worst < 1e-5
