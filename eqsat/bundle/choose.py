"""Choosing bucket sizes from a length distribution: exact dynamic programming.

With requests of length n drawn from a histogram and a program per bucket, a request
runs on the smallest bucket >= n and costs that bucket's cycles. The expected cost of
buckets b1 < ... < bK is sum_k cycles(bk) * P(b(k-1) < n <= bk). When cycles grow with
the size, an optimal bucket sits on an observed length (moving it down to the largest
length it serves only lowers its cost), so the candidates are the observed lengths and
the range's top (which must be a bucket); the DP over them is exact for that set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqsat.bundle.errors import BundleError
from eqsat.bundle.ranges import DimRange


@dataclass(frozen=True)
class BucketChoice:
    buckets: list[int]
    expected_cycles: float  # per request, over the histogram
    candidates: int


def read_lengths(path: str | Path) -> dict[int, int]:
    """A lengths file: one length per line, optionally followed by a count
    (`300` or `300 17`); `#` starts a comment. Returns length -> count."""
    counts: dict[int, int] = {}
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise BundleError(f"{path}: cannot read the lengths file ({e})") from None
    for k, raw in enumerate(lines, 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) > 2 or not all(f.isdigit() and len(f) <= 18 for f in fields):
            raise BundleError(f"{path}:{k}: expected 'LENGTH' or 'LENGTH COUNT', got '{raw}'")
        length, count = int(fields[0]), int(fields[1]) if len(fields) == 2 else 1
        if length < 1:
            raise BundleError(f"{path}:{k}: a length must be at least 1")
        counts[length] = counts.get(length, 0) + count
    if not sum(counts.values()):
        raise BundleError(f"{path}: no lengths")
    return counts


def choose_buckets(
    counts: Mapping[int, int], r: DimRange, k: int, cycles: Callable[[int], float]
) -> BucketChoice:
    """At most k buckets (the top one r.hi) minimizing the expected cycles per request
    over the histogram `counts`; `cycles(size)` estimates a bucket's cost."""
    if k < 1:
        raise BundleError("--num-buckets must be at least 1")
    outside = sorted(n for n in counts if not r.lo <= n <= r.hi)
    if outside:
        raise BundleError(f"lengths {outside[:5]} lie outside {r}")
    cands = sorted(set(counts) | {r.hi})
    cost = np.array([float(cycles(c)) for c in cands])
    total = sum(counts.values())
    # mass[j]: probability of n <= cands[j]
    mass = np.cumsum([counts.get(c, 0) / total for c in cands])
    m = len(cands)
    # best[j]: expected cost of covering n <= cands[j] with the buckets so far, last at j
    best = cost * mass
    back: list[np.ndarray] = [np.full(m, -1)]
    answers = [(float(best[-1]), 1)]
    later = np.triu(np.ones((m, m), dtype=bool), 1)  # i < j
    for layer in range(2, min(k, m) + 1):
        # via[i, j]: bucket j right after bucket i, serving cands[i] < n <= cands[j]
        via = best[:, None] + cost[None, :] * (mass[None, :] - mass[:, None])
        via = np.where(later, via, np.inf)
        arg = np.argmin(via, axis=0)
        best = via[arg, np.arange(m)]
        back.append(arg)
        answers.append((float(best[-1]), layer))
    value, layers = min(answers)
    picked, j = [], m - 1
    for layer in range(layers, 0, -1):
        picked.append(cands[j])
        j = int(back[layer - 1][j])
    return BucketChoice(sorted(picked), value, m)


def expected_cycles(
    counts: Mapping[int, int], buckets: Sequence[int], cycles: Callable[[int], float]
) -> float:
    """The expected cost per request of a given set of buckets (for checks and reports)."""
    total = sum(counts.values())
    out = 0.0
    for n, c in counts.items():
        b = min(x for x in buckets if x >= n)
        out += cycles(b) * c / total
    return out
