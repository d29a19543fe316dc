"""Vector-unit instructions and dtype conversions against numpy references."""

import numpy as np
import pytest

from hwsim import load_hardware, parse, simulate
from hwsim.dtypes import bf16_bits, round_bf16, to_storage

EDGE = load_hardware("edge")
RNG = np.random.default_rng(3)
A = RNG.standard_normal((8, 16)).astype(np.float32)
B = RNG.standard_normal((8, 16)).astype(np.float32) + 3.0
ROW = RNG.standard_normal((1, 16)).astype(np.float32)
COL = RNG.standard_normal((8, 1)).astype(np.float32)


def run(op_line: str, out: tuple[str, tuple[int, int]] = ("f32", (8, 16)), a=A, dt="f32"):
    """load a (8x16) to sram@0, b to @1024, row to @2048, col to @2560; run; store @4096."""
    dtype, (r, c) = out
    first, *rest = op_line.split("\n")
    body = "\n".join([f"{first}  wait=l,l,l,l", *rest])
    text = f"""
    .input a {dt} [8, 16]
    .input b f32 [8, 16]
    .input row f32 [1, 16]
    .input col f32 [8, 1]
    .output y {dtype} [{r}, {c}]
    load sram@0:8x16:{dt} <- a[0:8x16/16]  signal=l
    load sram@1024:8x16:f32 <- b[0:8x16/16]  signal=l
    load sram@2048:1x16:f32 <- row[0:1x16/16]  signal=l
    load sram@2560:8x1:f32 <- col[0:8x1/1]  signal=l
    {body}  signal=c
    store y[0:{r}x{c}/{c}] <- sram@4096:{r}x{c}:{dtype}  wait=c
    """
    feeds = {"a": a, "b": B, "row": ROW, "col": COL}
    return simulate(parse(text), EDGE, feeds).outputs["y"]


def ref_gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


UNARY = {
    "copy": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": ref_gelu,
    "exp": np.exp,
    "neg": np.negative,
    "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x)),
    "reciprocal": lambda x: 1 / x,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    a = np.abs(A) + 0.1 if op in ("sqrt", "rsqrt") else A
    y = run(f"unary.{op} sram@4096:8x16:f32 <- sram@0:8x16:f32", a=a)
    np.testing.assert_allclose(y, UNARY[op](a.astype(np.float64)), rtol=2e-6, atol=1e-6)


def test_scale_by_immediate():
    y = run("unary.scale sram@4096:8x16:f32 <- sram@0:8x16:f32, -0.125")
    assert (y == A * np.float32(-0.125)).all()


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasts(op):
    f = BINARY[op]
    full = run(f"binary.{op} sram@4096:8x16:f32 <- sram@0:8x16:f32, sram@1024:8x16:f32")
    row = run(f"binary.{op} sram@4096:8x16:f32 <- sram@0:8x16:f32, sram@2048:1x16:f32  bcast=row")
    col = run(f"binary.{op} sram@4096:8x16:f32 <- sram@0:8x16:f32, sram@2560:8x1:f32  bcast=col")
    imm = run(f"binary.{op} sram@4096:8x16:f32 <- sram@0:8x16:f32, 1.5")
    assert (full == f(A, B)).all() and (row == f(A, ROW)).all()
    assert (col == f(A, COL)).all() and (imm == f(A, np.float32(1.5))).all()


def test_reductions_and_transpose():
    s = run("reduce.sum sram@4096:8x1:f32 <- sram@0:8x16:f32", out=("f32", (8, 1)))
    np.testing.assert_allclose(s, A.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-6)
    m = run("reduce.max sram@4096:8x1:f32 <- sram@0:8x16:f32", out=("f32", (8, 1)))
    assert (m == A.max(axis=1, keepdims=True)).all()
    t = run("transpose sram@4096:16x8:f32 <- sram@0:8x16:f32", out=("f32", (16, 8)))
    assert (t == A.T).all()


def test_strided_tiles_read_columns_blocks():
    # the right half of the 8x16 tile as an 8x8 tile with row stride 16
    y = run("unary.copy sram@4096:8x8:f32 <- sram@32:8x8/16:f32", out=("f32", (8, 8)))
    assert (y == A[:, 8:]).all()


def test_move_through_accumulator_with_relu():
    y = run(
        "move acc@0:8x16:f32 <- sram@0:8x16:f32\n"
        "move sram@4096:8x16:f32 <- acc@0:8x16:f32  act=relu"
    )
    assert (y == np.maximum(A, 0)).all()


def test_casts_round_half_even_and_saturate():
    a = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 200.0, -300.0, 3.7] * 2] * 8, np.float32)
    y = run("unary.copy sram@4096:8x16:i8 <- sram@0:8x16:f32", out=("i8", (8, 16)), a=a)
    assert y[0, :8].tolist() == [0, 2, 2, 0, -2, 127, -128, 4]
    b = run("unary.copy sram@4096:8x16:bf16 <- sram@0:8x16:f32", out=("bf16", (8, 16)))
    assert (b == round_bf16(A)).all()


def test_integer_vector_ops_saturate():
    a = np.full((8, 16), 100, np.int8)
    y = run(
        "binary.add sram@4096:8x16:i8 <- sram@0:8x16:i8, 100.0", out=("i8", (8, 16)), a=a, dt="i8"
    )
    assert (y == 127).all()
    z = run("unary.copy sram@4096:8x16:f32 <- sram@0:8x16:i8", out=("f32", (8, 16)), a=-a, dt="i8")
    assert (z == -100.0).all()


def test_bf16_rounding_is_nearest_even():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-7)
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-20, -(1 + 2.0**-8)], np.float32)
    assert round_bf16(x).tolist() == [one, 1 + 2 * ulp, 1 + ulp, -one]
    assert np.isnan(round_bf16(np.array([np.nan], np.float32)))[0]
    assert np.isinf(round_bf16(np.array([np.inf], np.float32)))[0]
    assert bf16_bits(np.array([1.0], np.float32)).tolist() == [0x3F80]
    assert to_storage(np.array([1e10]), "i32").tolist() == [2**31 - 1]


def test_float_to_integer_storage_saturates_infinities():
    """+-inf (and values past int64) saturate like any large value; nan stores 0."""
    values = np.array([np.inf, -np.inf, np.nan, 1e300, -1e300, 2.5, -3.5])
    assert to_storage(values, "i8").tolist() == [127, -128, 0, 127, -128, 2, -4]
    assert to_storage(values, "i32").tolist()[:2] == [2**31 - 1, -(2**31)]
