"""hwsim's side of custom instructions: declarations in a hardware file (checked and
located), the `custom.NAME` instruction in assembly, its execution and its cost."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hwsim import SimulationError, asm, simulate
from hwsim.asm_format import format_program
from hwsim.hardware import HardwareError, load_hardware
from tests.conftest import ROOT

EXAMPLE_HW = ROOT / "examples" / "hw" / "silu_mul.toml"

HEADER = 'base = "edge"\nname = "edge-test"\n\n[[instruction]]\n'


def _write(tmp_path, body: str, name: str = "hw.toml"):
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def _program(cost_rows: int = 4) -> str:
    return f""".input a f32 [{cost_rows}, 8]
.input b f32 [1, 8]
.output y f32 [{cost_rows}, 8]

kernel k
load sram@0:{cost_rows}x8:f32 <- a[0:{cost_rows}x8/8]  signal=l
load sram@1024:1x8:f32 <- b[0:1x8/8]  signal=l
custom.silu_mul sram@2048:{cost_rows}x8:f32 <- sram@0:{cost_rows}x8:f32, sram@1024:1x8:f32  wait=l,l  signal=c
store y[0:{cost_rows}x8/8] <- sram@2048:{cost_rows}x8:f32  wait=c
"""


def test_example_declares_silu_mul():
    hw = load_hardware(EXAMPLE_HW)
    (ins,) = hw.instructions
    assert ins.name == "silu_mul" and ins.operands == ("a", "b")
    assert ins.semantics_text == "mul(silu(a), b)"
    assert ins.replaces == ("mul(silu(a), b)", "mul(mul(a, sigmoid(a)), b)")
    assert hw.instruction("silu_mul") is ins and hw.instruction("nope") is None
    # the base preset's fields are inherited, and the value stays hashable
    assert hw.vector_lanes == load_hardware("edge").vector_lanes
    assert hash(hw) == hash(load_hardware(EXAMPLE_HW))
    assert load_hardware("edge").instructions == ()


def test_assembly_round_trip_and_execution():
    hw = load_hardware(EXAMPLE_HW)
    program = asm.parse(_program())
    text = format_program(program)
    assert "custom.silu_mul sram@2048:4x8:f32 <- sram@0:4x8:f32, sram@1024:1x8:f32" in text
    assert asm.parse(text).instrs == program.instrs
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal((1, 8)).astype(np.float32)
    result = simulate(program, hw, {"a": a, "b": b})
    want = a / (1 + np.exp(-a)) * b  # silu(a) * b, b broadcast along rows
    np.testing.assert_allclose(result.outputs["y"], want, rtol=1e-6, atol=1e-7)
    # the vector unit is busy exactly the declared cost: issue + ceil(n / 32)
    assert result.report.busy["vector"] == hw.issue_cycles + math.ceil(32 / 32)


@pytest.mark.parametrize("rows", [4, 64])
def test_declared_cost_is_what_the_simulator_charges(tmp_path, rows):
    body = 'name = "silu_mul"\nsemantics = "mul(silu(a), b)"\ncost = "{}"\n'
    a = np.ones((rows, 8), np.float32)
    b = np.ones((1, 8), np.float32)
    busy = {}
    for formula in ("7 + rows * b", "issue + 3 * n + a"):
        hw = load_hardware(_write(tmp_path, body.format(formula), f"{len(busy)}.toml"))
        report = simulate(asm.parse(_program(rows)), hw, {"a": a, "b": b}).report
        busy[formula] = report.busy["vector"]
    n = rows * 8
    assert busy == {"7 + rows * b": 7 + rows * 8, "issue + 3 * n + a": 4 + 3 * n + n}


def test_roofline_cost(tmp_path):
    path = _write(
        tmp_path,
        'name = "silu_mul"\nsemantics = "mul(silu(a), b)"\n'
        "cost = { ops_per_element = 6, sram_bytes_per_cycle = 8 }\n",
    )
    ins = load_hardware(path).instruction("silu_mul")
    # lanes: ceil(256 * 6 / 16) = 96; port: ceil(4 * (256 + 256 + 16) / 8) = 264
    assert ins.cycles(16, 4, 200, 16, 16, [256, 16]) == 4 + 264
    assert ins.cycles(16, 4, 200, 16, 16, [1, 1]) == 4 + 129  # ceil(4 * 258 / 8)


def test_undeclared_instruction_is_rejected():
    with pytest.raises(SimulationError, match="declares no instruction 'silu_mul'"):
        simulate(asm.parse(_program()), load_hardware("edge"), {})


# ---- one test per class of declaration error hwsim reports (located in the TOML)


def test_bad_cost_formula_is_located(tmp_path):
    path = _write(tmp_path, 'name = "x"\nsemantics = "mul(a, b)"\ncost = "issue + ceil(n / )"\n')
    with pytest.raises(HardwareError) as err:
        load_hardware(path)
    # line 7 is `cost = ...`; the column is that of `)` inside the string
    line = path.read_text().splitlines()[6]
    assert str(err.value).startswith(f"{path}:7:{line.index(')') + 1}: error: instruction 'x': ")
    assert "syntax error in cost" in str(err.value)


@pytest.mark.parametrize(
    "cost, message",
    [
        ("issue + m", "unknown name 'm' in cost formula"),
        ("__import__('os').system('true')", "unknown function"),
        ("n.bit_length()", "unknown function 'n.bit_length'"),
        ("n if n else 1", "is not allowed in a cost formula"),
        ("[n][0]", "is not allowed in a cost formula"),
    ],
)
def test_cost_formula_allows_only_arithmetic(tmp_path, cost, message):
    path = _write(tmp_path, f'name = "x"\nsemantics = "mul(a, b)"\ncost = "{cost}"\n')
    with pytest.raises(HardwareError, match=message):
        load_hardware(path)


def test_semantics_syntax_and_constants_are_located(tmp_path):
    path = _write(tmp_path, 'name = "x"\nsemantics = "mul(a, 2.0)"\ncost = "n"\n')
    with pytest.raises(HardwareError) as err:
        load_hardware(path)
    line = path.read_text().splitlines()[5]
    assert str(err.value).startswith(f"{path}:6:{line.index('2.0') + 1}: error:")
    assert "constants are not supported" in str(err.value)


def test_operand_list_must_match_semantics(tmp_path):
    path = _write(
        tmp_path, 'name = "x"\noperands = ["a", "c"]\nsemantics = "mul(a, b)"\ncost = "n"\n'
    )
    with pytest.raises(HardwareError, match=r":6:1: error: instruction 'x': operands \[a, c\]"):
        load_hardware(path)


def test_duplicate_and_unknown_keys(tmp_path):
    twice = HEADER + 'name = "x"\nsemantics = "neg(a)"\ncost = "n"\n\n[[instruction]]\n'
    twice += 'name = "x"\nsemantics = "relu(a)"\ncost = "n"\n'
    (tmp_path / "twice.toml").write_text(twice)
    with pytest.raises(
        HardwareError, match=r"twice.toml:10:1: error: instruction 'x' is declared twice"
    ):
        load_hardware(tmp_path / "twice.toml")
    path = _write(tmp_path, 'name = "x"\nsemantics = "neg(a)"\ncost = "n"\nlatency = 3\n')
    with pytest.raises(HardwareError, match=r":8:1: error: .*unknown key 'latency'"):
        load_hardware(path)
