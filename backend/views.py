"""Values of the program being compiled: strided views of DRAM buffers, or immediates.

A graph value lives either in DRAM, as a `View` (offset, shape and element strides
over a `LogicalBuffer`), or nowhere at all, as an `Imm` (a tensor whose elements are
all one number: constants fold into the instructions that use them). Layout ops are
views: transpose permutes strides, slice moves the offset, broadcast puts stride 0 on
new axes, and reshape of a row-major view aliases the buffer. No data moves until a
kernel needs a layout its loads cannot express.

Logical buffers are placed in physical DRAM buffers by the planner (planner.py) after
the kernel schedule is known: `phys` and `base` are filled in then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from eqsat.ir.strides import nocopy_reshape, row_major, row_runs
from hwsim.gemm_queues import segments


@dataclass(eq=False)
class LogicalBuffer:
    """Storage of one computed value (or a program input/output), `size` elements."""

    dtype: str
    size: int
    role: str = "scratch"  # input | output | scratch
    name: str | None = None  # fixed DRAM name for inputs and outputs
    phys: str | None = None  # physical DRAM buffer (set by the planner)
    base: int = 0  # element offset inside `phys`
    shape: tuple[int, ...] | None = None  # declared shape (inputs and outputs)
    first: int = -1  # index of the kernel that writes it (-1: before the program)
    last: int = -1  # index of the last kernel that reads it
    label: str = field(default="")

    @property
    def nbytes(self) -> int:
        from hwsim.dtypes import ITEMSIZE

        return self.size * ITEMSIZE[self.dtype]


@dataclass(frozen=True)
class View:
    """shape-indexed elements of `buf`: element [i0, i1, ...] at offset + sum(i_k * strides[k])."""

    buf: LogicalBuffer
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def dtype(self) -> str:
        return self.buf.dtype

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def is_row_major(self) -> bool:
        """Dense row-major (strides of size-1 axes do not matter)."""
        want = row_major(self.shape)
        return all(d == 1 or s == w for d, s, w in zip(self.shape, self.strides, want, strict=True))

    def is_whole(self) -> bool:
        """The dense row-major view of its whole buffer from offset 0."""
        return self.offset == 0 and self.numel == self.buf.size and self.is_row_major()

    def permute(self, perm: tuple[int, ...]) -> View:
        return View(
            self.buf,
            self.offset,
            tuple(self.shape[p] for p in perm),
            tuple(self.strides[p] for p in perm),
        )

    def slice(self, starts: tuple[int, ...], ends: tuple[int, ...]) -> View:
        offset = self.offset + sum(s * st for s, st in zip(starts, self.strides, strict=True))
        shape = tuple(e - s for s, e in zip(starts, ends, strict=True))
        return View(self.buf, offset, shape, self.strides)

    def broadcast_to(self, shape: tuple[int, ...]) -> View:
        extra = len(shape) - len(self.shape)
        strides = [0] * extra
        for d, s, want in zip(self.shape, self.strides, shape[extra:], strict=True):
            strides.append(0 if d == 1 and want != 1 else s)
        return View(self.buf, self.offset, tuple(shape), tuple(strides))

    def reshape(self, shape: tuple[int, ...]) -> View | None:
        """The same elements in row-major order with a new shape, without copying, or None."""
        if self.is_row_major():
            return View(self.buf, self.offset, tuple(shape), row_major(shape))
        strides = nocopy_reshape(self.shape, self.strides, tuple(shape))
        return None if strides is None else View(self.buf, self.offset, tuple(shape), strides)


@dataclass(frozen=True)
class RowsView(View):
    """A [rows, cols] view whose rows no single stride walks: row r lies at
    offset + sum(unravel(r, row_shape) * row_strides), its columns `strides[1]` apart
    (a GEMM's batch rows folded over an operand such as a window of a padded map).
    `strides[0]` is the innermost row axis's: rows are uniformly strided in runs of
    `run` (row_shape's merged innermost axes). Kernels load it run by run."""

    row_shape: tuple[int, ...] = ()
    row_strides: tuple[int, ...] = ()

    @property
    def run(self) -> int:
        return self.row_shape[-1]

    def _strided_only(self, *_args) -> View:
        raise AssertionError(f"{self.buf.label}: folded rows are no strided view to re-view")

    permute = slice = reshape = _strided_only  # only kernels' loads read it (tileexpr)

    def broadcast_to(self, shape: tuple[int, ...]) -> View:
        return self if tuple(shape) == self.shape else self._strided_only()

    def row_offset(self, r: int) -> int:
        """Elements from `offset` to the start of row r."""
        off = 0
        for d, st in zip(reversed(self.row_shape), reversed(self.row_strides), strict=True):
            r, i = divmod(r, d)
            off += i * st
        return off

    def runs(self, r0: int, rows: int) -> list[tuple[int, int]]:
        """(first row, count) of the uniformly strided runs rows [r0, r0 + rows) split into."""
        return segments(r0, rows, self.run)

    @staticmethod
    def of(view: View) -> RowsView | None:
        """`view`'s leading axes as rows in runs (eqsat/ir/strides.py row_runs), or None
        where they do not load run by run."""
        runs = row_runs(view.shape, view.strides)
        if runs is None:
            return None
        row_shape, row_strides = runs
        shape = (math.prod(view.shape[:-1]), view.shape[-1])
        strides = (row_strides[-1], view.strides[-1])
        return RowsView(view.buf, view.offset, shape, strides, row_shape, row_strides)


@dataclass(frozen=True)
class Imm:
    """A tensor of one repeated value (already rounded to its dtype)."""

    value: float
    dtype: str


Value = View | Imm
