"""One instruction of every ISA kind, each field away from its default, in a program
whose DMA ops address declared buffers: what the dialect must carry without loss."""

from __future__ import annotations

from hwsim.isa import (
    Binary,
    Buffer,
    Custom,
    DramRef,
    Fma,
    Gather,
    Instr,
    Kernel,
    Load,
    LoadDq,
    Matmul,
    Move,
    Program,
    Reduce,
    Requantize,
    Select,
    Store,
    Tile,
    Transpose,
    Unary,
)

A = Tile("sram", 0, 16, 16, "f32")
B = Tile("sram", 1024, 16, 16, "bf16", stride=32)
ACC = Tile("acc", 64, 16, 16, "i32")
Q = Tile("sram", 4096, 16, 16, "i8")
COL = Tile("sram", 8192, 16, 1, "i32")
ROW = Tile("sram", 8256, 1, 16, "f32")
FCOL = Tile("sram", 8320, 16, 1, "bf16")
DEPS = {"wait": ("k0.l0", 'odd "name"\\'), "signal": ("s0", "s1")}

SAMPLES: dict[type[Instr], tuple[Instr, ...]] = {
    Kernel: (Kernel(name="softmax.n3", **DEPS),),
    Load: (Load(dst=A, src=DramRef("x", 16, 16, 16, 64), **DEPS),),
    Gather: (Gather(dst=A, src=DramRef("table", 0, 100, 16, 16), index=COL, **DEPS),),
    Store: (Store(dst=DramRef("y.out", 3, 16, 16, 20), src=A, **DEPS),),
    Matmul: (Matmul(acc=ACC, a=Q, b=Q, mode="accumulate", **DEPS),),
    Move: (Move(dst=A, src=ACC, act="relu", vector_queue=True, **DEPS),),
    Unary: (
        Unary(op="gelu_erf", dst=A, src=B, **DEPS),
        Unary(op="scale", dst=A, src=A, imm=1e-05, **DEPS),
        Unary(op="exp", dst=A, src=A, vector_queue=True, **DEPS),
    ),
    Binary: (
        Binary(op="xor", dst=A, a=ROW, b=A, bcast="row", **DEPS),
        Binary(op="max", dst=A, a=A, imm=float("-inf"), vector_queue=True, **DEPS),
    ),
    Select: (
        Select(dst=A, cond=Q, a=A, b=B, **DEPS),
        Select(dst=A, cond=Q, imm_a=float("inf"), imm_b=-0.0, **DEPS),
    ),
    Fma: (
        Fma(dst=A, a=A, b=ROW, c=A, **DEPS),
        Fma(dst=A, a=A, imm_b=0.25, imm_c=-3.5, **DEPS),
        Fma(dst=A, a=A, b=FCOL, c=ROW, vector_queue=True, **DEPS),
        Fma(dst=A, a=B, imm_b=-0.5, c=A, **DEPS),
    ),
    Reduce: (
        Reduce(op="max", dst=COL, src=A, **DEPS),
        Reduce(op="sum", dst=COL, src=A, vector_queue=True, **DEPS),
    ),
    Transpose: (
        Transpose(dst=B, src=B, **DEPS),
        Transpose(dst=B, src=A, vector_queue=True, **DEPS),
    ),
    Requantize: (
        Requantize(
            dst=Q, src=ACC, multiplier=1 << 30, shift=37, zero_point=-3, rounding="away", **DEPS
        ),
    ),
    Custom: (Custom(name="swiglu", dst=A, srcs=(A, ROW, COL), **DEPS),),
    LoadDq: (
        LoadDq(
            dst=A,
            src=DramRef("wq", 8, 16, 16, 32),
            scales=ROW,
            bits=8,
            group=64,
            phase=3,
            fmt="e4m3",
            **DEPS,
        ),
    ),
}

BUFFERS = (
    Buffer("x", "f32", (64, 64), "input"),
    Buffer("table", "f32", (100, 16), "input"),
    Buffer("wq", "i8", (32, 32), "input"),
    Buffer("y.out", "bf16", (20, 20), "output"),
    Buffer("scratch.i8", "i8", (4096,), "scratch"),
)


def sample_program() -> Program:
    return Program(BUFFERS, tuple(ins for group in SAMPLES.values() for ins in group))
