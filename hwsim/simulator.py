"""Run a program: functional execution plus the timing of four in-order queues.

Timing model (cycles; per-instruction formulas in timing.py):
- The load, compute, store and vector queues each run their instructions in program
  order. An instruction starts when its queue is free and every token it waits on has
  a signal that completed; it consumes those signals (counting semaphores).
- Compute instructions occupy their queue for their cycles and complete then; each
  also holds its unit (matrix or vector), so a vector-queue instruction and a vector
  instruction of the compute queue never overlap (a matmul and the vector queue do).
- A load/store occupies its queue for issue + transfer cycles, needs the single DRAM
  channel for the transfer (shared by loads and stores) and one of `dma_engines`
  transfer slots until it completes, `dram_latency_cycles` after the transfer.
- `kernel` is a barrier: it starts when everything before it completed, takes
  `launch_cycles`, and everything after it starts later.
Instructions are processed in order of start time, so functional execution follows a
legal schedule; happens-before (vector clocks through queue order, tokens and
barriers) is tracked to report races, whatever order the timing picked.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import timing
from .asm_format import format_instr
from .blas import single_threaded
from .costmodel import roofline_cycles
from .custom import DeclarationError, check_functions
from .dtypes import INT_RANGE, is_float
from .hardware import Hardware
from .isa import (
    QUEUES,
    Custom,
    Gather,
    Instr,
    Kernel,
    Load,
    LoadDq,
    Matmul,
    Program,
    Store,
    tile_written,
    tiles_read,
)
from .machine import Machine
from .memory import Fault
from .report import Event, KernelSpan, SimReport, SimResult, SimulationError
from .verify import program_problems

_Q = {name: i for i, name in enumerate(QUEUES)}
_INF = float("inf")


_NQ = len(QUEUES)
_ZERO_CLOCK = (0,) * _NQ


def _maxq(a: tuple, b: tuple) -> tuple:
    """Element-wise maximum of two vector clocks (one entry per queue; unrolled: it
    runs for every token consumed)."""
    return (max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


assert _NQ == 4, "_maxq is unrolled for isa.QUEUES"


class _Run:
    """One simulation: static tables, the machine, and the scheduler state."""

    def __init__(
        self, program: Program, hw: Hardware, inputs: dict, races: bool, record: bool = False
    ) -> None:
        self.p, self.hw, self.instrs = program, hw, program.instrs
        self.events: list[Event] | None = [] if record else None
        # (signalling instruction, waiting instruction) of every token consumed
        self.flows: list[tuple[int, int]] | None = [] if record else None
        self._static_checks()
        self.queue = [_Q[ins.queue] for ins in self.instrs]
        self.seq: list[int] = []
        self.by_queue: list[list[int]] = [[] for _ in range(_NQ)]
        for i, q in enumerate(self.queue):
            self.by_queue[q].append(i)
            self.seq.append(len(self.by_queue[q]))
        self.cost = [timing.instruction_cost(hw, ins) for ins in self.instrs]
        self.need = [tuple(Counter(ins.wait).items()) for ins in self.instrs]
        inputs = self._check_inputs(inputs)
        self.m = Machine(
            program, inputs, self.peak["sram"], self.peak["acc"], races, hw.instructions
        )
        self.tokens: dict[str, list] = {}
        self.tick = itertools.count()
        self.clock: list[tuple] = [_ZERO_CLOCK] * _NQ
        self.unit_free = {"matrix": 0.0, "vector": 0.0}
        self.busy = dict.fromkeys(("load", "store", "matrix", "vector", "launch"), 0)

    # ------------------------------------------------------------ errors and checks

    def error(self, i: int, msg: str) -> SimulationError:
        ins = self.instrs[i]
        line = f"{self.p.source or '<program>'}:{self.p.lines[i]}:1: " if self.p.lines else ""
        return SimulationError(
            f"{line}error: instruction #{i} ({ins.queue} queue) `{format_instr(ins)}`: {msg}"
        )

    def _static_checks(self) -> None:
        for i, problem in program_problems(self.p):
            if i < 0:
                raise SimulationError(f"error: {problem}")
            raise self.error(i, problem)
        self.peak = {"sram": 0, "acc": 0}
        cap = {"sram": self.hw.sram_bytes, "acc": self.hw.acc_bytes}
        for i, ins in enumerate(self.instrs):
            if isinstance(ins, Custom):
                decl = self.hw.instruction(ins.name)
                if decl is None:
                    raise self.error(
                        i, f"{self.hw.name} declares no instruction '{ins.name}' ([[instruction]])"
                    )
                try:
                    check_functions(decl.semantics)
                except DeclarationError as e:
                    raise self.error(i, f"{decl.location('semantics')}: {e}") from None
            out = tile_written(ins)
            for t in (*tiles_read(ins), *([out] if out else [])):
                if t.end > cap[t.space]:
                    raise self.error(
                        i,
                        f"{t.space} overflow: tile [{t.addr}, {t.end}) exceeds the "
                        f"{cap[t.space]} bytes of {self.hw.name}",
                    )
                self.peak[t.space] = max(self.peak[t.space], t.end)

    def _check_inputs(self, inputs: dict) -> dict[str, np.ndarray]:
        declared = {b.name: b for b in self.p.inputs()}
        extra = set(inputs) - set(declared)
        if extra:
            raise SimulationError(f"error: inputs {sorted(extra)} are not .input buffers")
        out = {}
        for name, b in declared.items():
            if name not in inputs:
                raise SimulationError(f"error: missing input '{name}' ({b.dtype} {b.shape})")
            arr = np.asarray(inputs[name])
            if arr.shape != b.shape:
                raise SimulationError(
                    f"error: input '{name}' has shape {arr.shape}, declared {b.shape}"
                )
            if not is_float(b.dtype):
                lo, hi = INT_RANGE[b.dtype]
                if arr.dtype.kind not in "iub" or (arr.size and (arr.min() < lo or arr.max() > hi)):
                    raise SimulationError(
                        f"error: input '{name}' must hold integers in [{lo}, {hi}] for {b.dtype}"
                    )
            out[name] = arr
        return out

    # ------------------------------------------------------------ scheduling

    def _ready(self, i: int, t: float) -> float | None:
        """Earliest start >= t given the tokens of instruction i (None: not signalled)."""
        for tok, n in self.need[i]:
            heap = self.tokens.get(tok)
            if heap is None or len(heap) < n:
                return None
            t = max(t, heap[0][0] if n == 1 else heapq.nsmallest(n, heap)[-1][0])
        return t

    def _dma_start(self, t: float) -> float:
        """Delay a DMA for the shared DRAM channel and a free transfer slot."""
        t = max(t, self.channel - self.hw.issue_cycles)
        busy = sorted(d for d in self.inflight if d > t)
        if len(busy) >= self.hw.dma_engines:
            t = busy[len(busy) - self.hw.dma_engines]
        return t

    def _candidate(self, q: int, lists: list[list[int]], heads: list[int]) -> float | None:
        i = lists[q][heads[q]]
        t = self._ready(i, self.qfree[q])
        if t is None:
            return t
        unit = self.cost[i][0]
        if unit in ("matrix", "vector"):
            return max(t, self.unit_free[unit])
        if unit not in ("load", "store"):
            return t
        return self._dma_start(t)

    def _consume(self, i: int, q: int) -> tuple:
        clock = self.clock[q]
        for tok, n in self.need[i]:
            for _ in range(n):
                _, _, signalled, source = heapq.heappop(self.tokens[tok])
                clock = _maxq(clock, signalled)
                if self.flows is not None:
                    self.flows.append((source, i))
        clock = (*clock[:q], self.seq[i], *clock[q + 1 :])
        self.clock[q] = clock
        return clock

    def _signal(self, i: int, done: float, clock: tuple) -> None:
        for tok in self.instrs[i].signal:
            entry = (done, next(self.tick), clock, i)
            heapq.heappush(self.tokens.setdefault(tok, []), entry)

    def _execute(self, i: int, q: int, clock: tuple) -> None:
        try:
            self.m.run(self.instrs[i], q, self.seq[i], clock)
        except Fault as f:
            msg = str(f)
            if f.other is not None:
                j = self.by_queue[f.other[0]][f.other[1] - 1]
                msg += (
                    f": instruction #{j} ({QUEUES[f.other[0]]} queue) "
                    f"`{format_instr(self.instrs[j])}`; order them with a wait/signal token"
                )
            raise self.error(i, msg) from None

    def _segment(self, indices: list[int], start: float) -> float:
        """Schedule instructions between two kernel barriers; returns the end time."""
        lists: list[list[int]] = [[] for _ in range(_NQ)]
        for i in indices:
            lists[self.queue[i]].append(i)
        heads = [0] * _NQ
        self.qfree = [start] * _NQ
        self.unit_free = {"matrix": start, "vector": start}
        self.channel, self.inflight, end = start, [], start
        while True:
            best, best_t = -1, _INF
            for q in range(_NQ):
                if heads[q] < len(lists[q]):
                    t = self._candidate(q, lists, heads)
                    if t is not None and t < best_t:
                        best, best_t = q, t
            if best < 0:
                break
            i = lists[best][heads[best]]
            heads[best] += 1
            unit, cycles = self.cost[i]
            clock = self._consume(i, best)
            self._execute(i, best, clock)
            done = best_t + cycles
            self.qfree[best] = done
            if unit in self.unit_free:
                self.unit_free[unit] = done
            self.busy[unit] += cycles
            if self.events is not None:
                self.events.append(Event(i, unit, best_t, done))
            if unit in ("load", "store"):
                self.channel = done
                done += self.hw.dram_latency_cycles
                self.inflight = [d for d in self.inflight if d > best_t] + [done]
            self._signal(i, done, clock)
            end = max(end, done)
        for q in range(_NQ):
            if heads[q] < len(lists[q]):
                i = lists[q][heads[q]]
                missing = [t for t, n in self.need[i] if len(self.tokens.get(t, ())) < n]
                raise self.error(
                    i, f"deadlock: waits on token(s) {missing} that are never signalled"
                )
        return end

    def _barrier(self, i: int, t: float) -> float:
        """A kernel marker: all queues meet, pay the launch, continue in order."""
        if self._ready(i, t) is None:
            raise self.error(i, "deadlock: a kernel barrier waits on a token never signalled")
        merged = _ZERO_CLOCK
        for c in self.clock:
            merged = _maxq(merged, c)
        self.clock = [merged] * _NQ
        clock = self._consume(i, _Q["compute"])
        self.clock = [clock] * _NQ
        done = t + self.hw.launch_cycles
        self.busy["launch"] += self.hw.launch_cycles
        if self.events is not None:
            self.events.append(Event(i, "launch", t, done))
        self._signal(i, done, clock)
        return done

    def run(self) -> tuple[float, list[KernelSpan]]:
        spans: list[KernelSpan] = []
        t, pending, name, kstart = 0, [], None, 0
        for i, ins in enumerate([*self.instrs, None]):
            if ins is not None and not isinstance(ins, Kernel):
                pending.append(i)
                continue
            t = self._segment(pending, t)
            if name is not None:
                spans.append(KernelSpan(name, int(kstart), int(t)))
            if ins is None:
                break
            pending, name, kstart = [], ins.name, t
            t = self._barrier(i, t)
        return t, spans


@dataclass(frozen=True)
class Work:
    """What a run of instructions did: counts by kind, MACs by input dtype, vector lane
    operations and DRAM bytes read and written."""

    counts: dict[str, int]
    macs: dict[str, int]
    vector_ops: int
    read: int
    written: int


def dram_traffic(ins: Instr) -> tuple[int, int]:
    """(bytes read, bytes written) of DRAM by one instruction (a gather moves only the
    rows it selects)."""
    if isinstance(ins, Gather):
        return ins.index.rows * ins.src.cols * ins.dst.itemsize, 0
    if isinstance(ins, Load):
        return ins.src.rows * ins.src.cols * ins.dst.itemsize, 0
    if isinstance(ins, LoadDq):  # packed i8 bytes
        return ins.src.rows * ins.src.cols, 0
    if isinstance(ins, Store):
        return 0, ins.dst.rows * ins.dst.cols * ins.src.itemsize
    return 0, 0


def instruction_work(
    hw: Hardware, instrs: Sequence[Instr], units: Sequence[str] | None = None
) -> Work:
    """The work of `instrs` (a program, or one kernel's share of it). `units`: each
    instruction's unit where the caller has it (the run's costs), else computed."""
    if units is None:
        units = [timing.instruction_cost(hw, ins)[0] for ins in instrs]
    counts: Counter[str] = Counter()
    macs: Counter[str] = Counter()
    vector_ops = read = written = 0
    for ins, unit in zip(instrs, units, strict=True):
        counts[type(ins).__name__.lower()] += 1
        if isinstance(ins, Matmul):
            macs[ins.a.dtype] += ins.a.rows * ins.a.cols * ins.b.cols
        elif unit == "vector":
            vector_ops += timing.lane_work(hw, ins)
        else:
            r, wr = dram_traffic(ins)
            read += r
            written += wr
    return Work(dict(counts), dict(macs), vector_ops, read, written)


def simulate(
    program: Program,
    hw: Hardware,
    inputs: dict[str, np.ndarray],
    *,
    check_races: bool = True,
    check_outputs: bool = True,
    record: bool = False,
) -> SimResult:
    """Execute `program` on `hw` with the given input buffers; time it; return outputs.

    Raises SimulationError for a program the machine rejects (see memory.py for the
    dynamic checks). `check_races=False` skips race tracking (faster, less memory) but
    still catches reads of unwritten memory; `check_outputs=False` allows outputs that
    were not completely stored. `record=True` keeps every instruction's start and end
    (`report.events`: what profilers and traces read).
    """
    run = _Run(program, hw, inputs, check_races, record)
    with single_threaded():
        end, spans = run.run()
    for b in program.outputs() if check_outputs else ():
        missing = int((~run.m.dram[b.name].written).sum())
        if missing:
            raise SimulationError(f"error: output '{b.name}': {missing} elements never stored")
    work = instruction_work(hw, program.instrs, [unit for unit, _ in run.cost])
    counts, macs, vector_ops = work.counts, work.macs, work.vector_ops
    read, written = work.read, work.written
    cycles = int(np.ceil(end))
    peak_macs = sum(m / hw.macs_per_cycle[d] for d, m in macs.items())
    report = SimReport(
        cycles=cycles,
        busy=dict(run.busy),
        dram_bytes_read=read,
        dram_bytes_written=written,
        peak_sram_bytes=run.peak["sram"],
        peak_acc_bytes=run.peak["acc"],
        instr_counts=counts,
        macs=macs,
        vector_ops=vector_ops,
        roofline_cycles=roofline_cycles(hw, macs, vector_ops, read + written),
        kernels=tuple(spans),
        mac_utilization=peak_macs / cycles if cycles else 0.0,
        events=tuple(run.events or ()),
        flows=tuple(run.flows or ()),
    )
    return SimResult(run.m.outputs(program), report)
