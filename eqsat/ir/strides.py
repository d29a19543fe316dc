"""Strided layouts as numbers: row-major strides, broadcast strides, and merging the
axes that a set of layouts walks alike. The backend's views and the cost model's
kernel plans (eqsat/spatial_plan.py) share these, so that both see the same loops."""

from __future__ import annotations

from collections.abc import Sequence

Strides = tuple[int, ...]


def row_major(shape: Sequence[int]) -> Strides:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def broadcast_strides(shape: Sequence[int], to: Sequence[int]) -> Strides:
    """Strides of a row-major tensor of `shape` broadcast to `to` (0 where it repeats)."""
    own = row_major(shape)
    extra = len(to) - len(shape)
    return (0,) * extra + tuple(
        0 if d == 1 and t != 1 else s for d, s, t in zip(shape, own, to[extra:], strict=True)
    )


def coalesce(shape: Sequence[int], strides: list[Strides]) -> tuple[Strides, list[Strides]]:
    """Drop size-1 axes and merge neighbours that every stride tuple walks as one axis."""
    keep = [i for i, d in enumerate(shape) if d != 1]
    dims = [shape[i] for i in keep]
    strs = [[s[i] for i in keep] for s in strides]
    i = len(dims) - 2
    while i >= 0:
        if all(s[i] == s[i + 1] * dims[i + 1] for s in strs):
            dims[i] *= dims[i + 1]
            del dims[i + 1]
            for s in strs:
                s[i] = s[i + 1]
                del s[i + 1]
        i -= 1
    if not dims:
        return (1,), [(1,) for _ in strides]
    return tuple(dims), [tuple(s) for s in strs]
