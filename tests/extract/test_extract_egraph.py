"""Loading the egraph-serialize format, building in Python, and format errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from extract_helpers import DATA, egraphs
from hypothesis import given, settings

from eqsat.extract import (
    EGraph,
    EGraphFormatError,
    NodeSpec,
    NoTermError,
    UnknownClassError,
    greedy_extract,
    load_egraph,
)
from eqsat.extract.serialized import parse_json, parse_json_dict, to_json_dict


def test_load_shared_subterm_file() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    assert g.n_nodes == 6
    assert set(g.class_ids) == {"S", "A", "B", "R"}
    assert [g.class_ids[r] for r in g.roots] == ["R"]
    root = g.node_index["root"]
    assert g.ops[root] == "f"
    assert [g.class_ids[c] for c in g.children(root)] == ["A", "B"]
    assert g.costs.tolist() == [4.0, 4.0, 1.0, 4.0, 1.0, 1.0]


def test_optional_fields_default_like_egraph_serialize() -> None:
    g = parse_json('{"nodes": {"a": {"op": "a", "eclass": "A", "children": [], "cost": 1}}}')
    assert g.costs.tolist() == [1.0]
    assert g.children(0) == ()
    assert not g.subsumed[0]
    assert g.roots == ()
    assert g.default_roots() == [0]  # no stored roots, no lets: classes nothing uses


def test_default_roots_prefer_let_bindings() -> None:
    g = load_egraph(DATA / "cycle.json").with_roots([])
    assert g.roots == ()
    assert [g.class_ids[c] for c in g.default_roots()] == ["X"]


def test_from_nodes_and_json_round_trip() -> None:
    g = EGraph.from_nodes(
        [
            NodeSpec("x", "x", "X", (), 2.0),
            NodeSpec("m", "mul", "M", ("X", "X"), 3.0),
            NodeSpec("m2", "shl", "M", ("X",), 1.0, subsumed=True),
        ],
        roots=["M"],
    )
    again = parse_json(json.dumps(to_json_dict(g)))
    assert again.node_ids == g.node_ids
    assert again.class_ids == g.class_ids
    assert again.child_class.tolist() == g.child_class.tolist()
    assert again.costs.tolist() == [2.0, 3.0, 1.0]
    assert again.subsumed.tolist() == [False, False, True]
    assert again.roots == g.roots
    assert g.child_sets[1] == (g.class_index["X"],)  # repeats dropped for DAG purposes


def test_with_costs_replaces_costs_only() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    h = g.with_costs(np.arange(6, dtype=float))
    assert h.costs.tolist() == [0, 1, 2, 3, 4, 5]
    assert g.costs.tolist() == [4.0, 4.0, 1.0, 4.0, 1.0, 1.0]
    assert h.child_class.tolist() == g.child_class.tolist()
    k = g.with_costs({"s": 0.5})
    assert k.costs[g.node_index["s"]] == 0.5
    with pytest.raises(EGraphFormatError, match="expected 6 costs"):
        g.with_costs([1.0])
    with pytest.raises(EGraphFormatError, match="unknown node"):
        g.with_costs({"nope": 1.0})
    with pytest.raises(EGraphFormatError, match="is not a number or"):
        g.with_costs([-np.inf] * 6)
    assert g.with_costs([-1.0] * 6).costs.tolist() == [-1.0] * 6  # rewards are allowed


def test_unknown_root_is_typed() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    with pytest.raises(UnknownClassError, match="'Q'"):
        g.resolve_roots(["Q"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "invalid JSON at line 1"),
        ("[1, 2]", "top level must be a JSON object"),
        ("{}", "missing field 'nodes'"),
        ('{"nodes": []}', "'nodes' must be an object"),
        ('{"nodes": {"a": 3}}', "node 'a' must be an object"),
        (
            '{"nodes": {"a": {"eclass": "A", "children": [], "cost": 1}}}',
            "node 'a': missing field 'op'",
        ),
        ('{"nodes": {"a": {"op": "a"}}}', "node 'a': missing field 'eclass'"),
        (
            '{"nodes": {"a": {"op": 1, "eclass": "A", "children": [], "cost": 1}}}',
            "'op' must be a string",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "children": "b", "cost": 1}}}',
            "'children' must be",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "children": ["b"], "cost": 1}}}',
            "child 'b' is not",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "cost": "1", "children": []}}}',
            "cost must be a number",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "cost": -Infinity, "children": []}}}',
            "cost must be a number or \\+inf",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "subsumed": 1, "children": [], "cost": 1}}}',
            "'subsumed' must be",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": [1], "children": [], "cost": 1}}}',
            "'eclass' must be a string id",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "children": [], "cost": 1}}, "root_eclasses": "A"}',
            "root_eclasses",
        ),
        (
            '{"nodes": {"a": {"op": "a", "eclass": "A", "children": [], "cost": 1}}, "class_data": []}',
            "'class_data'",
        ),
    ],
)
def test_malformed_json_raises_typed_error_with_source(text: str, message: str, tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(EGraphFormatError, match=message) as info:
        load_egraph(path)
    assert str(path) in str(info.value)
    assert info.value.source == str(path)


def test_missing_file_is_typed(tmp_path) -> None:
    with pytest.raises(EGraphFormatError, match="cannot read file"):
        load_egraph(tmp_path / "absent.json")


def test_python_child_class_without_nodes() -> None:
    with pytest.raises(EGraphFormatError, match="child class 'Z' has no nodes"):
        EGraph.from_nodes([NodeSpec("a", "f", "A", ("Z",))])
    with pytest.raises(EGraphFormatError, match="duplicate node id 'a'"):
        EGraph.from_nodes([NodeSpec("a", "f", "A"), NodeSpec("a", "g", "B")])


@settings(max_examples=60, deadline=None)
@given(egraphs(max_classes=8))
def test_json_round_trip_keeps_extraction(g: EGraph) -> None:
    again = parse_json(json.dumps(to_json_dict(g)))
    try:
        before = greedy_extract(g)
    except NoTermError:
        with pytest.raises(NoTermError):
            greedy_extract(again)
        return
    after = greedy_extract(again)
    assert after.choice == before.choice and after.dag_cost == before.dag_cost


def test_with_costs_drives_the_choice() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    assert greedy_extract(g).choice["A"] == "a_leaf"
    cheap_g = g.with_costs({"a_leaf": float("inf"), "s": 0.5})  # inf: never choose
    ext = greedy_extract(cheap_g)
    assert ext.choice["A"] == "a_of_s"
    assert ext.dag_cost == 1 + 1.5 + 1.5 - 0.5  # s shared by g(s) and h(s)


def test_root_ids_that_name_no_class_are_set_aside() -> None:
    # extraction-gym's lean-egg files name non-canonical root ids next to real ones.
    node = {"op": "a", "eclass": "A", "children": [], "cost": 1}
    g = parse_json_dict({"nodes": {"a": node}, "root_eclasses": ["A", "B"]})
    assert g.missing_roots == ("B",)
    assert [g.class_ids[r] for r in g.default_roots()] == ["A"]
    assert greedy_extract(g).choice == {"A": "a"}
    only_missing = parse_json_dict({"nodes": {"a": node}, "root_eclasses": ["B"]})
    with pytest.raises(NoTermError, match=r"no root class has a node.*'B'"):
        greedy_extract(only_missing)
