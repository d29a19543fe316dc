"""The accel dialect covers the ISA: every hwsim instruction kind has an op in the IRDL
file and a sample that exercises every field (no MLIR library needed here)."""

from __future__ import annotations

import dataclasses
import re

from backend.mlir_accel import IRDL_PATH, OPS_OF_INSTR, emit_accel_mlir
from hwsim import isa

from .samples import SAMPLES, sample_program

IRDL_OPS = set(re.findall(r"irdl\.operation @(\w+)", IRDL_PATH.read_text()))


def test_every_isa_instruction_has_an_accel_op() -> None:
    assert set(OPS_OF_INSTR) == set(isa.INSTRS), "map the new hwsim instruction in OPS_OF_INSTR"
    spelled = {op for ops in OPS_OF_INSTR.values() for op in ops}
    assert spelled <= IRDL_OPS, f"define in accel.irdl.mlir: {sorted(spelled - IRDL_OPS)}"
    assert IRDL_OPS - spelled == {"dram_alloc"}


def test_samples_cover_every_instruction_and_field() -> None:
    """A new instruction or field fails here until it has a sample the round trip
    below exercises (a field left at its default would not show a loss)."""
    assert set(SAMPLES) == set(isa.INSTRS), "add a sample of the new instruction to samples.py"
    for cls, group in SAMPLES.items():
        for field in dataclasses.fields(cls):
            values = {repr(getattr(ins, field.name)) for ins in group}
            if field.default is not dataclasses.MISSING:
                assert values - {repr(field.default)}, f"{cls.__name__}.{field.name}"


def test_emit_is_deterministic_text_with_one_op_a_line() -> None:
    program = sample_program()
    text = emit_accel_mlir(program, "sample")
    assert text == emit_accel_mlir(program, "sample")
    ops = re.findall(r'^    (?:%\w+ = )?"accel\.(\w+)"', text, re.M)
    assert ops.count("dram_alloc") == 1
    assert len(ops) - 1 == len(program.instrs)
    assert "imm = 1.0e-05 : f64" in text and "0xFFF0000000000000 : f64" in text
