"""The host side of hwsim: its text form (golden), its timing fields, its refusals."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from backend.control import compile_control
from hwsim.asm import AsmError
from hwsim.hardware import load_hardware
from hwsim.host import HostProgram, run_host
from hwsim.host_asm import format_host, format_host_program, parse_host_program
from hwsim.report import SimulationError
from tests.control.helpers import DECODE_LOOP, EARLY_EXIT, loaded

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("path", [EARLY_EXIT, DECODE_LOOP], ids=lambda p: p.stem)
def test_host_program_text_matches_golden(path) -> None:
    """The host control as written (no optimization): which program runs when, what
    the host reads back. EQSAT_UPDATE_GOLDEN=1 rewrites the files."""
    compiled = compile_control(loaded(path).program, load_hardware("edge"))
    text = format_host(compiled.host)
    golden = GOLDEN / f"{path.stem}.host"
    if os.environ.get("EQSAT_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    # The full listing is the host part, then each program's assembly under a header.
    assert compiled.asm.startswith(text)
    for name in compiled.host.programs:
        assert f"\n.program {name}\n" in compiled.asm


def test_presets_price_host_control() -> None:
    edge, dc = load_hardware("edge"), load_hardware("datacenter")
    assert (edge.host_readback_cycles, edge.dispatch_cycles) == (300, 1000)
    assert (dc.host_readback_cycles, dc.dispatch_cycles) == (1500, 5000)


def test_a_file_without_the_fields_gets_the_defaults(tmp_path) -> None:
    text = (Path(__file__).parents[2] / "hwsim" / "presets" / "edge.toml").read_text()
    kept = [
        line
        for line in text.splitlines()
        if not line.startswith(("host_readback_cycles", "dispatch_cycles"))
    ]
    path = tmp_path / "hw.toml"
    path.write_text("\n".join(kept) + "\n")
    hw = load_hardware(path)
    assert (hw.host_readback_cycles, hw.dispatch_cycles) == (1000, 2000)


def test_datacenter_pays_more_for_the_same_control() -> None:
    values = loaded(EARLY_EXIT).bindings(1)
    reports = {}
    for name in ("edge", "datacenter"):
        hw = load_hardware(name)
        _, reports[name] = compile_control(loaded(EARLY_EXIT).program, hw).run(values)
    for name, report in reports.items():
        hw = load_hardware(name)
        assert report.control_cycles == (
            report.dispatches * hw.dispatch_cycles + report.readbacks * hw.host_readback_cycles
        )


def test_host_refuses_a_value_no_program_wrote() -> None:
    compiled = compile_control(loaded(EARLY_EXIT).program, load_hardware("edge"))
    values = compiled.values(loaded(EARLY_EXIT).bindings(0))
    del values["x"]
    with pytest.raises(SimulationError, match="reads 'x', which no program wrote"):
        run_host(compiled.host, load_hardware("edge"), values)
    empty = HostProgram("p", {}, (), ("y",))
    with pytest.raises(SimulationError, match="outputs never written: y"):
        run_host(empty, load_hardware("edge"), {})


@pytest.mark.parametrize("path", [EARLY_EXIT, DECODE_LOOP], ids=lambda p: p.stem)
def test_listing_parses_back_to_the_same_machine(path) -> None:
    hw = load_hardware("edge")
    compiled = compile_control(loaded(path).program, hw)
    parsed = parse_host_program(compiled.asm, "x.asm")
    assert format_host_program(parsed) == compiled.asm
    values = compiled.values(loaded(path).bindings(4))
    # The listing carries its constants and tables: the inputs and params suffice.
    inputs = {k: v for k, v in values.items() if k in loaded(path).program.bound_names()}
    want, report = run_host(compiled.host, hw, values)
    got, report2 = run_host(parsed, hw, inputs)
    assert report2.cycles == report.cycles and report2.trips == report.trips
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@pytest.mark.parametrize(
    "text, message",
    [
        (".host p\n  jump x\n  output y\n", "x.asm:2:1: error: expected run, if, loop"),
        (
            ".host p\n  if maybe(c) {\n  } else {\n  }\n  output y\n",
            "x.asm:2:1: error: expected readback",
        ),
        (".host p\n  run a (x=x) -> (y=y[2])\n  output y\n", "no '.program a' section"),
        (".host p\n  const c i8 [2] = 1, z\n  output c\n", "x.asm:2:1: error: const 'c'"),
        ("load x\n", "x.asm:1:1: error: expected '.host NAME'"),
    ],
)
def test_listing_errors_are_located(text: str, message: str) -> None:
    with pytest.raises(AsmError) as err:
        parse_host_program(text, "x.asm")
    assert message in str(err.value)
