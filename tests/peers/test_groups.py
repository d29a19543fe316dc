"""bench/peers_groups.py: a peer's grouping runs as the registry kernels of each group,
fusing inside groups and never across them, and computes what the model computes."""

from __future__ import annotations

import functools

import pytest
from peers_groups import group_program, onnx_node_of

from eqsat.interpreter import random_bindings
from eqsat.loading import load_model
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import load_hardware
from tests.optimize_helpers import assert_same_outputs
from tests.peers.helpers import save, two_layers


@functools.cache
def _fusion():
    return compile_rule_paths([DEFAULT_RULES_DIR / "fusion.rules"])


OUTPUTS = [list(n.output) for n in two_layers().graph.node]


@pytest.fixture
def graph(tmp_path):
    return load_model(save(two_layers(), tmp_path / "two_layers.onnx")).graph


def _program(graph, onnx_groups: dict[int, int]):
    of = onnx_node_of(graph, OUTPUTS)
    groups = [onnx_groups.get(k) if k is not None else None for k in of]
    labels = [f"g{g}" for g in range(max(onnx_groups.values()) + 1)]
    return group_program(graph, groups, labels, _fusion(), load_hardware("edge"))


def _ops(graph) -> list[str]:
    return sorted(n.op for _, n in graph if not n.is_leaf)


def test_every_op_traces_to_its_onnx_node(graph):
    of = onnx_node_of(graph, OUTPUTS)
    traced = sorted((n.op, of[i]) for i, n in graph if not n.is_leaf)
    assert traced == [("add", 1), ("add", 4), ("add", 5), ("matmul", 0), ("matmul", 3), ("relu", 2)]
    assert all(of[i] is None for i, n in graph if n.is_leaf)


def test_a_group_of_a_registry_composition_is_one_kernel(graph):
    program = _program(graph, {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1})
    assert _ops(program.graph) == ["matmul_bias_add", "matmul_bias_relu"]
    assert [g.kernels for g in program.groups] == [["matmul_bias_relu"], ["matmul_bias_add"]]
    assert all(g.one_kernel for g in program.groups)
    assert_same_outputs(graph, program.graph, random_bindings(graph, 0))


def test_nothing_is_fused_across_a_group_boundary(graph):
    # relu alone, the residual add alone: matmul_bias twice, relu and add stay.
    program = _program(graph, {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3})
    assert _ops(program.graph) == ["add", "matmul_bias", "matmul_bias", "relu"]
    assert [g.ops for g in program.groups] == [["matmul", "add"], ["matmul", "add"]]
    assert_same_outputs(graph, program.graph, random_bindings(graph, 1))


def test_ops_in_no_group_stay_as_written(graph):
    program = _program(graph, {5: 0})
    assert _ops(program.graph) == _ops(graph)
    assert program.groups == []


def test_a_group_that_is_not_convex_runs_op_by_op(graph):
    # matmul 1 and the residual add without what lies between them: not one kernel.
    program = _program(graph, {0: 0, 5: 0, 1: 1, 2: 1, 3: 2, 4: 2})
    assert program.split == ["g0"]
    assert "relu" not in _ops(program.graph)  # group 1 (add + relu) still fuses
    assert _ops(program.graph).count("matmul") == 1
    assert_same_outputs(graph, program.graph, random_bindings(graph, 2))
