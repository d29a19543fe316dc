"""The vector unit's math, comparison, logic and select instructions: semantics on
whole tiles, static checks, assembly round trip and cycle counts."""

import numpy as np
import pytest
import scipy.special
from hwsim_tiny import TINY
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim import format_program, load_hardware, parse, simulate, timing
from hwsim.isa import BINARY_OPS, UNARY_OPS, Binary, Buffer, Program, Select, Tile, Unary
from hwsim.semantics import binary, select, unary
from hwsim.verify import instr_problem

EDGE = load_hardware("edge")
NAN, INF = float("nan"), float("inf")


def t(rows=2, cols=4, dtype="f32", addr=0) -> Tile:
    return Tile("sram", addr, rows, cols, dtype)


# ------------------------------------------------------------------ semantics


def test_integer_division_truncates_toward_zero_and_by_zero_is_zero():
    a = np.array([[7, -7, 7, -7, 9, -2147483648]], np.int64)
    b = np.array([[2, 2, -2, -2, 0, 3]], np.int64)
    assert binary("div", a, b).tolist() == [[3, -3, -3, 3, 0, -715827882]]
    assert binary("div", a, 0.0).tolist() == [[0] * 6]  # immediate divisor
    f = binary("div", np.array([[1.0, -1.0]], np.float32), np.float32(0.0))
    assert f.tolist() == [[INF, -INF]]


def test_integer_power_is_exact_saturates_and_truncates_negative_exponents():
    a = np.array([[2, -3, 10, -10, 1, -1, -1, 5, 0, 0]], np.int64)
    b = np.array([[10, 3, 30, 31, -7, -3, -4, -1, 0, -1]], np.int64)
    got = binary("pow", a, b)
    assert got.tolist() == [[1024, -27, 2**62, -(2**62), 1, -1, 1, 0, 1, 0]]
    x = np.array([[4.0, 9.0]], np.float32)
    assert binary("pow", x, np.float32(0.5)).tolist() == [[2.0, 3.0]]


def test_comparisons_give_one_zero_in_the_first_operands_kind():
    a = np.array([[1.0, NAN, 3.0, -INF]], np.float32)
    b = np.array([[1.0, NAN, 2.0, INF]], np.float32)
    assert binary("eq", a, b).tolist() == [[1, 0, 0, 0]]
    assert binary("lt", a, b).tolist() == [[0, 0, 0, 1]]
    assert binary("ge", a, b).tolist() == [[1, 0, 1, 0]]
    assert binary("le", a, b).dtype == np.float32
    i = np.array([[-5, 0, 5]], np.int64)
    assert binary("gt", i, 0.0).tolist() == [[0, 0, 1]] and binary("gt", i, 0.0).dtype == np.int64


def test_logic_counts_nonzero_and_nan_as_true():
    a = np.array([[0.0, 0.0, 2.0, NAN]], np.float32)
    b = np.array([[0.0, -1.0, 0.0, 1.0]], np.float32)
    assert binary("and", a, b).tolist() == [[0, 0, 0, 1]]
    assert binary("or", a, b).tolist() == [[0, 1, 1, 1]]
    assert binary("xor", a, b).tolist() == [[0, 1, 1, 0]]
    assert unary("not", np.array([[0, 3, -1]], np.int64)).tolist() == [[1, 0, 0]]
    assert unary("isnan", a).tolist() == [[0, 0, 0, 1]]


def test_unary_math_against_f64():
    x = np.linspace(-5, 5, 41, dtype=np.float32).reshape(1, -1)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(unary("erf", x), scipy.special.erf(x64), rtol=1e-6, atol=1e-7)
    exact = 0.5 * x64 * (1 + scipy.special.erf(x64 / np.sqrt(2)))
    np.testing.assert_allclose(unary("gelu_erf", x), exact, rtol=1e-6, atol=1e-6)
    for op, fn in [("sin", np.sin), ("cos", np.cos), ("abs", np.abs), ("floor", np.floor)]:
        np.testing.assert_allclose(unary(op, x), fn(x64), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(unary("log", np.abs(x) + 1), np.log(np.abs(x64) + 1), rtol=1e-6)
    y = np.array([[-2.5, -0.5, 0.5, 2.5]], np.float32)
    assert unary("trunc", y).tolist() == [[-2, 0, 0, 2]]
    assert unary("ceil", y).tolist() == [[-2, 0, 1, 3]]


def test_select_picks_exactly_and_broadcasts_rows_and_columns():
    cond = np.array([[1, 0, 5, 0]], np.int64)  # a row
    a = np.array([[-INF, NAN, -0.0, 1.0], [2.0, 3.0, 4.0, 5.0]], np.float32)
    got = select(cond, a, -3.4e38, False, (2, 4))
    assert got[0, 0] == -INF and got[0, 1] == np.float32(-3.4e38) and np.signbit(got[0, 2])
    assert got[1].tolist() == [2.0, np.float32(-3.4e38), 4.0, np.float32(-3.4e38)]
    col = np.array([[0], [1]], np.int64)
    assert select(col, 7.0, -7.0, True, (2, 3)).tolist() == [[-7] * 3, [7] * 3]


# ------------------------------------------------------------- static checks


@pytest.mark.parametrize(
    ("ins", "problem"),
    [
        (Select(dst=t(), cond=t(dtype="i8"), a=t(), imm_b=1.0), None),
        (Select(dst=t(), cond=t(1, 4, "i8"), a=t(2, 1), b=t(2, 4)), None),
        (
            Select(dst=t(), cond=t(dtype="i8"), a=t(), b=t(dtype="i32")),
            "both be float or both integer",
        ),
        (Select(dst=t(dtype="i32"), cond=t(), imm_a=1.5, imm_b=0.0), "integral immediates"),
        (Select(dst=t(), cond=t(3, 4), a=t(), imm_b=0.0), "neither 2x4, a row nor a column"),
        (Select(dst=t(), cond=t(), a=t(), imm_a=1.0, imm_b=0.0), "a tile or an immediate"),
        (Select(dst=t(), cond=t(), a=t()), "a tile or an immediate"),
        (Unary(op="erf", dst=t(), src=t(dtype="i32")), "needs a float source"),
        (Unary(op="not", dst=t(dtype="i8"), src=t(dtype="i8")), None),
        (Binary(op="pow", dst=t(dtype="i32"), a=t(dtype="i32"), imm=3.0), None),
        (Binary(op="div", dst=t(dtype="i32"), a=t(dtype="i32"), b=t(dtype="i32")), None),
        (Binary(op="lt", dst=t(dtype="i8"), a=t(), b=t()), None),
        (
            Binary(op="lt", dst=t(dtype="i8"), a=t(), b=t(dtype="i8")),
            "both be float or both integer",
        ),
    ],
)
def test_static_checks(ins, problem):
    got = instr_problem(ins, {})
    assert (got is None) if problem is None else (problem in got), got


# --------------------------------------------------------- assembly and timing

tiles = st.builds(
    Tile,
    st.just("sram"),
    st.integers(0, 100).map(lambda a: 4 * a),
    st.integers(1, 8),
    st.integers(1, 8),
    st.sampled_from(["f32", "i32"]),
)
operands = st.one_of(
    tiles.map(lambda x: (x, None)),
    st.floats(allow_nan=False, width=64).map(lambda v: (None, v)),
)


@st.composite
def selects(draw) -> Select:
    (a, ia), (b, ib) = draw(operands), draw(operands)
    return Select(dst=draw(tiles), cond=draw(tiles), a=a, b=b, imm_a=ia, imm_b=ib)


new_instrs = st.one_of(
    selects(),
    st.builds(Unary, op=st.sampled_from(UNARY_OPS[-11:]), dst=tiles, src=tiles),
    st.builds(Binary, op=st.sampled_from(BINARY_OPS[6:]), dst=tiles, a=tiles, b=tiles),
    st.builds(
        Binary,
        op=st.sampled_from(BINARY_OPS[6:]),
        dst=tiles,
        a=tiles,
        imm=st.floats(allow_nan=False, width=64),
    ),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(new_instrs, max_size=8))
def test_new_instructions_round_trip_through_assembly(instrs):
    p = Program((Buffer("x", "f32", (4,), "input"),), tuple(instrs))
    text = format_program(p)
    assert parse(text, verify=False) == p


def test_select_and_new_ops_in_a_program():
    text = """
    .input c i8 [2, 4]
    .input x f32 [2, 4]
    .output y f32 [2, 4]
    .output m i8 [2, 4]
    load sram@0:2x4:i8 <- c[0:2x4/4]  signal=l
    load sram@64:2x4:f32 <- x[0:2x4/4]  signal=l
    select sram@128:2x4:f32 <- sram@0:2x4:i8, sram@64:2x4:f32, -inf  wait=l,l
    binary.ge sram@160:2x4:i8 <- sram@128:2x4:f32, 1.0  signal=c
    store y[0:2x4/4] <- sram@128:2x4:f32  wait=c  signal=d
    store m[0:2x4/4] <- sram@160:2x4:i8  wait=d
    """
    c = np.array([[1, 0, 2, 0], [0, 0, 1, 1]], np.int8)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = simulate(parse(text), EDGE, {"c": c, "x": x}).outputs
    assert out["y"].tolist() == [[0, -INF, 2, -INF], [-INF, -INF, 6, 7]]
    assert out["m"].tolist() == [[0, 0, 1, 0], [0, 0, 1, 1]]


def test_cycles_of_the_new_instructions():
    x = Tile("sram", 0, 4, 4, "f32")
    assert timing.instruction_cost(TINY, Select(dst=x, cond=x, a=x, imm_b=0.0)) == ("vector", 5)
    assert timing.instruction_cost(TINY, Binary(op="lt", dst=x, a=x, b=x)) == ("vector", 5)
    assert timing.instruction_cost(TINY, Unary(op="erf", dst=x, src=x)) == ("vector", 1 + 16)
    assert timing.instruction_cost(TINY, Unary(op="gelu_erf", dst=x, src=x)) == ("vector", 25)
    assert timing.instruction_cost(TINY, Binary(op="pow", dst=x, a=x, b=x)) == ("vector", 37)
    for op in (*UNARY_OPS, *BINARY_OPS, "select"):
        assert op in timing.OP_PASSES
