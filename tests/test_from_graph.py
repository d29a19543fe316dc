"""graph_to_model writes a typed graph back as model text that re-parses and re-checks
to the same program and evaluates identically."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings

from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import Graph
from frontend import check_model, graph_to_model, parse_model, parse_model_file, print_model
from frontend.from_graph import MAX_NESTING
from tests.conftest import EXAMPLES
from tests.strategies import graphs, scaled


def rebuild(graph: Graph) -> tuple[str, Graph]:
    text = print_model(graph_to_model(graph))
    return text, check_model(parse_model(text))


def output_terms(graph: Graph) -> list[tuple[str, object]]:
    """Each output as a nested term (op, attrs, type, operands...): the program's
    meaning up to node order, node names and sharing."""
    memo: dict[int, object] = {}

    def term(i: int):
        if i not in memo:
            n = graph.nodes[i]
            memo[i] = (n.op, n.attrs, n.type, tuple(term(j) for j in n.inputs))
        return memo[i]

    return [(name, term(i)) for name, i in graph.outputs]


def assert_same_results(g1: Graph, g2: Graph, seed: int = 0) -> None:
    values = random_bindings(g1, seed)
    assert random_bindings(g2, seed).keys() == values.keys()
    with np.errstate(all="ignore"):
        out1, out2 = evaluate(g1, values), evaluate(g2, values)
    assert out1.keys() == out2.keys()
    for name in out1:
        a, b = out1[name], out2[name]
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        assert a.tobytes() == b.tobytes(), name  # bit for bit, NaNs included


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_survive_graph_to_model(path):
    graph = check_model(parse_model_file(path))
    text, again = rebuild(graph)
    # Same nodes in the same order (names of intermediates aside), same outputs.
    assert again.nodes == graph.nodes, text
    assert again.outputs == graph.outputs
    assert again.structure() == graph.structure()
    assert_same_results(graph, again)
    # Writing it again is a fixed point.
    assert rebuild(again)[0] == text


@settings(max_examples=scaled(100), deadline=None)
@given(graphs())
def test_random_graphs_survive_graph_to_model(graph):
    text, again = rebuild(graph)
    assert output_terms(again) == output_terms(graph), text
    live = graph.live()
    if all(live[i] or n.op in ("input", "param") for i, n in graph):
        # Without dead code to drop, even the node order is kept.
        event("no dead code")
        assert again.nodes == graph.nodes, text
        assert again.outputs == graph.outputs
    assert_same_results(graph, again)
    assert rebuild(again)[0] == text


def test_shared_values_get_names_and_single_uses_nest():
    model = parse_model(
        """model m {
          input x: f32[2, 3]
          a = relu(x)
          b = add(a, a)
          c = neg(exp(b))
          output c
        }"""
    )
    text = print_model(graph_to_model(check_model(model)))
    assert "a = relu(x)" in text  # used twice: a statement of its own
    assert "c = neg(exp(add(a, a)))" in text  # used once: nested into its user


def test_deep_chains_are_split():
    body = "x"
    for _ in range(3 * MAX_NESTING):
        body = f"neg({body})"
    graph = check_model(parse_model(f"model m {{ input x: f32[2]\n y = {body}\n output y }}"))
    text, again = rebuild(graph)
    assert max(line.count("(") for line in text.splitlines()) <= MAX_NESTING
    assert again.nodes == graph.nodes


def test_defaults_are_left_out_and_canonical_attrs_kept():
    graph = check_model(
        parse_model(
            "model m { input x: f32[2, 3, 4]\n"
            " y = softmax(reshape(transpose(x, perm=[0, -1, 1]), shape=[-1, 3]), axis=-1)\n"
            " z = reduce_sum(y, keepdims=false)\n output y, z }"
        )
    )
    text = print_model(graph_to_model(graph))
    assert "perm=[0, 2, 1]" in text
    assert "shape=[8, 3]" in text
    assert "axis=1" in text  # canonical axis, not -1 (it is not the default -1)
    assert "keepdims" not in text


def test_output_that_is_a_leaf_or_an_alias():
    graph = check_model(
        parse_model("model m { input x: f32[2]\n y = relu(x)\n z = y\n output x, y, z }")
    )
    text, again = rebuild(graph)
    assert again.outputs == graph.outputs, text
    assert_same_results(graph, again)
