"""pyproject.toml lists every package explicitly (rules/ is mapped to a package of
its own), so a new subpackage that is not listed would be missing from a
non-editable install. This test fails until it is listed."""

from __future__ import annotations

import tomllib

from tests.conftest import ROOT


def test_every_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("eqsat", "frontend", "backend", "hwsim")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"]["eqsat_rules"] == "rules"


def test_data_files_are_declared() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert "*.lark" in data["frontend"]
    assert "*.rules" in data["eqsat_rules"]
    assert any(pattern.endswith(".egg") for pattern in data["eqsat"])
    assert "presets/*.toml" in data["hwsim"]
