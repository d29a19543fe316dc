"""A simulated run as Chrome trace-event JSON (what Perfetto and chrome://tracing open).

Lanes (threads of one process): `kernels` (one slice per kernel, the parent the
instruction slices group under when the lanes are read together), then one per
engine the simulator models: the load and store DMA queues, the matrix unit, the
vector unit, and `launch` (kernel barriers). A slice per instruction, with its
assembly text and cycles in `args`; flow arrows for the tokens the queues wait on
(signal -> wait); a counter track of DRAM bandwidth (bytes per cycle moved by the DMA
transfers in flight). Timestamps are microseconds at the
hardware's clock; `args.cycles` keeps the exact figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqsat.profile import KernelProfile
from hwsim import Hardware, Program, SimReport
from hwsim.asm import format_instr
from hwsim.simulator import dram_traffic

LANES = ("kernels", "load", "store", "matrix", "vector", "launch")
_PID = 1


def trace_events(
    program: Program,
    hw: Hardware,
    report: SimReport,
    kernels: list[KernelProfile],
    name: str = "program",
) -> dict[str, Any]:
    """The trace of a recorded run (simulate(record=True)) as a JSON-ready dict."""
    us = 1.0 / (hw.clock_ghz * 1e3)  # microseconds per cycle
    tid = {lane: i + 1 for i, lane in enumerate(LANES)}
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "name": "process_name", "args": {"name": f"{name} on {hw.name}"}}
    ]
    for lane, t in tid.items():
        events.append(
            {"ph": "M", "pid": _PID, "tid": t, "name": "thread_name", "args": {"name": lane}}
        )
        events.append(
            {
                "ph": "M",
                "pid": _PID,
                "tid": t,
                "name": "thread_sort_index",
                "args": {"sort_index": t},
            }
        )
    for k in kernels:
        events.append(
            {
                "ph": "X",
                "pid": _PID,
                "tid": tid["kernels"],
                "name": k.name,
                "cat": "kernel",
                "ts": k.start * us,
                "dur": k.cycles * us,
                "args": {"cycles": k.cycles, "bound": k.bound, "flops": k.flops},
            }
        )
    owner = np.searchsorted([k.start for k in kernels], [e.start for e in report.events], "right")
    for e, ki in zip(report.events, owner, strict=True):
        ins = program.instrs[e.index]
        kernel = kernels[max(int(ki) - 1, 0)].name if kernels else ""
        events.append(
            {
                "ph": "X",
                "pid": _PID,
                "tid": tid[e.unit],
                "name": type(ins).__name__.lower(),
                "cat": e.unit,
                "ts": e.start * us,
                "dur": (e.end - e.start) * us,
                "args": {
                    "cycles": e.end - e.start,
                    "instruction": e.index,
                    "asm": format_instr(ins),
                    "kernel": kernel,
                },
            }
        )
    events += _bandwidth_counter(program, report, hw.issue_cycles, us)
    events += _flow_arrows(report, tid, us)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "hardware": hw.name,
            "clock_ghz": hw.clock_ghz,
            "cycles": report.cycles,
            "busy_cycles": dict(report.busy),
        },
    }


def _flow_arrows(report: SimReport, tid: dict[str, int], us: float) -> list[dict[str, Any]]:
    """An arrow per token: from the end of the instruction that signalled it to the
    start of the one that waited on it (the dependences the queues synchronise on)."""
    at = {e.index: e for e in report.events}
    out: list[dict[str, Any]] = []
    for k, (src, dst) in enumerate(report.flows):
        a, b = at.get(src), at.get(dst)
        if a is None or b is None:
            continue
        common = {"pid": _PID, "name": "token", "cat": "dependence", "id": k}
        out.append({**common, "ph": "s", "tid": tid[a.unit], "ts": a.end * us - 1e-6})
        out.append({**common, "ph": "f", "bp": "e", "tid": tid[b.unit], "ts": b.start * us})
    return out


def _bandwidth_counter(
    program: Program, report: SimReport, issue: int, us: float
) -> list[dict[str, Any]]:
    """DRAM bytes per cycle over time: a DMA's slice is its issue, then its transfer on
    the one DRAM channel; the bytes are spread over the transfer."""
    changes: list[tuple[float, float]] = []
    for e in report.events:
        start = e.start + issue
        if e.unit in ("load", "store") and e.end > start:
            rate = sum(dram_traffic(program.instrs[e.index])) / (e.end - start)
            changes += [(start, rate), (e.end, -rate)]
    if not changes:
        return []
    changes.sort()
    times = np.array([t for t, _ in changes])
    level = np.cumsum([d for _, d in changes])
    keep = np.append(times[1:] != times[:-1], True)  # one sample per instant
    return [
        {
            "ph": "C",
            "pid": _PID,
            "name": "DRAM bytes/cycle",
            "ts": float(t) * us,
            "args": {"bytes_per_cycle": round(max(float(v), 0.0), 6)},
        }
        for t, v in zip(times[keep], level[keep], strict=True)
    ]
