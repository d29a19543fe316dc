"""The `eqsat extract` subcommand: human output, --json, errors, plugging into a parent CLI."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from extract_helpers import DATA

from eqsat.extract.cli import EXIT_BAD_INPUT, EXIT_NO_TERM, EXIT_OK, add_parser, main

SHARED = str(DATA / "shared_subterm.json")


def test_human_output_greedy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHARED]) == EXIT_OK
    out = capsys.readouterr().out
    assert "cost:      9" in out
    assert "nodes:     3 chosen" in out
    assert "extractor: greedy (heuristic)" in out


def test_json_output_ilp(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHARED, "--extractor", "ilp", "--time-limit", "10", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["cost"] == 7.0
    assert data["nodes"] == ["s", "a_of_s", "b_of_s", "root"]
    assert data["status"] == "optimal"


def test_explicit_root(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHARED, "--root", "A", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["cost"] == 4.0 and data["nodes"] == ["a_leaf"]


def test_errors_are_reported_with_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": {"a": {"op": "a"}}}')
    assert main([str(bad)]) == EXIT_BAD_INPUT
    assert f"{bad}: node 'a': missing field 'eclass'" in capsys.readouterr().err
    assert main([SHARED, "--root", "nope"]) == EXIT_BAD_INPUT
    assert "no e-class 'nope'" in capsys.readouterr().err
    loop = tmp_path / "loop.json"
    loop.write_text(
        '{"nodes": {"a": {"op": "f", "eclass": "A", "children": ["a"], "cost": 1}}, "root_eclasses": ["A"]}'
    )
    assert main([str(loop)]) == EXIT_NO_TERM
    assert "no finite acyclic term" in capsys.readouterr().err


def test_plugs_into_a_parent_parser(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="eqsat")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["extract", SHARED, "--json"])
    assert args.handler(args) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["cost"] == 9.0


def test_runs_as_module() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "eqsat.extract.cli", SHARED, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cost"] == 9.0


def test_ilp_reports_its_gap_and_lower_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHARED, "--extractor", "ilp", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["gap"] == 0.0 and data["lower_bound"] == 7.0
    assert main([SHARED, "--extractor", "ilp"]) == EXIT_OK
    assert "gap:       0.0000% (lower bound 7)" in capsys.readouterr().out


def test_root_ids_naming_no_class_are_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "roots.json"
    node = {"op": "a", "eclass": "A", "children": [], "cost": 1}
    path.write_text(json.dumps({"nodes": {"a": node}, "root_eclasses": ["A", "Z"]}))
    assert main([str(path), "--json"]) == EXIT_OK
    captured = capsys.readouterr()
    assert json.loads(captured.out)["roots"] == ["A"]
    assert "root class(es) ['Z']" in captured.err and "warning" in captured.err
    path.write_text(json.dumps({"nodes": {"a": node}, "root_eclasses": ["Z"]}))
    assert main([str(path)]) == EXIT_NO_TERM
    assert "no root class has a node" in capsys.readouterr().err
