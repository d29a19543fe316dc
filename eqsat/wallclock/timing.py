"""Timing several programs fairly on a shared machine: they take turns, so that a
change in the machine's load affects them alike, after warm-up runs that are not
counted (IREE's first call allocates, ORT's first call plans)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Seconds per call over the timed runs."""

    best: float
    median: float
    worst: float
    runs: int


def interleaved(
    calls: Mapping[str, Callable[[], object]],
    repeat: int,
    warmup: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Timing]:
    """Each call `warmup` times untimed, then `repeat` rounds in which every call runs
    once; `progress(round)` after each round."""
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got {repeat} and {warmup}")
    for call in calls.values():
        for _ in range(warmup):
            call()
    times: dict[str, list[float]] = {label: [] for label in calls}
    for r in range(repeat):
        for label, call in calls.items():
            start = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - start)
        if progress is not None:
            progress(r + 1)
    return {
        label: Timing(min(t), statistics.median(t), max(t), len(t)) for label, t in times.items()
    }
