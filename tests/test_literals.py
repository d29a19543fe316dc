"""Constant tensors with values in the model text (inline, `external` in the params
file, a dimension's value), `iota`, and the folding of what depends only on them:
they parse and print back, evaluate, optimize, compile and simulate, and the params
file next to a model is found without a flag."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.cli import main
from eqsat.fileio import load_arrays, save_arrays
from eqsat.fold import fold_constants
from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from frontend import check_model, graph_to_model, parse_model, print_model
from frontend.errors import MissingDataError, TypeMismatchError
from hwsim import load_hardware, simulate

CAUSAL = """
model causal {
  dim S = 4
  input x: f32[S, S]
  const pos: i32[1, 4] = [0, 1, 2, 3]
  const neg: f32[] = -inf
  const n: f32[] = S
  row = iota(shape=[S, S], axis=0)
  col = iota(shape=[S, S], axis=1)
  future = greater(col, row)
  scores = where(future, neg, mul(x, n))
  y = softmax(scores, axis=-1)
  output y
}
"""


def _causal_reference(x: np.ndarray) -> np.ndarray:
    s = x.shape[0]
    scores = np.where(np.arange(s)[None, :] > np.arange(s)[:, None], -np.inf, x * s)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@settings(max_examples=10, deadline=None)
@given(s=st.integers(1, 9), seed=st.integers(0, 100))
def test_a_causal_mask_from_iota_is_right_at_every_size(s, seed):
    graph = check_model(parse_model(CAUSAL), {"S": s})
    x = np.random.default_rng(seed).standard_normal((s, s)).astype(np.float32)
    want = _causal_reference(x)
    for g in (graph, fold_constants(graph)):
        np.testing.assert_allclose(evaluate(g, {"x": x})["y"], want, rtol=1e-5, atol=1e-6)


def test_folding_turns_the_mask_into_one_literal():
    graph = fold_constants(check_model(parse_model(CAUSAL), {"S": 5}))
    ops = [n.op for n in graph.nodes]
    assert "iota" not in ops and "greater" not in ops and "literal" in ops
    (mask,) = [v for v in graph.constants.values() if v.shape == (5, 5)]
    np.testing.assert_array_equal(mask, np.triu(np.ones((5, 5)), 1).astype(np.int8))


def test_literals_print_inline_or_external_and_check_back(tmp_path):
    graph = fold_constants(check_model(parse_model(CAUSAL), {"S": 8}))
    model = graph_to_model(graph)
    text = print_model(model)
    assert "= external" in text  # the 8 x 8 mask is larger than the inline limit
    assert "const pos: i32[1, 4] = [0, 1, 2, 3]" not in text  # dead: dropped
    path = tmp_path / "m.model"
    from eqsat.loading import save_model

    written = save_model(path, graph, {})
    assert written == tmp_path / "m.params.npz"
    again = load_model(path).graph
    assert again.structure() == graph.structure()


def test_missing_external_values_are_an_error(tmp_path):
    path = tmp_path / "m.model"
    path.write_text(
        "model m {\n  input x: f32[2]\n  const c: f32[2] = external\n  y = add(x, c)\n  output y\n}\n"
    )
    with pytest.raises(MissingDataError, match="no params file was found"):
        load_model(path)
    save_arrays(tmp_path / "m.params.npz", {"c": np.ones((3,), np.float32)})
    with pytest.raises(TypeMismatchError, match=r"holds \[3\]"):
        load_model(path)
    save_arrays(tmp_path / "m.params.npz", {"c": np.array([1.5, -2.0], np.float32)})
    graph = load_model(path).graph
    np.testing.assert_array_equal(evaluate(graph, {"x": np.zeros(2, np.float32)})["y"], [1.5, -2.0])


def test_params_file_next_to_a_model_is_used(tmp_path):
    path = tmp_path / "lin.model"
    path.write_text(
        "model lin {\n  input x: f32[1, 3]\n  param w: f32[3, 2]\n  y = matmul(x, w)\n  output y\n}\n"
    )
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    save_arrays(tmp_path / "lin.params.npz", {"w": w})
    x = np.ones((1, 3), np.float32)
    save_arrays(tmp_path / "in.npz", {"x": x})
    assert (
        main(
            ["run", str(path), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz")]
        )
        == 0
    )
    np.testing.assert_array_equal(load_arrays(tmp_path / "o.npz")["y"], x @ w)


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
def test_literals_and_iota_simulate_exactly(hw):
    graph = check_model(parse_model(CAUSAL), {"S": 6})
    x = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
    machine = load_hardware(hw)
    for g in (graph, fold_constants(graph)):
        compiled = compile_graph(g, machine)
        result = simulate(compiled.program, machine, compiled.feeds({"x": x}))
        got = compiled.results(result.outputs)["y"]
        np.testing.assert_allclose(got, evaluate(g, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_optimize_keeps_literal_values(tmp_path):
    src = tmp_path / "c.model"
    src.write_text(CAUSAL.replace("dim S = 4", "dim S = 12"))
    out = tmp_path / "o.model"
    assert main(["optimize", str(src), "-q", "--verify", "-o", str(out)]) == 0
    assert (tmp_path / "o.params.npz").exists()  # the 12 x 12 mask, external
    x = np.random.default_rng(1).standard_normal((12, 12)).astype(np.float32)
    got = evaluate(load_model(out).graph, {"x": x})["y"]
    np.testing.assert_allclose(got, _causal_reference(x), rtol=1e-5, atol=1e-6)


def test_a_dimension_as_a_value():
    graph = check_model(
        parse_model("model m {\n  dim S = 3\n  const n: i32[] = S\n  output n\n}\n"), {"S": 7}
    )
    assert evaluate(graph, {})["n"] == 7


def test_a_zero_fill_has_no_sign():
    """egglog's f64 holds -0.0 and 0.0 as one value: a const keeps 0.0 for both, so
    what the e-graph hands back is what the model meant."""
    import math

    from eqsat.ir.graph import GraphBuilder
    from eqsat.ir.types import DType, TensorType

    b = GraphBuilder("m")
    node = b.graph.nodes[b.const(-0.0, TensorType(DType.F32, (2, 1)))]
    assert math.copysign(1.0, float(node.attr("value"))) == 1.0
