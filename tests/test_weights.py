"""Weights prepared at load time (eqsat/weights.py): which nodes are, that the backend
leaves them to the host and the simulated program still computes the model, that the
cost model and extraction price them at nothing, and that the reports say so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.cli import main
from eqsat.costs import op_cost
from eqsat.interpreter import evaluate, random_bindings
from eqsat.program_cost import program_cost
from eqsat.weights import (
    CONSTANT,
    RUNTIME,
    WEIGHT,
    eclass_value_classes,
    graph_value_classes,
    prepared_nodes,
)
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.strategies import scaled

# BN folded into the conv weights, Q/K/V weights merged, a weight transposed (a view),
# a constant-only subexpression, and an input-dependent one.
MODEL = """
model w {
  input x: f32[1, 8, 10, 10]
  input t: f32[2, 16]
  param w: f32[4, 8, 3, 3]
  param s: f32[4]
  param wq: f32[16, 16]
  param wk: f32[16, 16]
  param wo: f32[16, 16]
  const two: f32[] = 2.0
  c = conv2d(x, mul(w, reshape(s, shape=[4, 1, 1, 1])), padding=[1, 1])
  qk = matmul(t, concat(wq, wk, axis=1))
  o = matmul(qk, concat(transpose(wo, perm=[1, 0]), wo, axis=0))
  z = add(o, mul(two, two))
  output c
  output z
}
"""


def _graph():
    return check_model(parse_model(MODEL))


def _node(graph, op: str) -> int:
    return next(i for i, n in graph if n.op == op)


def test_nodes_computed_from_params_are_prepared_and_views_are_not():
    g = _graph()
    classes = graph_value_classes(g)
    prepared = prepared_nodes(g)
    ops = sorted(g.nodes[i].op for i in prepared)
    assert ops == ["concat", "concat", "mul"]  # the BN fold and the two merged weights
    transpose = _node(g, "transpose")
    assert classes[transpose] == WEIGHT and transpose not in prepared  # a free view
    two_times_two = next(i for i, n in g if n.op == "mul" and classes[i] == CONSTANT)
    assert two_times_two not in prepared  # constants fold into immediates
    assert classes[_node(g, "conv2d")] == RUNTIME


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_the_program_reads_prepared_weights_and_computes_the_model(hw_name):
    g = _graph()
    hw = load_hardware(hw_name)
    compiled = compile_graph(g, hw)
    kernels = {g.nodes[k.node].op for k in compiled.kernels if k.node >= 0}
    assert "concat" not in kernels and "mul" not in kernels  # left to the host
    assert len(compiled.prepared) == 3
    inputs = {b.name for b in compiled.program.inputs()}
    assert {"w", "s", "wq", "wk"}.isdisjoint(inputs)  # read only by prepared weights
    bindings = random_bindings(g, 0)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    got, want = compiled.results(result.outputs), evaluate(g, bindings)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-4)


@settings(max_examples=scaled(10), deadline=None)
@given(seed=st.integers(0, 2**16))
def test_prepared_weights_follow_the_params_fed(seed):
    """One compiled program, any params: the host prepares from what it is fed."""
    g = _graph()
    hw = load_hardware("edge")
    compiled = _compiled_edge(g)
    bindings = random_bindings(g, seed)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    got, want = compiled.results(result.outputs), evaluate(g, bindings)
    np.testing.assert_allclose(got["c"], want["c"], rtol=1e-4, atol=1e-4)


_CACHE: dict = {}


def _compiled_edge(g):
    if "edge" not in _CACHE:
        _CACHE["edge"] = compile_graph(g, load_hardware("edge"))
    return _CACHE["edge"]


def test_the_cost_model_prices_prepared_weights_at_nothing():
    g = _graph()
    hw = load_hardware("edge")
    live = g.live()
    prepared = prepared_nodes(g)
    per_node = {
        i: op_cost(hw, n.op, [g.nodes[j].type for j in n.inputs], n.type, n.attr_dict)
        for i, n in g
        if live[i] and not n.is_leaf
    }
    at_run_time = sum(c.cycles for i, c in per_node.items() if c and i not in prepared)
    assert sum(per_node[i].cycles for i in prepared) > 0  # they would cost if run
    assert program_cost(g, hw).cycles == at_run_time


def test_an_eclass_with_a_weight_term_is_a_weight():
    """mul(x, 0) and 0 * w share a class with a weight term: the class is a weight;
    classes of inputs stay run time; constants stay constants."""
    classes = {
        "x": [("input", ())],
        "w": [("param", ())],
        "k": [("const", ())],
        "a": [("mul", ("x", "k")), ("mul", ("w", "k"))],
        "b": [("add", ("a", "x"))],
        "c": [("mul", ("k", "k"))],
    }
    state = eclass_value_classes(classes, lambda n: n[1], lambda n: n[0])
    assert state == {
        "x": RUNTIME,
        "w": WEIGHT,
        "k": CONSTANT,
        "a": WEIGHT,
        "b": RUNTIME,
        "c": CONSTANT,
    }


def test_optimize_folds_batch_norm_into_prepared_weights(tmp_path):
    """resnet_block's batch norm scale folded into the conv weights (conv-fold-scale)
    runs at load time: the optimized program has no weight-scaling kernel, simulate
    says which weights it prepared, and the JSON report lists them."""
    report = tmp_path / "sim.json"
    argv = ["simulate", "examples/resnet_block.model", "--hw", "datacenter"]
    assert main([*argv, "--report", str(report)]) == 0
    d = json.loads(report.read_text())
    assert d["prepared_weights"] and all(p["bytes"] > 0 for p in d["prepared_weights"])
    assert d["max_rel_error"] < 1e-4
    assert not any(k["name"].startswith("mul.") for k in d["kernels"])


def test_compile_names_the_prepared_weights(tmp_path, capsys):
    model = tmp_path / "w.model"
    model.write_text(MODEL)
    out = tmp_path / "w.asm"
    assert main(["compile", str(model), "--hw", "edge", "--no-optimize", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 weights prepared at load time" in printed
    assert out.read_text().count("input") >= 3  # the prepared buffers are inputs
