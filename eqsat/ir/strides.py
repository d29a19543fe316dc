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


def same_layout(shape: Sequence[int], a: Strides, b: Strides) -> bool:
    """Do strides `a` and `b` lay out `shape` alike? The strides of axes of extent 1
    are never stepped, so a reshape or transpose may leave anything there."""
    return all(d == 1 or x == y for d, x, y in zip(shape, a, b, strict=True))


def is_row_major(shape: Sequence[int], strides: Strides) -> bool:
    return same_layout(shape, strides, row_major(shape))


def broadcast_strides(
    shape: Sequence[int], to: Sequence[int], strides: Strides | None = None
) -> Strides:
    """Strides of a tensor of `shape` (row-major, or `strides`) broadcast to `to` (0
    where it repeats)."""
    own = row_major(shape) if strides is None else strides
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


def inverse_perm(perm: Sequence[int]) -> tuple[int, ...]:
    """The permutation that undoes `perm` (x.transpose(perm).transpose(inverse) == x)."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def keeps_last_axis(perm: Sequence[int]) -> bool:
    """Does a transpose by `perm` keep the contiguous (last) axis last? (Any perm of
    fewer than two axes does.)"""
    return len(perm) < 2 or perm[-1] == len(perm) - 1


def row_runs(shape: Sequence[int], strides: Strides) -> tuple[Strides, Strides] | None:
    """A view's leading axes (all but the last) as the rows of a [rows, last] matrix:
    (row shape, row strides), neighbours merged where their strides chain, so that
    rows come uniformly strided in runs of the innermost extent (one run: a plain
    reshape). None where a run's rows would not load as one DMA of a tile: rows that
    repeat (stride 0), or a last axis neither contiguous nor broadcast."""
    if not shape or strides[-1] not in (0, 1):
        return None
    dims, (strs,) = coalesce(shape[:-1], [strides[:-1]])
    if len(dims) > 1 and strs[-1] == 0:
        return None
    return dims, strs


def nocopy_reshape(
    old: tuple[int, ...], old_strides: tuple[int, ...], new: tuple[int, ...]
) -> tuple[int, ...] | None:
    """numpy's attempt_nocopy_reshape: strides for `new` over the same memory, or None."""
    dims = [(d, s) for d, s in zip(old, old_strides, strict=True) if d != 1]
    od = [d for d, _ in dims]
    os_ = [s for _, s in dims]
    out: list[int] = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(od):
        np_, op = new[ni], od[oi]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                if nj >= len(new):
                    return None
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(od):
                    return None
                op *= od[oj]
                oj += 1
        for k in range(oi, oj - 1):
            if os_[k] != od[k + 1] * os_[k + 1]:
                return None
        out[nj - 1] = os_[oj - 1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    while ni < len(new):  # trailing size-1 axes
        if new[ni] != 1:
            return None
        out[ni] = 1
        ni += 1
    if oi < len(od):
        return None
    return tuple(out)
