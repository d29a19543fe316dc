"""`eqsat extract` of hostile e-graph JSON (issue 16): nesting, numbers beyond float,
missing fields and costs that are not finite are clean errors naming the file and
the node, checked before parsing where they can be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqsat.cli import main
from eqsat.extract import load_egraph
from eqsat.extract.errors import EGraphFormatError
from eqsat.extract.serialized import MAX_JSON_NESTING, nesting_problem

NODE = {"op": "a", "eclass": "A", "children": [], "cost": 1}


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.json"
    path.write_text(text)
    return path


def _node_json(**fields) -> str:
    return json.dumps({"nodes": {"a": {**NODE, **fields}}})


def test_json_nested_100000_deep_is_refused_before_parsing(tmp_path: Path, capsys) -> None:
    deep = '{"nodes": {"a": {"op": "a", "eclass": "A", "children": [], "cost": 1,\n"x": '
    path = _file(tmp_path, deep + "[" * 100_000 + "]" * 100_000 + "}}}")
    assert main(["extract", str(path)]) == 2  # the extract command's bad-input code
    err = capsys.readouterr().err
    assert f"{path}: line 2 column {6 + MAX_JSON_NESTING - 3}: JSON nested more than 100" in err
    assert "Traceback" not in err


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"nodes": {"a": {**NODE, "op": "[" * 500 + '\\"{' * 300}}})
    assert nesting_problem(text) is None
    assert nesting_problem("[" * 101) == (
        "line 1 column 101: JSON nested more than 100 levels deep (egraph-serialize nests 4)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _node_json(cost=10**400),
            "node 'a': cost must be a finite number from -1e+15 to 1e+15, got inf",
        ),
        (_node_json().replace('"cost": 1', '"cost": 1e400'), "from -1e+15 to 1e+15, got inf"),
        (_node_json().replace('"cost": 1', '"cost": Infinity'), "got inf"),
        (
            _node_json().replace('"cost": 1', '"cost": -Infinity'),
            "must be a number or +inf, got -inf",
        ),
        (
            _node_json().replace('"cost": 1', '"cost": NaN'),
            "node 'a': cost must be a number or +inf, got nan",
        ),
        (
            _node_json(cost=-1e16),
            "node 'a': cost must be a finite number from -1e+15 to 1e+15, got -1e+16",
        ),
        (
            _node_json(cost=1e16),
            "node 'a': cost must be a finite number from -1e+15 to 1e+15, got 1e+16",
        ),
        (_node_json().replace(', "cost": 1', ""), "node 'a': missing field 'cost'"),
        (_node_json().replace('"children": [], ', ""), "node 'a': missing field 'children'"),
        (_node_json(eclass=0).replace('"eclass": 0', '"eclass": ' + "9" * 5000), "got inf"),
    ],
)
def test_bad_nodes_name_the_file_and_node(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(EGraphFormatError) as info:
        load_egraph(path)
    assert str(info.value) == f"{path}: {info.value.problem}"
    assert message in info.value.problem


def test_the_cli_reports_them_without_a_traceback(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, _node_json(cost=10**400))
    assert main(["extract", str(path)]) == 2  # the extract command's bad-input code
    err = capsys.readouterr().err
    assert err.startswith(f"eqsat extract: error: {path}: node 'a': cost must be")
