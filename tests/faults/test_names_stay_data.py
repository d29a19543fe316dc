"""Names from a user's files stay data (issue 16): through every door a name can enter
by (model statements, input and param names, ONNX graph, node and tensor names, rule
names, variables, rulesets, a rules file's path and docs), egglog syntax in it never
reaches the e-graph program unquoted, and the optimized program is the one plain
names give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from eqsat.errors import UserError
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.rules.errors import RuleSyntaxError
from eqsat.rules.library import compile_rules
from eqsat.rules.loader import load_rules
from eqsat.rulesets import compile_rule_paths
from frontend import check_model, parse_model
from frontend.onnx import import_onnx
from frontend.printer import format_item
from tests.optimize_helpers import optimize_graph

HOSTILE = [
    'x") (run 1000) ("',
    "w\\",
    'b\n(run 1000)\n"',
    "y名前\t(let $n0 (Relu $n0))",
    "; (push) ) ) )",
]
PLAIN = ["x", "w", "b", "y", "z"]


def _mlp(names: list[str]) -> Graph:
    x, w, b, y, _ = names
    g = GraphBuilder("m")
    xi = g.leaf("input", x, TensorType(DType.F32, (4, 8)))
    wi = g.leaf("param", w, TensorType(DType.F32, (8, 8)))
    bi = g.leaf("param", b, TensorType(DType.F32, (8,)))
    h = g.add("relu", (g.add("add", (g.add("matmul", (xi, wi), {}), bi), {}),), {})
    g.output(y, h)
    return g.graph


def _shape_of(graph: Graph) -> list[tuple]:
    """The program without its names: each node's op, operands, type and attributes."""
    return [
        (n.op, n.inputs, str(n.type), {k: v for k, v in n.attr_dict.items() if k != "name"})
        for _, n in graph
    ]


def _names(graph: Graph) -> list[str]:
    leaves = [str(n.attr("name")) for _, n in graph if n.op in ("input", "param")]
    return leaves + [name for name, _ in graph.outputs]


def test_graph_leaf_and_output_names_are_quoted() -> None:
    plain = optimize_graph(_mlp(PLAIN))
    hostile = optimize_graph(_mlp(HOSTILE))
    assert _shape_of(hostile.graph) == _shape_of(plain.graph)
    assert hostile.after == plain.after
    assert hostile.saturation.nodes == plain.saturation.nodes
    assert _names(hostile.graph) == [HOSTILE[0], HOSTILE[1], HOSTILE[2], HOSTILE[3]]


MODEL = """model {name} {{
  input {x}: f32[4, 8]
  param {w}: f32[8, 8]
  param {b}: f32[8]
  {h} = add(matmul({x}, {w}), {b})
  {y} = relu({h})
  output {y}
}}
"""
# Model names are [A-Za-z_][A-Za-z0-9_.]*; the worst they can hold is egglog's words.
EGGLOG_WORDS = dict(name="run", x="let", w="union", b="Relu", h="n0", y="ShapeOf.i64")
PLAIN_WORDS = dict(name="m", x="x", w="w", b="b", h="h", y="y")


def test_model_statement_and_leaf_names_are_data() -> None:
    plain = optimize_graph(check_model(parse_model(MODEL.format(**PLAIN_WORDS))))
    words = optimize_graph(check_model(parse_model(MODEL.format(**EGGLOG_WORDS))))
    assert _shape_of(words.graph) == _shape_of(plain.graph)
    assert words.after == plain.after
    assert _names(words.graph) == ["let", "union", "Relu", "ShapeOf.i64"]


def _onnx(names: list[str], graph_name: str, node_names: list[str]) -> onnx.ModelProto:
    x, w, b, y, h = names
    init = [
        numpy_helper.from_array(np.ones((8, 8), np.float32), w),
        numpy_helper.from_array(np.ones((8,), np.float32), b),
    ]
    nodes = [
        helper.make_node("MatMul", [x, w], [h], name=node_names[0]),
        helper.make_node("Add", [h, b], [h + "+"], name=node_names[1]),
        helper.make_node("Relu", [h + "+"], [y], name=node_names[2]),
    ]
    graph = helper.make_graph(
        nodes,
        graph_name,
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [4, 8])],
        init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_graph_node_and_tensor_names_are_data() -> None:
    plain = import_onnx(_onnx(PLAIN, "g", ["n1", "n2", "n3"]))
    hostile = import_onnx(_onnx(HOSTILE, 'g")\n(run 1000)', [*HOSTILE[:2], "\n}\n"]))
    # The model text the import writes parses back to the same model: no name or
    # comment can end a statement or the model early.
    text = hostile.text()
    reread = parse_model(text).items
    assert [format_item(i) for i in reread] == [format_item(i) for i in hostile.model.items]
    assert "(run 1000)" in text  # kept, in a comment naming the ONNX tensor
    graphs = [check_model(m.model, None, m.arrays) for m in (plain, hostile)]
    results = [optimize_graph(g) for g in graphs]
    assert _shape_of(results[1].graph) == _shape_of(results[0].graph)
    assert results[1].after == results[0].after


RULES = """ruleset {ruleset}
# {doc}
{rule}: {r} = relu(relu({x})) => relu({x}) if shape({r}) == shape({x})
"""
DEEP_RELU = """model m {
  input x: f32[4, 8]
  y = relu(relu(relu(relu(x))))
  output y
}
"""


def _rules_file(folder: Path, **names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "r.rules"
    path.write_text(RULES.format(**names), encoding="utf-8")
    return path


def test_rule_names_variables_path_and_doc_are_data(tmp_path: Path) -> None:
    plain = _rules_file(tmp_path / "plain", ruleset="mine", doc="d", rule="twice", r="r", x="x")
    hostile = _rules_file(
        tmp_path / "a\n(run 1000)\n;(",  # the path is printed in a comment of the program
        ruleset="run",
        doc="doc\x85(run 1000)\u2028(push)",  # line ends Python knows and egglog may not
        rule="let",
        r="union",
        x="rule",
    )
    texts = [compile_rules(load_rules([p])) for p in (plain, hostile)]
    assert all(line.startswith(("(", ";", " ")) for line in texts[1].splitlines() if line)
    graph = check_model(parse_model(DEEP_RELU))
    results = [optimize_graph(graph, compile_rule_paths([p])) for p in (plain, hostile)]
    assert _shape_of(results[1].graph) == _shape_of(results[0].graph)
    assert results[1].saturation.nodes == results[0].saturation.nodes
    assert [op for _, n in results[1].graph for op in [n.op]] == ["input", "relu"]


@pytest.mark.parametrize("ruleset", ["Op", "Relu", "ShapeOf", "len", "true", "bo", "analysis"])
def test_ruleset_names_the_program_uses_are_refused(tmp_path: Path, ruleset: str) -> None:
    path = _rules_file(tmp_path, ruleset=ruleset, doc="d", rule="twice", r="r", x="x")
    with pytest.raises(RuleSyntaxError) as info:
        load_rules([path])
    assert f"ruleset name '{ruleset}'" in str(info.value)
    assert str(info.value).startswith(f"{path}:1:9: error:")


def test_rule_file_names_with_egglog_syntax_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x) (run 1000) (y.rules"
    path.write_text("# d\ntwice: relu(relu(x)) => relu(x)\n")
    with pytest.raises(UserError, match="must be letters, digits"):
        load_rules([path])
