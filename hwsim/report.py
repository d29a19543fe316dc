"""What a simulation returns: cycle and traffic statistics plus the output buffers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class SimulationError(Exception):
    """A program the machine rejects; the message names the offending instruction."""


@dataclass(frozen=True)
class KernelSpan:
    """Cycles [start, end) of one kernel (from its `kernel` marker to the next)."""

    name: str
    start: int
    end: int

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Event:
    """Instruction `index` occupied `unit` over cycles [start, end): load and store are
    the DMA queues (issue + transfer, as their busy counts), matrix and vector the
    compute units, launch a kernel barrier. Per unit, the durations sum to `busy`."""

    index: int
    unit: str
    start: float
    end: float


@dataclass(frozen=True)
class SimReport:
    """Timing and traffic of one run. Units: cycles and bytes."""

    cycles: int
    busy: dict[str, int]  # load, store (queue occupancy), matrix, vector, launch
    dram_bytes_read: int
    dram_bytes_written: int
    peak_sram_bytes: int  # highest SRAM byte address touched
    peak_acc_bytes: int
    instr_counts: dict[str, int]
    macs: dict[str, int]  # by input dtype
    vector_ops: int  # lane operations (elements x passes)
    roofline_cycles: int
    kernels: tuple[KernelSpan, ...] = field(default=())
    mac_utilization: float = 0.0
    events: tuple[Event, ...] = field(default=())  # with simulate(record=True)
    # (signalling, waiting) instruction indices of every token consumed (record=True)
    flows: tuple[tuple[int, int], ...] = field(default=())

    @property
    def utilization(self) -> dict[str, float]:
        """Busy fraction of each unit over the whole run."""
        return {k: v / self.cycles if self.cycles else 0.0 for k, v in self.busy.items()}

    @property
    def dram_bytes(self) -> int:
        return self.dram_bytes_read + self.dram_bytes_written

    def summary(self) -> str:
        """A few human-readable lines."""
        util = ", ".join(f"{k} {v:.0%}" for k, v in self.utilization.items())
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.instr_counts.items()))
        return "\n".join(
            [
                f"cycles      {self.cycles} (roofline {self.roofline_cycles}, "
                f"{self.roofline_cycles / max(1, self.cycles):.0%} of peak)",
                f"utilization {util}; MACs {self.mac_utilization:.0%}",
                f"dram        read {self.dram_bytes_read} B, written {self.dram_bytes_written} B",
                f"peak        sram {self.peak_sram_bytes} B, acc {self.peak_acc_bytes} B",
                f"instrs      {counts}",
            ]
        )


@dataclass(frozen=True)
class SimResult:
    """Outputs (name -> array shaped as declared) and the report of one simulation."""

    outputs: dict[str, np.ndarray]
    report: SimReport

    @property
    def cycles(self) -> int:
        return self.report.cycles
