"""Printer and parser are inverses: parse_model(print_model(m)) == m for random
well-typed models and for every example, and the checked graphs are equal too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from eqsat.interpreter import evaluate, evaluate_nodes, random_bindings
from frontend import ast, check_model, parse_model, parse_model_file, print_model
from frontend.printer import format_number
from tests.conftest import EXAMPLES
from tests.strategies import models, scaled


@settings(max_examples=scaled(150), deadline=None)
@given(models())
def test_print_parse_round_trip(model):
    text = print_model(model)
    reparsed = parse_model(text)
    assert reparsed == model, text
    assert print_model(reparsed) == text
    assert check_model(reparsed) == check_model(model), text


@settings(max_examples=scaled(60), deadline=None)
@given(models())
def test_random_models_check_and_run(model):
    """The strategy only builds well-typed models, and every node's value has its type."""
    graph = check_model(model)
    with np.errstate(all="ignore"):
        values = evaluate_nodes(graph, random_bindings(graph, 0))
    live = graph.live()
    for i, node in graph:
        if live[i]:
            assert values[i].shape == node.type.shape, node
            assert values[i].dtype == node.type.dtype.np_dtype, node
    assert [name for name, _ in graph.outputs] == [
        n for item in model.items if isinstance(item, ast.OutputDecl) for n in item.names
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip(path):
    model = parse_model_file(path)
    text = print_model(model)
    again = parse_model(text)
    assert again == model
    assert check_model(again) == check_model(model)
    # Positions are not part of equality, but the reparsed ones point into the new text.
    assert again.source == text


def test_equality_ignores_positions_but_not_content():
    a = parse_model("model m {\n input x: f32[2]\n output x }")
    b = parse_model("model m { input x: f32[2] output x }")
    c = parse_model("model m { input x: f32[3] output x }")
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    "value", [0, 7, -3, 0.5, -2.0, 1e-12, 1.5e300, 3.0000000000000004, 2.0**60, 1e16]
)
def test_numbers_round_trip(value):
    text = f"model m {{ input x: f32[2]\n y = layernorm(x, x, x, eps={format_number(value)})\n const c: f32[] = {format_number(value)}\n output y }}"
    model = parse_model(text)
    assign = model.items[1]
    const = model.items[2]
    assert assign.expr.attrs[0].value == value
    assert type(assign.expr.attrs[0].value) is type(value)
    assert const.value == value


def test_run_on_reparsed_model_is_identical():
    model = parse_model_file(EXAMPLES[0])
    g1 = check_model(model)
    g2 = check_model(parse_model(print_model(model)))
    vals = random_bindings(g1, 3)
    out1, out2 = evaluate(g1, vals), evaluate(g2, vals)
    for k in out1:
        np.testing.assert_array_equal(out1[k], out2[k])
