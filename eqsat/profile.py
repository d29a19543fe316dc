"""Per-kernel figures of one simulated run, from the simulator's own event record.

Each kernel is the span between two `kernel` markers of the program (named
`op.statement` by the backend, so a row reads as the extracted graph's node and the
model's statement). Its work (MACs, vector lane operations, DRAM bytes) is counted
from the instructions it ran, with the simulator's formulas (hwsim.simulator
`instruction_work`); its time and the busy time of each unit come from the events
the run recorded; nothing is re-estimated by the cost model.

The bound of a kernel is the unit its own roofline says limits it (matrix or vector
compute, or DRAM); a kernel that reaches less than half of that roofline and keeps no
unit busy for most of its span is bound by overhead and latency (launch, DRAM
latency, dependences). Hints name what would move a kernel towards its bound.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hwsim import Hardware, Program, SimReport
from hwsim.costmodel import roofline_cycles, roofline_terms
from hwsim.isa import Kernel, Load, Store
from hwsim.simulator import instruction_work

UNITS = ("load", "store", "matrix", "vector", "launch")


@dataclass
class KernelProfile:
    name: str
    start: int
    end: int
    macs: dict[str, int] = field(default_factory=dict)
    vector_ops: int = 0
    dram_read: int = 0
    dram_written: int = 0
    scratch_written: int = 0  # bytes stored to scratch buffers (intermediates)
    busy: dict[str, float] = field(default_factory=dict)
    instructions: int = 0
    dtypes: set[str] = field(default_factory=set)
    roofline: int = 0
    bound: str = ""
    hints: list[str] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        return self.end - self.start

    @property
    def flops(self) -> int:
        return 2 * sum(self.macs.values()) + self.vector_ops

    @property
    def dram_bytes(self) -> int:
        return self.dram_read + self.dram_written

    @property
    def intensity(self) -> float:
        """FLOPs per DRAM byte."""
        return self.flops / self.dram_bytes if self.dram_bytes else float("inf")

    @property
    def roofline_share(self) -> float:
        return self.roofline / self.cycles if self.cycles else 0.0

    def as_dict(self, total: int) -> dict:
        return {
            "name": self.name,
            "start": self.start,
            "cycles": self.cycles,
            "share": self.cycles / total if total else 0.0,
            "flops": self.flops,
            "macs": dict(self.macs),
            "vector_ops": self.vector_ops,
            "dram_bytes": self.dram_bytes,
            "dram_bytes_read": self.dram_read,
            "dram_bytes_written": self.dram_written,
            "intensity": None if self.dram_bytes == 0 else self.intensity,
            "bound": self.bound,
            "roofline_cycles": self.roofline,
            "roofline_share": self.roofline_share,
            "busy": {k: self.busy.get(k, 0.0) for k in UNITS},
            "instructions": self.instructions,
            "hints": list(self.hints),
        }


def _bound(hw: Hardware, k: KernelProfile) -> tuple[int, str]:
    terms = roofline_terms(hw, k.macs, k.vector_ops, k.dram_bytes)
    unit = max(terms, key=terms.__getitem__)
    roofline = roofline_cycles(hw, k.macs, k.vector_ops, k.dram_bytes)
    busiest = max((v for u, v in k.busy.items() if u != "launch"), default=0.0)
    if k.cycles and roofline < 0.5 * k.cycles and busiest < 0.5 * k.cycles:
        return roofline, "overhead"
    return roofline, "memory" if unit == "dram" else f"compute ({unit})"


def _hints(hw: Hardware, k: KernelProfile) -> list[str]:
    out = []
    if k.cycles == 0:
        return out
    if k.bound in ("memory", "overhead") and k.scratch_written >= 0.25 * k.dram_bytes > 0:
        out.append(
            f"writes {k.scratch_written:,} B of intermediates to DRAM that a later kernel "
            "reads back: fusing it with its consumer would keep them on chip"
        )
    if k.bound == "memory" and "f32" in k.dtypes and k.roofline_share > 0.5:
        out.append("memory-bound in f32: bf16 would halve its DRAM bytes, int8 quarter them")
    if k.bound == "overhead":
        launch = k.busy.get("launch", 0.0)
        if launch >= 0.3 * k.cycles:
            out.append(
                f"launch takes {launch / k.cycles:.0%} of it: too little work per kernel "
                "(fuse it with a neighbour)"
            )
        else:
            out.append(
                "no unit is busy for most of it: waiting on DRAM latency or dependences "
                "(larger tiles or double buffering would overlap them)"
            )
    elif k.roofline_share < 0.5:
        idle = [u for u in ("load", "matrix", "vector") if k.busy.get(u, 0.0) < 0.1 * k.cycles]
        if k.bound.startswith("compute") and "load" not in idle:
            out.append(
                f"reaches {k.roofline_share:.0%} of its bound: compute waits on loads "
                "(more reuse per tile would help)"
            )
        elif idle:
            out.append(f"reaches {k.roofline_share:.0%} of its bound; idle: {', '.join(idle)}")
    return out


def profile_run(program: Program, hw: Hardware, report: SimReport) -> list[KernelProfile]:
    """One KernelProfile per kernel of `report` (which must have been recorded: simulate
    with record=True). Instructions before the first marker form a kernel '(setup)'."""
    if not report.events and program.instrs:
        raise ValueError("the run has no event record: simulate it with record=True")
    starts = [i for i, ins in enumerate(program.instrs) if isinstance(ins, Kernel)]
    spans = list(report.kernels)
    kernels: list[KernelProfile] = []
    owner = [0] * len(program.instrs)
    if not starts or starts[0] > 0:
        end = spans[0].start if spans else report.cycles
        kernels.append(KernelProfile("(setup)", 0, end))
    for marker, span in zip(starts, spans, strict=True):
        kernels.append(KernelProfile(span.name, span.start, span.end))
        owner[marker] = len(kernels) - 1
    k = 0
    for i, ins in enumerate(program.instrs):
        if isinstance(ins, Kernel):
            k = owner[i]
        owner[i] = k
    members: dict[int, list[int]] = defaultdict(list)
    for i, k in enumerate(owner):
        members[k].append(i)
    scratch = {b.name for b in program.buffers if b.role == "scratch"}
    unit_of = {e.index: e.unit for e in report.events}  # the run's own classification
    for k, indices in members.items():
        kp = kernels[k]
        instrs = [program.instrs[i] for i in indices]
        work = instruction_work(hw, instrs, [unit_of[i] for i in indices])
        kp.macs, kp.vector_ops = work.macs, work.vector_ops
        kp.dram_read, kp.dram_written = work.read, work.written
        kp.instructions = sum(1 for ins in instrs if not isinstance(ins, Kernel))
        for ins in instrs:
            if isinstance(ins, Store):
                kp.dtypes.add(ins.src.dtype)
                if ins.dst.buffer in scratch:
                    kp.scratch_written += ins.dst.rows * ins.dst.cols * ins.src.itemsize
            elif isinstance(ins, Load):
                kp.dtypes.add(ins.dst.dtype)
    for e in report.events:
        kp = kernels[owner[e.index]]
        kp.busy[e.unit] = kp.busy.get(e.unit, 0.0) + (e.end - e.start)
    for kp in kernels:
        kp.roofline, kp.bound = _bound(hw, kp)
        kp.hints = _hints(hw, kp)
    return [kp for kp in kernels if kp.instructions or kp.cycles]
