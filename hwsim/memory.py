"""Memories of the simulator, with the bookkeeping that catches bad programs.

Each memory (SRAM, accumulator, each writable DRAM buffer) keeps, per byte (per
element in DRAM): whether it was ever written, and for each queue (isa.QUEUES) the
sequence number of the last instruction of that queue that wrote / read it. An access
by an instruction whose vector clock (per queue: the last sequence number that
happens-before it through queue order and tokens) is older than one of those numbers
races with that access. All checks are numpy reductions over strided views of whole
tiles; views are cached per tile since programs reuse the same addresses.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .dtypes import STORAGE, from_storage, to_storage
from .isa import QUEUES, DramRef, Tile


class Fault(Exception):
    """A bad access; `other` is the (queue, seq) of the conflicting access for races."""

    def __init__(self, msg: str, other: tuple[int, int] | None = None) -> None:
        super().__init__(msg)
        self.other = other


class _Tracked:
    """Written mask and last reader/writer per queue over a flat array of cells."""

    def __init__(self, cells: int, races: bool) -> None:
        self.written = np.zeros(cells, dtype=bool)
        self.races = races
        shape = (len(QUEUES), cells) if races else (len(QUEUES), 0)
        self.wseq = np.zeros(shape, dtype=np.int32)
        self.rseq = np.zeros(shape, dtype=np.int32)

    def views(self, start: int, rows: int, cols: int, row_step: int) -> tuple:
        """(written, wseq, rseq) views of rows x cols cells, rows `row_step` cells apart."""
        w = as_strided(self.written[start:], (rows, cols), (row_step, 1))
        if not self.races:
            return w, None, None
        s0, s1 = self.wseq.strides
        nq = len(QUEUES)
        ws = as_strided(self.wseq[:, start:], (nq, rows, cols), (s0, row_step * s1, s1))
        rs = as_strided(self.rseq[:, start:], (nq, rows, cols), (s0, row_step * s1, s1))
        return w, ws, rs

    @staticmethod
    def check(seqs: np.ndarray, clock: tuple, what: str, name: object) -> None:
        last = seqs.max(axis=(1, 2))
        if last[0] > clock[0] or last[1] > clock[1] or last[2] > clock[2] or last[3] > clock[3]:
            q = next(q for q in range(len(QUEUES)) if last[q] > clock[q])
            raise Fault(f"race: {what.format(name)}", (q, int(last[q])))

    def on_read(self, v: tuple, q: int, seq: int, clock: tuple, name: object) -> None:
        written, ws, rs = v
        if not written.all():
            raise Fault(f"reads {name}, which was never (fully) written")
        if ws is not None:
            self.check(ws, clock, "reads {} while another queue writes it unordered", name)
            rs[q] = seq

    def on_write(self, v: tuple, q: int, seq: int, clock: tuple, name: object) -> None:
        written, ws, rs = v
        if ws is not None:
            self.check(ws, clock, "writes {} while another queue writes it unordered", name)
            self.check(rs, clock, "writes {} while another queue reads it unordered", name)
            ws[q] = seq
        written[...] = True


class _Where:
    """Names a tile in a message, formatted only if a message is actually built."""

    def __init__(self, space: str, t: Tile) -> None:
        self.space, self.t = space, t

    def __str__(self) -> str:
        return f"{self.space} bytes [{self.t.addr}, {self.t.end})"


class OnChip(_Tracked):
    """SRAM or accumulator: raw bytes, read and written as typed tiles."""

    def __init__(self, name: str, size: int, races: bool) -> None:
        super().__init__(size, races)
        self.name = name
        self.data = np.zeros(size, dtype=np.uint8)
        self._cache: dict[Tile, tuple] = {}

    def _views(self, t: Tile) -> tuple:
        v = self._cache.get(t)
        if v is None:
            isz = t.itemsize
            raw = self.data[t.addr : t.end].view(STORAGE[t.dtype])
            typed = as_strided(raw, (t.rows, t.cols), (t.row_stride * isz, isz))
            v = (typed, self.views(t.addr, t.rows, t.cols * isz, t.row_stride * isz))
            self._cache[t] = v
        return v

    def read(self, t: Tile, q: int, seq: int, clock: tuple) -> np.ndarray:
        typed, tracked = self._views(t)
        self.on_read(tracked, q, seq, clock, _Where(self.name, t))
        values = from_storage(typed, t.dtype)
        return values.astype(np.int64) if values.dtype.kind == "i" else values

    def write(self, t: Tile, values: np.ndarray, q: int, seq: int, clock: tuple) -> None:
        typed, tracked = self._views(t)
        self.on_write(tracked, q, seq, clock, _Where(self.name, t))
        typed[...] = to_storage(values, t.dtype)


class DramBuffer(_Tracked):
    """One DRAM buffer as a flat value array; inputs are read-only and need no tracking."""

    def __init__(self, name: str, dtype: str, values: np.ndarray, readonly: bool, races: bool):
        super().__init__(0 if readonly else values.size, races and not readonly)
        self.name, self.dtype, self.readonly = name, dtype, readonly
        self.values = values.reshape(-1)

    def _views(self, r: DramRef) -> tuple[np.ndarray, tuple | None]:
        isz = self.values.itemsize
        typed = as_strided(self.values[r.offset :], (r.rows, r.cols), (r.stride * isz, isz))
        tracked = None if self.readonly else self.views(r.offset, r.rows, r.cols, r.stride)
        return typed, tracked

    def read(self, r: DramRef, q: int, seq: int, clock: tuple) -> np.ndarray:
        typed, tracked = self._views(r)
        if tracked is not None:
            self.on_read(tracked, q, seq, clock, f"DRAM {self.name}[{r.offset}:{r.end}]")
        return typed

    def gather(self, r: DramRef, rows: np.ndarray, q: int, seq: int, clock: tuple) -> np.ndarray:
        """rows.size x r.cols elements: row i starts at r.offset + rows[i] * r.stride."""
        cells = r.offset + rows[:, None] * r.stride + np.arange(r.cols)[None, :]
        if not self.readonly:
            name = f"DRAM {self.name} (gathered rows)"
            if not self.written[cells].all():
                raise Fault(f"reads {name}, which was never (fully) written")
            if self.races:
                what = "reads {} while another queue writes it unordered"
                self.check(self.wseq[:, cells], clock, what, name)
                self.rseq[q, cells] = seq
        return self.values[cells]

    def write(self, r: DramRef, values: np.ndarray, q: int, seq: int, clock: tuple) -> None:
        if self.readonly:
            raise Fault(f"stores into input buffer '{self.name}', which is read-only")
        typed, tracked = self._views(r)
        self.on_write(tracked, q, seq, clock, f"DRAM {self.name}[{r.offset}:{r.end}]")
        typed[...] = from_storage(to_storage(values, self.dtype), self.dtype)
