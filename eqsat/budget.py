"""The time and memory one optimization may use, shared by saturation, pricing and
extraction.

egglog cannot be stopped inside a round, and serializing the e-graph cannot be
stopped at all, so the limits are kept by prediction: a round is started only if it,
and extracting from the e-graph it is predicted to leave, fit in what remains; the
e-graph's growth is capped at the e-nodes the memory left can extract from (through
the back-off scheduler's match budget, which bounds how far a round overshoots).
Pricing and greedy extraction check the clock as they go and give up with
`OutOfTime`, after which the optimizer keeps the input program.

The per-e-node figures are measured on this machine (bench/limits.py prints them
again): serializing, decoding, typing, pricing and greedy extraction take 45-70 us
and 1.5-4 KB of Python heap per e-node, on top of egglog's own memory.
"""

from __future__ import annotations

import os
import re
import resource
import time
from dataclasses import dataclass, field

EXTRACT_SECONDS_PER_NODE = 80e-6
BYTES_PER_NODE = 8 * 1024  # egglog's e-node and its share of extraction's heap
MEMORY_SHARE = 0.5  # default --memory-limit: this share of the machine's RAM

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)
_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class OutOfTime(Exception):
    """Raised inside pricing or extraction when the optimization's time is up."""


def parse_size(text: str) -> int:
    """'2GB', '1.5G', '512MiB', '1000000' -> bytes (kB/MB/GB decimal, KiB/MiB/GiB binary).

    Raises ValueError with a message saying what is accepted."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"expected a size such as 2GB, 512MiB or 1000000 (bytes), got '{text}'")
    number, unit, suffix = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    scale = _BINARY[unit] if suffix.startswith("i") else _UNITS[unit]
    value = int(number * scale)
    if value <= 0:
        raise ValueError(f"expected a positive size, got '{text}'")
    return value


def machine_memory() -> int:
    """Physical RAM in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def default_memory_limit() -> int:
    return int(machine_memory() * MEMORY_SHARE) or 8 * 2**30


def current_rss() -> int:
    """Resident memory of this process now, in bytes (peak where /proc is absent)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class Budget:
    """Seconds and bytes for one optimization, from the moment it is made."""

    seconds: float
    memory: int
    start: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        return self.seconds - self.elapsed()

    def check_time(self) -> None:
        if self.remaining() <= 0:
            raise OutOfTime

    def extraction_seconds(self, nodes: int) -> float:
        return nodes * EXTRACT_SECONDS_PER_NODE

    def node_cap(self, nodes_now: int) -> int:
        """The e-nodes the memory left allows: egglog's growth plus extraction's heap."""
        free = self.memory - current_rss()
        return nodes_now + max(free, 0) // BYTES_PER_NODE

    def over_memory(self) -> bool:
        return current_rss() > self.memory


def deadline_checker(budget: Budget | None, every: int = 1024):
    """A function to call once per unit of work: checks the clock every `every` calls."""
    if budget is None:
        return lambda: None
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count % every == 0:
            budget.check_time()

    return tick
