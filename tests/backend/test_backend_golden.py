"""Golden test of the emitted assembly of a tiny model (tests/backend/golden/*.asm).

Regenerate with EQSAT_REGEN_GOLDEN=1. An expectation that is empty, does not parse as
hwsim assembly or has no kernel is rejected rather than silently compared (a golden
file with a typo must not pass by checking nothing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backend import compile_graph
from frontend import load_model
from hwsim import AsmError, load_hardware, parse
from hwsim.isa import Kernel

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
REGEN = os.environ.get("EQSAT_REGEN_GOLDEN") == "1"
CASES = [("tiny", "edge"), ("tiny", "datacenter")]


def check_expectation(text: str, where: str) -> None:
    """Raise ValueError for a golden file that cannot be a real expectation."""
    if not text.strip():
        raise ValueError(f"{where}: golden file is empty; regenerate with EQSAT_REGEN_GOLDEN=1")
    try:
        program = parse(text, where)
    except AsmError as e:
        raise ValueError(f"{where}: golden file is not valid hwsim assembly: {e}") from None
    if not any(isinstance(i, Kernel) for i in program.instrs) or not program.outputs():
        raise ValueError(f"{where}: golden file declares no output or no kernel")


@pytest.mark.parametrize(("stem", "hw_name"), CASES)
def test_emitted_assembly_matches_golden(stem, hw_name):
    _, graph = load_model(HERE / "data" / f"{stem}.model")
    asm = compile_graph(graph, load_hardware(hw_name)).asm
    path = GOLDEN / f"{stem}.{hw_name}.asm"
    if REGEN:
        path.write_text(asm)
    expected = path.read_text()
    check_expectation(expected, str(path))
    assert asm == expected, (
        f"assembly changed; inspect and regenerate {path} with EQSAT_REGEN_GOLDEN=1"
    )


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   \n",
        "kernel\n",
        ".output y f32 [4]\n\nlod sram@0:1x1:f32 <- y[0:1x1/1]\n",
        ".input x f32 [4]\n",
    ],
)
def test_golden_harness_rejects_malformed_expectations(bad):
    with pytest.raises(ValueError):
        check_expectation(bad, "<golden>")
