"""The project's modules import one way: no import circle among eqsat, backend, frontend
and hwsim, counting imports inside functions too (they only defer a circle to run
time). Imports under `if TYPE_CHECKING:` never run and are not counted."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("eqsat", "backend", "frontend", "hwsim")


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _type_only(tree: ast.AST) -> set[int]:
    """The nodes in the body of an `if TYPE_CHECKING:` (its else runs)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [f"{base}.{a.name}" for a in node.names] + [base]


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """module -> the project modules it imports (the closest module of a dotted name)."""
    modules = _modules(root, packages)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
                names = _imported(module, path, node)
                # `from pkg import name`: the submodule if `name` is one, else pkg
                target = next((owner(n) for n in names if n in modules), owner(names[-1]))
                if target is not None and target != module:
                    graph[module].add(target)
    return graph


def test_no_import_circle():
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as err:
        cycle = " -> ".join(err.args[1])
        raise AssertionError(
            f"import circle: {cycle}. Move what both sides need into a module below them "
            "(or import a type only under `if TYPE_CHECKING:`)"
        ) from None


def test_the_check_sees_a_circle_through_a_function_level_import(tmp_path):
    """The detector itself: a circle closed by an import inside a function is found, a
    type-only import is not counted."""
    pkg = tmp_path / "eqsat"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from eqsat.b import g\n")
    (pkg / "b.py").write_text("def g():\n    from eqsat import a\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n"
    )
    (pkg / "d.py").write_text("from .c import x\n")
    graph = import_graph(tmp_path, ("eqsat",))
    assert graph["eqsat.a"] == {"eqsat.b"} and graph["eqsat.b"] == {"eqsat.a"}
    assert graph["eqsat.c"] == set() and graph["eqsat.d"] == {"eqsat.c"}
    with pytest.raises(CycleError):
        TopologicalSorter(graph).prepare()
    del graph["eqsat.b"]
    TopologicalSorter(graph).prepare()
