"""The vector unit's fused multiply-add (isa.Fma): rounded once, its operands broadcast
by shape, verified, priced one pass per element, and the GEMV step built on it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.gemm import gemv_step
from hwsim import load_hardware, parse, simulate, timing
from hwsim.asm import format_instr
from hwsim.isa import Buffer, DramRef, Fma, Load, Move, Program, Store, Tile
from hwsim.semantics import fma
from hwsim.verify import instr_problem

EDGE = load_hardware("edge")
F32 = np.float32


def _correctly_rounded(exact: Fraction, got: np.float32) -> bool:
    """got is the f32 nearest to exact (ties to an even significand)."""
    lo, hi = np.nextafter(got, F32(-np.inf)), np.nextafter(got, F32(np.inf))
    err = abs(Fraction(float(got)) - exact)
    for other in (lo, hi):
        d = abs(Fraction(float(other)) - exact)
        if d < err or (d == err and int(got.view(np.int32)) & 1):
            return False
    return True


finite = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


@settings(max_examples=200, deadline=None)
@given(a=finite, b=finite, c=finite)
def test_fma_rounds_the_exact_value_once(a, b, c):
    got = fma(np.array([F32(a)]), np.array([F32(b)]), np.array([F32(c)]))[0]
    exact = Fraction(float(F32(a))) * Fraction(float(F32(b))) + Fraction(float(F32(c)))
    assert _correctly_rounded(exact, got)


def test_fma_is_not_two_roundings():
    # a*b = 1 + 2^-24 - 2^-47 exactly; + c = 1 + 2^-24 + 2^-70: just above the midpoint
    # of 1 and 1 + 2^-23. An f64 sum rounds to the midpoint, then to 1.0 (ties to even);
    # fused rounds up. A multiply then an add (two f32 roundings) gives 1.0 too.
    a, b = F32(1 + 2**-23), F32(1 - 2**-24)
    c = F32(2**-47 + 2**-70)
    assert F32(np.float64(a) * np.float64(b) + np.float64(c)) == F32(1.0)
    assert fma(np.array([a]), np.array([b]), np.array([c]))[0] == F32(1 + 2**-23)


def _run_fma(ins: Fma, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Load each operand tile of `ins` from its own input, run it, store dst."""
    tiles = {"a": ins.a, "b": ins.b, "c": ins.c}
    buffers, instrs = [], []
    for name, t in tiles.items():
        if t is None:
            continue
        buffers.append(Buffer(name, t.dtype, (t.rows, t.cols), "input"))
        instrs.append(Load(dst=t, src=DramRef(name, 0, t.rows, t.cols, t.cols), signal=("l",)))
    d = ins.dst
    buffers.append(Buffer("y", d.dtype, (d.rows, d.cols), "output"))
    waits = ("l",) * len(instrs)
    program = Program(
        tuple(buffers),
        (
            *instrs,
            Fma(**{**ins.__dict__, "wait": waits, "signal": ("c",)}),
            Store(dst=DramRef("y", 0, d.rows, d.cols, d.cols), src=d, wait=("c",)),
        ),
    )
    assert all(instr_problem(i, program.buffer_map) is None for i in program.instrs)
    return simulate(program, EDGE, {k: v for k, v in arrays.items() if k in tiles}).outputs["y"]


SHAPES = ("full", "row", "col", "imm")


@settings(max_examples=12, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 9),
    b_shape=st.sampled_from(SHAPES),
    c_shape=st.sampled_from([*SHAPES, "dst"]),
    seed=st.integers(0, 99),
)
def test_fma_instruction_broadcasts_as_numpy(rows, cols, b_shape, c_shape, seed):
    rng = np.random.default_rng(seed)
    dst = Tile("sram", 0, rows, cols, "f32")
    a = Tile("sram", 1024, rows, cols, "f32")
    shape = {"full": (rows, cols), "row": (1, cols), "col": (rows, 1), "dst": (rows, cols)}
    b = Tile("sram", 2048, *shape[b_shape], "f32") if b_shape != "imm" else None
    c = None if c_shape == "imm" else Tile("sram", 3072, *shape[c_shape], "f32")
    imm_b = 0.375 if b is None else None
    imm_c = -1.25 if c is None else None
    ins = Fma(dst=dst, a=a, b=b, c=c, imm_b=imm_b, imm_c=imm_c)
    arrays = {"a": rng.standard_normal((rows, cols)).astype(F32)}
    if b is not None:
        arrays["b"] = rng.standard_normal(shape[b_shape]).astype(F32)
    if c is not None:
        arrays["c"] = rng.standard_normal(shape[c_shape]).astype(F32)
    if c_shape == "dst":  # c is the destination: load it there (a multiply-accumulate)
        ins = Fma(**{**ins.__dict__, "c": Tile("sram", 0, rows, cols, "f32")})
    got = _run_fma(ins, arrays)
    bv = F32(imm_b) if b is None else arrays["b"]
    cv = F32(imm_c) if c is None else arrays["c"]
    want = np.broadcast_to(fma(arrays["a"], bv, cv), (rows, cols))
    assert np.array_equal(got, want)
    exact = arrays["a"].astype(np.float64) * np.float64(bv) + cv
    np.testing.assert_allclose(got, exact, rtol=2**-23, atol=0)
    # one pass per element on the vector unit, like a binary op
    unit, cycles = timing.instruction_cost(EDGE, ins)
    assert unit == "vector"
    assert cycles == EDGE.issue_cycles + -(-rows * cols // EDGE.vector_lanes)
    assert timing.lane_work(EDGE, ins) == rows * cols


def test_fma_verifier_and_assembly():
    full, row, col = (Tile("sram", 0, 4, 8, "f32"), Tile("sram", 512, 1, 8, "f32"),
                      Tile("sram", 768, 4, 1, "bf16"))  # fmt: skip
    good = Fma(dst=full, a=full, b=col, c=row, vector_queue=True, wait=("t",))
    assert instr_problem(good, {}) is None
    line = format_instr(good)
    assert line.startswith("fma ") and "queue=vector" in line
    text = f".output y f32 [1]\n\n{line}\n"
    assert parse(text, verify=False).instrs == (good,)
    for imm in (
        Fma(dst=full, a=full, imm_b=-2.5, c=full),
        Fma(dst=full, a=row, b=col, imm_c=0.5),
        Fma(dst=full, a=full, imm_b=3.0, imm_c=-0.0),
    ):
        assert instr_problem(imm, {}) is None
        text = f".output y f32 [1]\n\n{format_instr(imm)}\n"
        assert parse(text, verify=False).instrs == (imm,)
    bad = {
        "float tiles": Fma(dst=full, a=Tile("sram", 0, 4, 8, "i32"), b=full, c=full),
        "operand 2x8": Fma(dst=full, a=full, b=full, c=Tile("sram", 0, 2, 8, "f32")),
        "operand 1x4": Fma(dst=full, a=full, b=Tile("sram", 0, 1, 4, "f32"), c=full),
        "tile or an immediate": Fma(dst=full, a=full, c=full),
        "for each of b and c": Fma(dst=full, a=full, b=full, imm_b=1.0, c=full),
    }
    for message, ins in bad.items():
        assert message in (instr_problem(ins, {}) or ""), message


@pytest.mark.parametrize(("k", "n"), [(64, 48), (200, 32), (3, 16)])
def test_gemv_step_sums_with_fma_as_priced(k, n):
    """backend/gemm.py gemv_step (x[1,k] @ B[k,n] on the vector unit): a multiply, fused
    multiply-adds, a tree of adds and a move, exactly the instructions and cycles
    timing.gemv_cycles prices; the result is x @ B to f32 rounding."""
    rng = np.random.default_rng(k)
    x = rng.standard_normal((1, k)).astype(F32)
    w = rng.standard_normal((k, n)).astype(F32)
    xt, bt = Tile("sram", 0, 1, k, "f32"), Tile("sram", 1024, k, n, "f32")
    acc = Tile("acc", 0, 1, n, "f32")
    out = Tile("sram", 2048 + k * n * 4, 1, n, "f32")
    step = gemv_step(EDGE, acc, xt, bt, "overwrite")
    h = timing.gemv_rows(EDGE, n, k)
    assert sum(isinstance(i, Fma) for i in step) == len(timing.gemv_blocks(k, h)) - 1
    cycles = [timing.instruction_cost(EDGE, i)[1] for i in step]
    assert cycles == timing.gemv_instruction_cycles(EDGE, n, k)
    assert sum(cycles) == timing.gemv_cycles(EDGE, n, k)
    first = type(step[0])(**{**step[0].__dict__, "wait": ("l", "l")})
    last = type(step[-1])(**{**step[-1].__dict__, "signal": ("c",)})
    program = Program(
        (
            Buffer("x", "f32", (1, k), "input"),
            Buffer("w", "f32", (k, n), "input"),
            Buffer("y", "f32", (1, n), "output"),
        ),
        (
            Load(dst=xt, src=DramRef("x", 0, 1, k, k), signal=("l",)),
            Load(dst=bt, src=DramRef("w", 0, k, n, n), signal=("l",)),
            *([first, *step[1:-1], last] if len(step) > 1 else [last]),
            Move(dst=out, src=acc, wait=("c",), signal=("m",)),
            Store(dst=DramRef("y", 0, 1, n, n), src=out, wait=("m",)),
        ),
    )
    got = simulate(program, EDGE, {"x": x, "w": w}).outputs["y"]
    want = x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-6 * np.abs(w).sum(axis=0).max())
