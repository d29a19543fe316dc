"""E-graphs that egglog 13.2 really serializes load and extract."""

from __future__ import annotations

import json

import pytest
from extract_helpers import check_valid

from eqsat.extract import OPTIMAL, greedy_extract, ilp_extract
from eqsat.extract.serialized import parse_json

bindings = pytest.importorskip("egglog.bindings")

MATH = """
(datatype Math (Num i64) (Var String) (Add Math Math) (Mul Math Math))
(let $x (Add (Mul (Num 2) (Var "a")) (Num 0)))
(let $y (Mul (Var "a") (Var "a")))
(rewrite (Add a (Num 0)) a)
(rewrite (Mul a b) (Mul b a))
(run 5)
"""

MATMUL = """
(datatype M (Leaf String) (MatMul M M) (Add M M))
(ruleset opt)
(rewrite (MatMul (MatMul a b) c) (MatMul a (MatMul b c)) :ruleset opt)
(rewrite (MatMul a (MatMul b c)) (MatMul (MatMul a b) c) :ruleset opt)
(rewrite (Add (MatMul a b) (MatMul a c)) (MatMul a (Add b c)) :ruleset opt)
(let $a (Leaf "a"))
(let $b (Leaf "b"))
(let $c (Leaf "c"))
(let $d (Leaf "d"))
(let $y (MatMul (MatMul (MatMul (MatMul $a $b) $c) $d) $a))
(let $z (Add (MatMul $a $b) (MatMul $a $d)))
(run-schedule (saturate (run opt)))
"""


def serialize(program: str, roots: list[str]) -> str:
    egraph = bindings.EGraph()
    egraph.run_program(*egraph.parse_program(program))
    span = bindings.RustSpan("test", 0, 0)
    return egraph.serialize([bindings.Var(span, r) for r in roots]).to_json()


def test_egglog_json_shape_is_what_we_rely_on() -> None:
    data = json.loads(serialize(MATH, ["$x"]))
    assert set(data) == {"nodes", "root_eclasses", "class_data"}
    node = data["nodes"]["function-0-Add"]
    assert set(node) == {"op", "children", "eclass", "cost", "subsumed"}
    assert node["op"] == "Add" and node["eclass"].startswith("Math-")
    assert all(c in data["nodes"] for c in node["children"])  # children are node ids
    assert data["nodes"]["primitive-i64-2"]["op"] == "2"
    assert data["class_data"][data["root_eclasses"][0]] == {"type": "Math", "let": "$x"}


def test_egglog_math_extracts_rewritten_term() -> None:
    g = parse_json(serialize(MATH, ["$x"]), source="math")
    ext = greedy_extract(g)
    # x + 0 => x, so Mul(Num(2), Var("a")) (or its commuted twin): 5 nodes of cost 1.
    assert ext.dag_cost == 5.0
    assert sorted(g.ops[g.node_index[n]] for n in ext.nodes) == ['"a"', "2", "Mul", "Num", "Var"]
    ilp = ilp_extract(g)
    assert ilp.status == OPTIMAL and ilp.dag_cost == 5.0


def test_egglog_without_roots_uses_let_bindings() -> None:
    g = parse_json(serialize(MATH, []), source="math")
    assert g.roots == ()
    roots = {g.class_data[g.class_ids[r]]["let"] for r in g.default_roots()}
    assert roots == {"$x", "$y"}
    ext = greedy_extract(g)
    # $x = Mul(Num 2, Var a), $y = Mul(Var a, Var a): Var a and "a" shared -> 5 + 1.
    assert ext.dag_cost == 6.0


def test_egglog_matmul_graph_greedy_and_ilp_agree_on_validity() -> None:
    g = parse_json(serialize(MATMUL, ["$y", "$z"]), source="matmul")
    assert g.n_nodes > 25
    roots = [g.class_ids[r] for r in g.roots]
    greedy = greedy_extract(g)
    ilp = ilp_extract(g, time_limit=30)
    assert check_valid(g, greedy.choice, roots) == greedy.dag_cost
    assert check_valid(g, ilp.choice, roots) == ilp.dag_cost
    assert ilp.status == OPTIMAL
    # leaves a b c d (Leaf + string each) 8, $y four MatMuls 4, $z = MatMul(a, Add(b, d)) 2.
    assert greedy.dag_cost == ilp.dag_cost == 14.0
