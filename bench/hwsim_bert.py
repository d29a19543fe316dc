"""Simulator speed and cost-model error on the matmuls of one BERT-base layer (seq 128).

Run: /work/venv/bin/python bench/hwsim_bert.py [edge|datacenter]
Each matmul kernel is tiled with the cost model's chosen tile (tests/hwsim's generator),
all kernels are chained into one program, simulated, and compared per kernel.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "hwsim")]

from hwsim_programs import tiled_matmul  # noqa: E402

from hwsim import Buffer, KernelWork, Program, kernel_cycles, load_hardware, simulate  # noqa: E402
from hwsim.isa import Instr, Load, Store  # noqa: E402

SEQ, D, FF, HEADS = 128, 768, 3072, 12
LAYER = [("qkv", SEQ, 3 * D, D, 1), ("scores", SEQ, SEQ, D // HEADS, HEADS),
         ("context", SEQ, D // HEADS, SEQ, HEADS), ("out", SEQ, D, D, 1),
         ("ffn1", SEQ, FF, D, 1), ("ffn2", SEQ, D, FF, 1)]  # fmt: skip


def _rename(ins: Instr, tag: str) -> Instr:
    """Give a kernel's buffers and tokens unique names inside the combined program."""
    changes: dict = {"wait": tuple(f"{tag}.{t}" for t in ins.wait),
                     "signal": tuple(f"{tag}.{t}" for t in ins.signal)}  # fmt: skip
    if isinstance(ins, Load):
        changes["src"] = dataclasses.replace(ins.src, buffer=f"{tag}.{ins.src.buffer}")
    if isinstance(ins, Store):
        changes["dst"] = dataclasses.replace(ins.dst, buffer=f"{tag}.{ins.dst.buffer}")
    if hasattr(ins, "name"):
        changes["name"] = tag
    return dataclasses.replace(ins, **changes)


def main(hw_name: str = "edge", dtype: str = "bf16") -> None:
    hw = load_hardware(hw_name)
    rng = np.random.default_rng(0)
    buffers: list[Buffer] = []
    instrs: list[Instr] = []
    feeds: dict[str, np.ndarray] = {}
    predicted: dict[str, int] = {}
    s = {"i8": 1, "bf16": 2, "f32": 4}[dtype]
    out = 4 if dtype == "i8" else s  # i8 kernels store their i32 accumulators
    for name, m, n, k, reps in LAYER:
        work = KernelWork("matmul", dtype, macs=m * n * k, m=m, n=n, k=k,
                          bytes_in=(m * k + k * n) * s, bytes_out=m * n * max(s, out))  # fmt: skip
        cost = kernel_cycles(hw, work)
        for r in range(reps):
            tag = f"{name}{r}"
            p = tiled_matmul(m, n, k, *cost.tile, dtype)
            buffers += [dataclasses.replace(b, name=f"{tag}.{b.name}") for b in p.buffers]
            instrs += [_rename(i, tag) for i in p.instrs]
            if dtype == "i8":
                feeds[f"{tag}.x"] = rng.integers(-128, 128, (m, k)).astype(np.int8)
                feeds[f"{tag}.w"] = rng.integers(-128, 128, (k, n)).astype(np.int8)
            else:
                feeds[f"{tag}.x"] = rng.standard_normal((m, k)).astype(np.float32)
                feeds[f"{tag}.w"] = rng.standard_normal((k, n)).astype(np.float32)
            predicted[tag] = cost.cycles
    program = Program(tuple(buffers), tuple(instrs))
    for races in (True, False):
        t = time.perf_counter()
        result = simulate(program, hw, feeds, check_races=races)
        dt = time.perf_counter() - t
        print(f"{hw_name} {dtype}: {len(instrs)} instructions, races={races}: {dt:.2f} s "
              f"({dt / len(instrs) * 1e6:.1f} us/instr)")  # fmt: skip
    report = result.report
    print(report.summary())
    model = sum(predicted.values())
    print(f"model {model} vs simulator {report.cycles}: {model / report.cycles - 1:+.1%}")
    worst = max(report.kernels, key=lambda k: abs(predicted[k.name] / k.cycles - 1))
    print(f"worst kernel {worst.name}: model {predicted[worst.name]} sim {worst.cycles}")


if __name__ == "__main__":
    main(*sys.argv[1:])
