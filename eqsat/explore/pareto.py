"""The Pareto front of an exploration: points no other point beats on every axis."""

from __future__ import annotations

from collections.abc import Sequence


def pareto_front(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the points not dominated by another (all axes minimized: another is
    <= on every axis and < on one). Equal points are all on the front."""
    front = []
    for i, p in enumerate(points):
        dominated = any(
            all(a <= b for a, b in zip(q, p, strict=True))
            and any(a < b for a, b in zip(q, p, strict=True))
            for j, q in enumerate(points)
            if j != i
        )
        if not dominated:
            front.append(i)
    return front
