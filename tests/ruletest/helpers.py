"""Shared by the rule-test tests: the repository's rules, and a rules file without one
of its rules."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules"
BUNDLED = ("algebra", "dce", "fusion", "layout", "quant", "tiling")

RELU_RULES = """ruleset demo

# relu(relu(x)) = relu(x)
relu-twice: relu(relu(x)) => relu(x)
"""


def without_rule(text: str, name: str) -> str:
    """`text` of a rules file with the rule `name` (its line and its indented
    continuation lines) left out."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"{re.escape(name)}\s*:", line))
    end = start + 1
    while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
        end += 1
    return "\n".join(lines[:start] + lines[end:]) + "\n"


def copy_rules(to: Path, drop: tuple[str, str] | None = None) -> Path:
    """The bundled *.rules copied into `to`; `drop=(file stem, rule)` leaves one out."""
    to.mkdir(parents=True, exist_ok=True)
    for path in RULES.glob("*.rules"):
        shutil.copy(path, to / path.name)
    if drop is not None:
        stem, rule = drop
        target = to / f"{stem}.rules"
        target.write_text(without_rule(target.read_text(), rule))
    return to
