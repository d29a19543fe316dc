"""Tile spaces: how a kernel walks an N-D index space in 2-D tiles.

A `Space` names one axis for tile rows and one for tile columns; the other axes are
looped over one index at a time. An `Operand` is a DRAM view seen from the space
(strides per space axis; 0 where it broadcasts), so the DRAM reference of any tile of
any operand is plain arithmetic: DMAs are 2-D strided (rows x contiguous columns).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from hwsim.isa import DramRef

from .views import LogicalBuffer, RowsView, View


@dataclass(frozen=True)
class Operand:
    """A view's access pattern over a space: element idx at offset + sum(idx * strides)."""

    buf: LogicalBuffer
    offset: int
    strides: tuple[int, ...]
    rows: RowsView | None = None  # rows of a 2-D space not one stride apart

    @property
    def dtype(self) -> str:
        return self.buf.dtype

    @staticmethod
    def of(view: View, shape: tuple[int, ...]) -> Operand:
        """`view` broadcast to `shape` (numpy rules)."""
        if isinstance(view, RowsView):
            if view.shape != shape:
                raise AssertionError(f"{view.shape} folded rows seen as {shape}")
            return Operand(view.buf, view.offset, view.strides, view)
        v = view.broadcast_to(shape) if view.shape != shape else view
        return Operand(view.buf, v.offset, v.strides)


@dataclass(frozen=True)
class Pos:
    """One tile: index of its first element (all axes) and its extent."""

    index: tuple[int, ...]
    rows: int
    cols: int

    def offset(self, op: Operand) -> int:
        if op.rows is not None:  # a 2-D space: (row, column)
            return op.offset + op.rows.row_offset(self.index[0]) + self.index[1] * op.strides[1]
        return op.offset + sum(i * s for i, s in zip(self.index, op.strides, strict=True))


def dram(op: Operand, offset: int, rows: int, cols: int, stride: int) -> DramRef:
    """A DMA reference into the physical buffer the planner gave `op`'s logical buffer."""
    if op.buf.phys is None:
        raise AssertionError(f"buffer {op.buf.label} was not placed")
    return DramRef(op.buf.phys, op.buf.base + offset, rows, cols, stride if rows > 1 else cols)


@dataclass(frozen=True)
class Space:
    shape: tuple[int, ...]
    row: int
    col: int

    @property
    def rows(self) -> int:
        return self.shape[self.row]

    @property
    def cols(self) -> int:
        return self.shape[self.col]

    def outer(self) -> list[int]:
        return [a for a in range(len(self.shape)) if a not in (self.row, self.col)]

    def outer_count(self) -> int:
        n = 1
        for a in self.outer():
            n *= self.shape[a]
        return n

    def positions(self, rt: int, ct: int) -> Iterator[Pos]:
        """Tiles of at most rt x ct: outer axes outermost, then rows, then columns."""
        outer = self.outer()
        rank = len(self.shape)
        for idx in itertools.product(*(range(self.shape[a]) for a in outer)):
            base = [0] * rank
            for a, i in zip(outer, idx, strict=True):
                base[a] = i
            for r0 in range(0, self.rows, rt):
                for c0 in range(0, self.cols, ct):
                    base[self.row], base[self.col] = r0, c0
                    yield Pos(tuple(base), min(rt, self.rows - r0), min(ct, self.cols - c0))
