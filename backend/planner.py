"""DRAM planning: place logical buffers in physical ones by liveness analysis.

Inputs and outputs get their own named buffers. Scratch values live in one arena per
dtype (a DRAM buffer has one element type): a value occupies [base, base + size) of
its arena from the kernel that writes it to the last kernel that reads it; after that
the range is free for values written by later kernels (first fit, like a heap
simulator). Kernels are separated by barriers, so reuse across kernels is race-free.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .views import LogicalBuffer


@dataclass(frozen=True)
class Footprint:
    """DRAM bytes: what the plan uses vs one buffer per value (inputs/outputs included)."""

    planned_bytes: int
    naive_bytes: int
    arena_bytes: dict[str, int]


class _Arena:
    def __init__(self) -> None:
        self.free: list[tuple[int, int]] = []  # (start, size), sorted by start
        self.top = 0

    def alloc(self, size: int) -> int:
        for j, (start, n) in enumerate(self.free):
            if n >= size:
                self.free[j] = (start + size, n - size)
                if self.free[j][1] == 0:
                    del self.free[j]
                return start
        if self.free and self.free[-1][0] + self.free[-1][1] == self.top:
            start = self.free.pop()[0]  # grow the trailing hole
        else:
            start = self.top
        self.top = start + size
        return start

    def release(self, start: int, size: int) -> None:
        self.free.append((start, size))
        self.free.sort()
        merged: list[tuple[int, int]] = []
        for s, n in self.free:
            if merged and merged[-1][0] + merged[-1][1] == s:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((s, n))
        self.free = merged


def plan(
    buffers: list[LogicalBuffer], uses: list[tuple[set, set]], arena_name
) -> tuple[dict[str, int], Footprint]:
    """Assign phys/base to every scratch buffer. `uses[i]` = (read, written) of kernel i.

    Returns (arena dtype -> size in elements, footprint).
    """
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, (reads, writes) in enumerate(uses):
        for b in writes:
            first.setdefault(id(b), i)
            last[id(b)] = max(last.get(id(b), i), i)
        for b in reads:
            last[id(b)] = max(last.get(id(b), i), i)
    scratch = [b for b in buffers if b.role == "scratch"]
    born: dict[int, list[LogicalBuffer]] = defaultdict(list)
    dies: dict[int, list[LogicalBuffer]] = defaultdict(list)
    for b in scratch:
        if id(b) not in first:
            continue  # never written: never placed (dead)
        b.first, b.last = first[id(b)], last[id(b)]
        born[b.first].append(b)
        dies[b.last].append(b)
    arenas: dict[str, _Arena] = defaultdict(_Arena)
    for i in range(len(uses)):
        for b in sorted(born[i], key=lambda b: -b.size):
            b.base = arenas[b.dtype].alloc(b.size)
            b.phys = arena_name(b.dtype)
        for b in dies[i]:
            arenas[b.dtype].release(b.base, b.size)
    from hwsim.dtypes import ITEMSIZE

    sizes = {d: a.top for d, a in arenas.items() if a.top}
    fixed = sum(b.nbytes for b in buffers if b.role != "scratch")
    naive = fixed + sum(b.nbytes for b in scratch if id(b) in first)
    planned = fixed + sum(n * ITEMSIZE[d] for d, n in sizes.items())
    arena_bytes = {d: n * ITEMSIZE[d] for d, n in sizes.items()}
    return sizes, Footprint(planned, naive, arena_bytes)
