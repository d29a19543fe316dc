"""README stays true: it names every op of the registry, and CI runs the test command
of its quick start."""

from __future__ import annotations

import re

from eqsat.ops import REGISTRY, OpKind
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_readme_lists_every_op() -> None:
    ops_section = README.split("## Ops", 1)[1].split("\n## ", 1)[0]
    words = set(re.findall(r"[a-z0-9_]+", ops_section))
    missing = [n for n, op in REGISTRY.items() if op.kind is not OpKind.LEAF and n not in words]
    assert not missing, f"README's Ops section does not mention: {missing}"


def test_ci_runs_the_quick_start_test_command() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    [test_line] = [line for line in quick.splitlines() if "pytest" in line]
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_line.strip() in ci.splitlines()


def test_readme_lists_every_command() -> None:
    from eqsat.cli import build_parser

    table = README.split("## What works", 1)[1].split("\n## ", 1)[0]
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    missing = [name for name in sub.choices if f"`eqsat {name}" not in table]
    assert not missing, f"README's command table does not mention: {missing}"
