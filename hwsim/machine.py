"""Functional state of the accelerator and the effect of each instruction on it.

The scheduler (simulator.py) decides when an instruction runs; `Machine.run` does what
it means: whole tiles through numpy, with every access checked by memory.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from . import semantics
from .custom import Instruction
from .dtypes import INT_RANGE, is_float, to_value
from .isa import (
    Binary,
    Custom,
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
from .memory import DramBuffer, Fault, OnChip

Clock = tuple[int, ...]  # one entry per queue (isa.QUEUES)


class Machine:
    """SRAM, accumulator and DRAM buffers of one simulation."""

    def __init__(
        self,
        program: Program,
        inputs: dict[str, np.ndarray],
        sram_size: int,
        acc_size: int,
        races: bool,
        instructions: Sequence[Instruction] = (),
    ) -> None:
        self.instructions = {i.name: i for i in instructions}
        self.sram = OnChip("sram", sram_size, races)
        self.acc = OnChip("acc", acc_size, races)
        self.dram: dict[str, DramBuffer] = {}
        for b in program.buffers:
            ro = b.role == "input"
            values = (
                to_value(inputs[b.name], b.dtype) if ro else to_value(np.zeros(b.size), b.dtype)
            )
            self.dram[b.name] = DramBuffer(b.name, b.dtype, values.copy(), ro, races)
        self._run: dict[type, Callable] = {
            Load: self._load,
            Store: self._store,
            Matmul: self._matmul,
            Move: self._move,
            Unary: self._unary,
            Binary: self._binary,
            Fma: self._fma,
            Select: self._select,
            Reduce: self._reduce,
            Transpose: self._transpose,
            Requantize: self._requantize,
            Kernel: lambda *_: None,
            Gather: self._gather,
            LoadDq: self._load_dq,
            Custom: self._custom,
        }

    def run(self, ins: Instr, q: int, seq: int, clock: Clock) -> None:
        """Execute one instruction (raises memory.Fault on a bad access)."""
        self._run[type(ins)](ins, q, seq, clock)

    def _mem(self, t: Tile) -> OnChip:
        return self.sram if t.space == "sram" else self.acc

    def _get(self, t: Tile, q: int, seq: int, clock: Clock) -> np.ndarray:
        return self._mem(t).read(t, q, seq, clock)

    def _put(self, t: Tile, v: np.ndarray, q: int, seq: int, clock: Clock) -> None:
        self._mem(t).write(t, v, q, seq, clock)

    def _load(self, ins: Load, q: int, seq: int, clock: Clock) -> None:
        src, dst = ins.src, ins.dst
        values = self.dram[src.buffer].read(src, q, seq, clock)
        if (src.rows, src.cols) != (dst.rows, dst.cols):  # zero padding
            full = np.zeros((dst.rows, dst.cols), dtype=values.dtype)
            full[: src.rows, : src.cols] = values
            values = full
        self._put(dst, values, q, seq, clock)

    def _gather(self, ins: Gather, q: int, seq: int, clock: Clock) -> None:
        rows = self._get(ins.index, q, seq, clock)[:, 0]
        bad = (rows < 0) | (rows >= ins.src.rows)
        if bad.any():
            raise Fault(
                f"gather index {int(rows[bad][0])} is outside the {ins.src.rows} rows of "
                f"{ins.src.buffer}"
            )
        values = self.dram[ins.src.buffer].gather(ins.src, rows, q, seq, clock)
        self._put(ins.dst, values, q, seq, clock)

    def _load_dq(self, ins: LoadDq, q: int, seq: int, clock: Clock) -> None:
        """Packed weights through the load-path dequantizer (hwsim/wq.py)."""
        from .wq import dequantize

        stored = self.dram[ins.src.buffer].read(ins.src, q, seq, clock)
        scales = self._get(ins.scales, q, seq, clock)
        values = dequantize(stored, scales, ins.bits, ins.group, ins.phase, ins.fmt)
        self._put(ins.dst, values, q, seq, clock)

    def _store(self, ins: Store, q: int, seq: int, clock: Clock) -> None:
        values = self._get(ins.src, q, seq, clock)[: ins.dst.rows, : ins.dst.cols]
        self.dram[ins.dst.buffer].write(ins.dst, values, q, seq, clock)

    def _matmul(self, ins: Matmul, q: int, seq: int, clock: Clock) -> None:
        a = self._get(ins.a, q, seq, clock)
        b = self._get(ins.b, q, seq, clock)
        old = self._get(ins.acc, q, seq, clock) if ins.mode == "accumulate" else None
        out = semantics.matmul(a, b, old, ins.a.dtype == "i8")
        self._put(ins.acc, out, q, seq, clock)

    def _move(self, ins: Move, q: int, seq: int, clock: Clock) -> None:
        x = self._get(ins.src, q, seq, clock)
        self._put(ins.dst, semantics.unary(ins.act, x) if ins.act == "relu" else x, q, seq, clock)

    def _unary(self, ins: Unary, q: int, seq: int, clock: Clock) -> None:
        x = self._get(ins.src, q, seq, clock)
        self._put(ins.dst, semantics.unary(ins.op, x, ins.imm), q, seq, clock)

    def _binary(self, ins: Binary, q: int, seq: int, clock: Clock) -> None:
        a = self._get(ins.a, q, seq, clock)
        b = ins.imm if ins.b is None else self._get(ins.b, q, seq, clock)
        self._put(ins.dst, semantics.binary(ins.op, a, b), q, seq, clock)  # type: ignore[arg-type]

    def _custom(self, ins: Custom, q: int, seq: int, clock: Clock) -> None:
        """A declared instruction: its semantics on the source tiles (f32 values)."""
        decl = self.instructions.get(ins.name)
        if decl is None:
            raise Fault(f"custom instruction '{ins.name}' is not declared by this hardware")
        args = [self._get(t, q, seq, clock) for t in ins.srcs]
        if len(args) != len(decl.operands):
            raise Fault(f"custom.{ins.name} takes {len(decl.operands)} operand(s), got {len(args)}")
        out = np.broadcast_to(decl.run(args), (ins.dst.rows, ins.dst.cols))
        self._put(ins.dst, np.ascontiguousarray(out), q, seq, clock)

    def _select(self, ins: Select, q: int, seq: int, clock: Clock) -> None:
        cond = self._get(ins.cond, q, seq, clock)
        a = ins.imm_a if ins.a is None else self._get(ins.a, q, seq, clock)
        b = ins.imm_b if ins.b is None else self._get(ins.b, q, seq, clock)
        kind = next((t.dtype for t in (ins.a, ins.b) if t is not None), ins.dst.dtype)
        shape = (ins.dst.rows, ins.dst.cols)
        out = semantics.select(cond, a, b, not is_float(kind), shape)  # type: ignore[arg-type]
        self._put(ins.dst, out, q, seq, clock)

    def _fma(self, ins: Fma, q: int, seq: int, clock: Clock) -> None:
        a = self._get(ins.a, q, seq, clock)
        b = ins.imm_b if ins.b is None else self._get(ins.b, q, seq, clock)
        c = ins.imm_c if ins.c is None else self._get(ins.c, q, seq, clock)
        out = np.broadcast_to(semantics.fma(a, b, c), (ins.dst.rows, ins.dst.cols))
        self._put(ins.dst, np.ascontiguousarray(out), q, seq, clock)

    def _reduce(self, ins: Reduce, q: int, seq: int, clock: Clock) -> None:
        x = self._get(ins.src, q, seq, clock)
        self._put(ins.dst, semantics.reduce_rows(ins.op, x), q, seq, clock)

    def _transpose(self, ins: Transpose, q: int, seq: int, clock: Clock) -> None:
        self._put(ins.dst, self._get(ins.src, q, seq, clock).T, q, seq, clock)

    def _requantize(self, ins: Requantize, q: int, seq: int, clock: Clock) -> None:
        x = self._get(ins.src, q, seq, clock)
        lo, hi = INT_RANGE[ins.dst.dtype]
        y = semantics.requantize(x, ins.multiplier, ins.shift, ins.zero_point, ins.rounding, lo, hi)
        self._put(ins.dst, y, q, seq, clock)

    def outputs(self, program: Program) -> dict[str, np.ndarray]:
        """Copies of the output buffers, shaped as declared."""
        return {b.name: self.dram[b.name].values.reshape(b.shape).copy() for b in program.outputs()}
