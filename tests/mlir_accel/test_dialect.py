"""The accel dialect in xDSL: its enums agree with the ISA, every instruction survives
emit -> verify -> read, and malformed ops are rejected with a message naming the op."""

from __future__ import annotations

import re

import pytest

from backend.mlir_accel import emit_accel_mlir
from hwsim import isa
from hwsim.dtypes import DTYPES

from .samples import sample_program

pytest.importorskip("xdsl", reason="xdsl is not installed (the iree extra)")

from backend.mlir_accel.read import read_accel_mlir
from backend.mlir_accel.verify import AccelMlirError, accel_dialect, parse_accel_mlir


def _choices(op: str, attr: str) -> set[str]:
    """The strings an enum attribute of an accel op may take, read from the IRDL."""
    (cls,) = [o for o in accel_dialect().operations if o.name == f"accel.{op}"]
    constraint = cls.get_irdl_definition().attributes[attr].constr
    return {option.attr.data for option in constraint.options}


def _param_choices(attr: str, index: int) -> set[str]:
    (cls,) = [a for a in accel_dialect().attributes if a.name == f"accel.{attr}"]
    constraint = cls.get_irdl_definition().parameters[index][1].constr
    return {str(option.attr).strip('"') for option in constraint.options}


@pytest.mark.parametrize(
    ("op", "attr", "isa_values"),
    [
        ("unary", "op", isa.UNARY_OPS),
        ("unary_imm", "op", isa.UNARY_OPS),
        ("binary", "op", isa.BINARY_OPS),
        ("binary", "bcast", isa.BCASTS),
        ("reduce", "op", isa.REDUCE_OPS),
        ("move", "act", isa.ACTS),
        ("move", "queue", ("compute", "vector")),
        ("binary", "queue", ("compute", "vector")),
        ("matmul", "mode", isa.MODES),
        ("requantize", "rounding", isa.ROUNDINGS),
    ],
)
def test_enum_attributes_match_the_isa(op: str, attr: str, isa_values: tuple[str, ...]) -> None:
    assert _choices(op, attr) == set(isa_values)


def test_tile_memories_and_dtypes_match_the_isa() -> None:
    assert _param_choices("tile", 0) == set(isa.SPACES)
    assert _param_choices("tile", 5) == set(DTYPES)


def test_every_instruction_round_trips_through_xdsl() -> None:
    program = sample_program()
    name, back = read_accel_mlir(emit_accel_mlir(program, "sample kernel"))
    assert name == "sample kernel"
    assert back.buffers == program.buffers
    for got, want in zip(back.instrs, program.instrs, strict=True):
        assert got == want
    # -0.0 == 0.0 in Python: check the sign survived too
    (select_imm,) = [i for i in back.instrs if isinstance(i, isa.Select) and i.a is None]
    assert str(select_imm.imm_b) == "-0.0"


GOOD = emit_accel_mlir(sample_program(), "sample")
TILE_A = '#accel.tile<"sram", 0 : i64, 16 : i64, 16 : i64, 16 : i64, f32>'


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # an attribute of the wrong type: a float tile address
        (TILE_A, TILE_A.replace("0 : i64", "0.0 : f64", 1), "should be of base attribute integer"),
        # an enum value the ISA does not have
        ('op = "gelu_erf"', 'op = "gelu_tanh"', '"gelu_tanh" satisfies none of'),
        ('mode = "accumulate"', 'mode = "add"', "op 6 'accel.matmul': \"add\" satisfies none"),
        # a memory that is not on chip, a dtype the machine does not have
        (TILE_A, TILE_A.replace('"sram"', '"dram"'), '"dram" satisfies none of'),
        (TILE_A, TILE_A.replace("f32>", "f16>"), "f16 satisfies none of"),
        # a tile where a DRAM window belongs
        (
            "src = #accel.window<16 : i64",
            f"src = {TILE_A}, x = #accel.window<16 : i64",
            "should be of base attribute accel.window",
        ),
        # a required attribute left out
        ('{name = "swiglu", ', "{", "attribute 'name' expected in operation 'accel.custom'"),
        ('{name = "softmax.n3", ', "{", "attribute 'name' expected in operation 'accel.kernel'"),
        # a DMA whose buffer is not a memref
        (
            '"accel.dma_load"(%x)',
            '"accel.dma_load"(%c)',
            "'accel.dma_load': operand 'buffer' at position 0 does not verify",
        ),
        # an op the dialect does not define
        ('"accel.transpose"', '"accel.transpose_inplace"', "transpose_inplace is not registered"),
    ],
)
def test_malformed_ops_are_rejected(old: str, new: str, message: str) -> None:
    assert old in GOOD
    bad = GOOD.replace(old, new, 1)
    if "%c" in new:  # an i64 argument handed to the DMA
        bad = bad.replace("func.func @sample(", 'func.func @sample(%c: i64 {accel.name = "c"}, ')
        bad = bad.replace("(memref<64x64xf32>) -> ()", "(i64) -> ()", 1)
    with pytest.raises(AccelMlirError, match=re.escape(message)):
        parse_accel_mlir(bad)


def test_the_good_text_verifies() -> None:
    parse_accel_mlir(GOOD)


def test_a_constraint_used_twice_binds_both_places_equal(tmp_path) -> None:
    """As in MLIR's IRDL: one constraint value constraining two attributes makes them
    equal (iree-opt reports "expected '0 : i64' but got '4 : i64'" for the same)."""
    from xdsl.context import Context
    from xdsl.dialects import builtin
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    from backend.mlir_accel.xdsl_irdl import load_irdl_dialects

    irdl = tmp_path / "pair.irdl.mlir"
    irdl.write_text(
        "irdl.dialect @pair {\n  irdl.operation @same {\n    %int = irdl.base "
        '"#builtin.integer"\n    irdl.attributes {"a" = %int, "b" = %int}\n  }\n}\n'
    )
    (dialect,) = load_irdl_dialects(irdl)
    ctx = Context()
    ctx.load_dialect(builtin.Builtin)
    ctx.load_dialect(dialect)

    def verify(a: int, b: int) -> None:
        text = f'"pair.same"() {{a = {a} : i64, b = {b} : i64}} : () -> ()'
        Parser(ctx, text).parse_module().verify()

    verify(3, 3)
    with pytest.raises(VerifyException, match="expected from variable"):
        verify(3, 4)
