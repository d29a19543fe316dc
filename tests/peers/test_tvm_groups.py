"""bench/peers_tvm.py: TVM's fused groups read back by ONNX node, and the program that
runs them on the simulator (needs the `[peers]` extra: apache-tvm, onnxslim)."""

from __future__ import annotations

import importlib.util

import onnx
import pytest
from onnx import TensorProto, helper
from peers_groups import group_program, onnx_node_of
from peers_tvm import prepare_for_tvm, tvm_groups

from backend import compile_graph
from eqsat.loading import load_model
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.verify.translation import validate_program
from hwsim import load_hardware
from tests.peers.helpers import save, two_layers

# Whether the extra is installed, without importing it: tvm takes ~8 s to import, and
# every test worker collects this module (bench/peers_tvm.py imports it when used).
_MISSING = [m for m in ("tvm", "onnxslim") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"{', '.join(_MISSING)} not installed (the [peers] extra)"
)


def test_groups_of_two_layers():
    grouping = tvm_groups(two_layers(), {"x": [8, 16]})
    assert [(g.kernels, sorted(g.onnx_nodes)) for g in grouping.groups] == [
        (("matmul", "add", "relu"), [0, 1, 2]),
        (("matmul", "add", "add"), [3, 4, 5]),
    ]
    assert grouping.groups[0].name.startswith("fused_matmul_add_relu")
    assert grouping.unattributed == 0


def test_identical_groups_are_told_apart_by_their_call():
    """TVM shares one function between groups of the same shape: each call's nodes
    are still its own."""
    model = two_layers()
    # Make layer 2 the same shape as layer 1 (matmul, add, relu).
    model.graph.node[5].CopyFrom(helper.make_node("Relu", ["h4"], ["y"], name="relu2"))
    grouping = tvm_groups(model, {"x": [8, 16]})
    assert [sorted(g.onnx_nodes) for g in grouping.groups] == [[0, 1, 2], [3, 4, 5]]
    assert grouping.groups[0].name == grouping.groups[1].name


def _symbolic_model() -> onnx.ModelProto:
    """A dynamic batch and shape arithmetic (Shape -> ConstantOfShape) that TVM's
    frontend cannot take as it is: relu(x @ w + b) + ConstantOfShape(shape(x))."""
    model = two_layers()
    graph = model.graph
    del graph.node[3:]
    graph.input[0].type.tensor_type.shape.dim[0].Clear()
    graph.input[0].type.tensor_type.shape.dim[0].dim_param = "B"
    graph.node.extend(
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape"),
            helper.make_node(
                "ConstantOfShape",
                ["s"],
                ["ones"],
                name="ones",
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
            ),
            helper.make_node("Add", ["h2", "ones"], ["y"], name="plus_one"),
        ]
    )
    graph.output[0].type.tensor_type.shape.dim[0].Clear()
    graph.output[0].type.tensor_type.shape.dim[0].dim_param = "B"
    return model


@pytest.mark.parametrize("preset", ["edge", "datacenter"])
def test_prepared_model_runs_its_groups_on_the_simulator(tmp_path, preset):
    prepared = prepare_for_tvm(_symbolic_model(), {"B": 4})
    kinds = [g.kernels for g in prepared.grouping.groups]
    assert ("matmul", "add", "relu", "add") in kinds
    path = save(prepared.model, tmp_path / "prepared.onnx")
    graph = load_model(path).graph
    of = onnx_node_of(graph, [list(n.output) for n in prepared.model.graph.node])
    owner = {k: g for g, group in enumerate(prepared.grouping.groups) for k in group.onnx_nodes}
    groups = [owner.get(k) if k is not None else None for k in of]
    labels = [g.name for g in prepared.grouping.groups]
    hw = load_hardware(preset)
    fusion = compile_rule_paths([DEFAULT_RULES_DIR / "fusion.rules"])
    program = group_program(graph, groups, labels, fusion, hw)
    (group,) = program.groups
    assert group.ops == ["matmul", "add", "relu", "add"]
    assert group.kernels in (["matmul_bias_relu", "add"], ["matmul_bias", "add_relu", "add"])
    compiled = compile_graph(program.graph, hw)
    assert validate_program(graph, compiled, hw, (0, 1)).worst < 1e-5


def test_weights_handed_past_tvm_come_back_unchanged():
    from peers_tvm import _restore_weights, _strip_weights

    model = two_layers()
    before = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    moved = _strip_weights(model, min_size=16)
    assert sorted(w.name for w in moved) == ["b1", "b2", "w1", "w2"]
    assert sorted(v.name for v in model.graph.input) == ["b1", "b2", "w1", "w2", "x"]
    _restore_weights(model, moved)
    assert [v.name for v in model.graph.input] == ["x"]
    after = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    assert before.keys() == after.keys()
    assert all((before[k] == after[k]).all() for k in before)
