"""Assembly: printer and parser round-trip; errors point at FILE:LINE:COL."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim import AsmError, format_program, parse
from hwsim.dtypes import DTYPES, ITEMSIZE
from hwsim.isa import (
    ACTS,
    BCASTS,
    BINARY_OPS,
    MODES,
    REDUCE_OPS,
    ROLES,
    ROUNDINGS,
    UNARY_OPS,
    Binary,
    Buffer,
    DramRef,
    Fma,
    Kernel,
    Load,
    Matmul,
    Move,
    Program,
    Reduce,
    Requantize,
    Store,
    Tile,
    Transpose,
    Unary,
)

EXAMPLE = """\
.input    x f32 [64, 64]
.output   y f32 [64, 64]

kernel      mm
load        sram@0:16x16:f32 <- x[0:16x16/64]  signal=a0
load        sram@1024:16x16/32:f32 <- x[16:16x16/64]  signal=a0
matmul      acc@0:16x16:f32 <- sram@0:16x16:f32, sram@1024:16x16/32:f32  mode=accumulate  wait=a0,a0
move        sram@2048:16x16:f32 <- acc@0:16x16:f32  act=relu
binary.mul  sram@2048:16x16:f32 <- sram@2048:16x16:f32, 0.125
binary.add  sram@2048:16x16:f32 <- sram@2048:16x16:f32, sram@4096:1x16:f32  bcast=row
unary.scale sram@2048:16x16:f32 <- sram@2048:16x16:f32, -0.0025
unary.exp   sram@2048:16x16:f32 <- sram@2048:16x16:f32
reduce.max  sram@8192:16x1:f32 <- sram@2048:16x16:f32
transpose   sram@2048:16x16:f32 <- sram@2048:16x16:f32
requantize  sram@0:16x16:i8 <- acc@0:16x16:i32  mult=1073741824  shift=30  zp=-3  round=away
store       y[0:16x16/64] <- sram@2048:16x16:f32  wait=k  signal=s
"""


def test_example_round_trips():
    p = parse(EXAMPLE, "ex.asm", verify=False)
    assert format_program(p) == EXAMPLE
    assert p.lines[0] == 4 and p.source == "ex.asm"
    assert isinstance(p.instrs[3], Matmul) and p.instrs[3].mode == "accumulate"
    assert p.instrs[3].b.stride == 32 and p.instrs[2].dst.row_stride == 32


def test_comments_and_blank_lines():
    text = "# header\n.input x f32 [4]  # four\n\nkernel k # go\n"
    p = parse(text)
    assert p.buffers == (Buffer("x", "f32", (4,), "input"),)
    assert p.instrs == (Kernel(name="k"),) and p.lines == (4,)


# ------------------------------------------------------------------ hypothesis

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
tokens = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,4}", fullmatch=True), max_size=3).map(tuple)
small = st.integers(1, 64)
imms = st.floats(allow_nan=False, width=64)


@st.composite
def tiles(draw, space=None, dtype=None):
    dtype = dtype or draw(st.sampled_from(DTYPES))
    space = space or draw(st.sampled_from(["sram", "acc"]))
    rows, cols = draw(small), draw(small)
    stride = draw(st.one_of(st.none(), st.integers(cols, cols + 40)))
    addr = draw(st.integers(0, 10_000)) * ITEMSIZE[dtype]
    return Tile(space, addr, rows, cols, dtype, stride)


drams = st.builds(DramRef, names, st.integers(0, 10**6), small, small, st.integers(0, 500))


def deps():
    return {"wait": tokens, "signal": tokens}


instrs = st.one_of(
    st.builds(Load, dst=tiles(), src=drams, **deps()),
    st.builds(Store, dst=drams, src=tiles(), **deps()),
    st.builds(Matmul, acc=tiles(), a=tiles(), b=tiles(), mode=st.sampled_from(MODES), **deps()),
    st.builds(Move, dst=tiles(), src=tiles(), act=st.sampled_from(ACTS), **deps()),
    st.builds(
        Unary,
        op=st.sampled_from(UNARY_OPS),
        dst=tiles(),
        src=tiles(),
        imm=st.one_of(st.none(), imms),
        vector_queue=st.booleans(),
        **deps(),
    ),
    st.builds(
        Binary,
        op=st.sampled_from(BINARY_OPS),
        dst=tiles(),
        a=tiles(),
        b=tiles(),
        bcast=st.sampled_from(BCASTS),
        **deps(),
    ),
    st.builds(Binary, op=st.sampled_from(BINARY_OPS), dst=tiles(), a=tiles(), imm=imms, **deps()),
    st.builds(
        Fma,
        dst=tiles(),
        a=tiles(),
        b=st.one_of(st.none(), tiles()),
        c=st.one_of(st.none(), tiles()),
        vector_queue=st.booleans(),
        **deps(),
    ).map(
        lambda i: dataclasses.replace(
            i, imm_b=1.5 if i.b is None else None, imm_c=-0.25 if i.c is None else None
        )
    ),
    st.builds(
        Reduce,
        op=st.sampled_from(REDUCE_OPS),
        dst=tiles(),
        src=tiles(),
        vector_queue=st.booleans(),
        **deps(),
    ),
    st.builds(Transpose, dst=tiles(), src=tiles(), vector_queue=st.booleans(), **deps()),
    st.builds(
        Requantize,
        dst=tiles(),
        src=tiles(),
        multiplier=st.integers(0, 2**31 - 1),
        shift=st.integers(0, 62),
        zero_point=st.integers(-128, 127),
        rounding=st.sampled_from(ROUNDINGS),
        **deps(),
    ),
    st.builds(Kernel, name=names, **deps()),
)
buffers = st.builds(
    Buffer,
    names,
    st.sampled_from(DTYPES),
    st.lists(small, min_size=1, max_size=3).map(tuple),
    st.sampled_from(ROLES),
)
programs = st.builds(
    Program,
    st.lists(buffers, max_size=4, unique_by=lambda b: b.name).map(tuple),
    st.lists(instrs, max_size=12).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(programs)
def test_print_parse_round_trip(p):
    text = format_program(p)
    q = parse(text, verify=False)
    assert q == p
    assert format_program(q) == text


# ------------------------------------------------------------------ errors

HEAD = ".input x f32 [64, 64]\n"
ERRORS = [
    ("bogus sram@0:1x1:f32 <- x[0:1x1/1]", 2, 1, "unknown instruction 'bogus'"),
    ("load sram@0:1x1:f64 <- x[0:1x1/1]", 2, 6, "unknown dtype 'f64'"),
    ("load dram@0:1x1:f32 <- x[0:1x1/1]", 2, 6, "unknown memory 'dram'"),
    ("load sram@0:1x1:f32 x[0:1x1/1]", 2, 21, "expected ',' between operands"),
    ("load sram@0:1x1:f32 <- x[0:1x1/1] colour=red", 2, 35, "takes no option 'colour'"),
    ("load sram@0:1x1:f32 <- sram@8:1x1:f32", 2, 24, "expected a DRAM reference"),
    ("unary sram@0:1x1:f32 <- sram@0:1x1:f32", 2, 1, "write 'unary.OP'"),
    ("matmul acc@0:1x1:f32 <- sram@0:1x1:f32", 2, 25, "expected 2 source operand(s)"),
    ("move sram@0:1x1:f32 <- acc@0:1x1:f32 act=relu @@", 2, 47, "unexpected '@@'"),
    ("requantize sram@0:1x1:i8 <- acc@0:1x1:i32 mult=x shift=1", 2, 48, "needs an integer"),
    ("load sram@0:1x1:f32 <- x[0:1x1/1] wait=a,,b", 2, 40, "empty token name"),
    ("kernel", 2, 7, "expected 'kernel NAME'"),
]


@pytest.mark.parametrize(("line", "lineno", "col", "msg"), ERRORS)
def test_parse_errors(line, lineno, col, msg):
    with pytest.raises(AsmError) as info:
        parse(HEAD + line + "\n", "bad.asm")
    assert str(info.value).startswith(f"bad.asm:{lineno}:{col}: error: ")
    assert msg in str(info.value)


def test_header_errors():
    with pytest.raises(AsmError, match=r"^h.asm:1:2: error: unknown role '.param'"):
        parse(".param w f32 [4]\n", "h.asm")
    with pytest.raises(AsmError, match=r"^h.asm:2:1: error: buffer 'w' declared twice"):
        parse(".input w f32 [4]\n.output w f32 [4]\n", "h.asm")
    with pytest.raises(AsmError, match=r"^h.asm:2:1: error: buffer declarations must come"):
        parse("kernel k\n.input w f32 [4]\n", "h.asm")


def test_verify_errors_point_at_the_line():
    text = HEAD + "kernel k\nmatmul acc@0:4x4:f32 <- sram@0:4x8:f32, sram@128:4x4:f32\n"
    with pytest.raises(AsmError, match=r"^v.asm:3:1: error: matmul shapes 4x8 @ 4x4"):
        parse(text, "v.asm")
    text = HEAD + "load sram@0:4x4:f32 <- y[0:4x4/4]\n"
    with pytest.raises(AsmError, match=r"^v.asm:2:1: error: unknown DRAM buffer 'y'"):
        parse(text, "v.asm")
    text = HEAD + "load sram@0:4x4:f32 <- x[4090:4x4/4]\n"
    with pytest.raises(AsmError, match=r"out-of-bounds DRAM access"):
        parse(text, "v.asm")
