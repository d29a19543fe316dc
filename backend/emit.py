"""Emitting one kernel: an SRAM/accumulator allocator, the instruction list, and the
double-buffering protocol (`Pipeline`) every kernel uses.

Pipeline protocol (VTA-style dependence tokens, unique per kernel):
- A *channel* is a family of tiles that the load queue fills for the compute queue
  (e.g. the A and B operands of a matmul step). Generation g of a channel lives in
  slot g % 2. Its loads signal `l<slot>`; the next compute instruction waits on them.
  When compute is done reading generation g it signals `f<slot>`, which the first
  load of generation g + 2 waits on: the load of step s+1 overlaps the compute of s.
- The output works the other way round: compute writes output slot j % 2 and signals
  `s<slot>`; the store waits on it and signals `o<slot>`, which the compute writing
  output generation j + 2 waits on, so the store of tile j overlaps compute of j + 1.
Every generation is released exactly once and every generation >= 2 waits exactly
once, so the counting semaphores pair up without look-ahead.
"""

from __future__ import annotations

import dataclasses

from eqsat.spatial_plan import ALIGN  # bytes; every tile starts on a 64-byte boundary
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware
from hwsim.isa import DramRef, Instr, Kernel, Load, Store, Tile

from .errors import BackendError


class KernelBuilder:
    """The instructions of one kernel and a bump allocator for its on-chip memory."""

    def __init__(self, hw: Hardware, name: str, tag: str) -> None:
        self.hw, self.name, self.tag = hw, name, tag
        self.instrs: list[Instr] = [Kernel(name=name)]
        self.top = {"sram": 0, "acc": 0}
        self.last_compute = -1
        self._tokens = 0
        self._fence: dict[str, str] = {}

    def alloc(self, rows: int, cols: int, dtype: str, space: str = "sram") -> Tile:
        addr = -(-self.top[space] // ALIGN) * ALIGN
        tile = Tile(space, addr, rows, cols, dtype)
        cap = self.hw.sram_bytes if space == "sram" else self.hw.acc_bytes
        if tile.end > cap:
            raise BackendError(
                f"kernel {self.name}: needs {tile.end} bytes of {space}, {self.hw.name} has {cap}"
            )
        self.top[space] = tile.end
        return tile

    def alloc2(self, rows: int, cols: int, dtype: str) -> tuple[Tile, Tile]:
        """Two slots of the same shape (double buffering)."""
        return self.alloc(rows, cols, dtype), self.alloc(rows, cols, dtype)

    def free_bytes(self, space: str = "sram") -> int:
        cap = self.hw.sram_bytes if space == "sram" else self.hw.acc_bytes
        return cap - -(-self.top[space] // ALIGN) * ALIGN

    def token(self, name: str) -> str:
        return f"{self.tag}{name}"

    def fresh(self, prefix: str) -> str:
        self._tokens += 1
        return f"{prefix}{self._tokens}"

    def fence(self) -> None:
        """Start an independent stream inside this kernel: its first load and first
        compute wait until everything so far is stored; SRAM is reused from address 0."""
        stores = [i for i, ins in enumerate(self.instrs) if isinstance(ins, Store)]
        if not stores:
            return
        tl, tc = self.token(self.fresh("fl")), self.token(self.fresh("fc"))
        ins = self.instrs[stores[-1]]
        self.instrs[stores[-1]] = dataclasses.replace(ins, signal=(*ins.signal, tl, tc))
        self._fence = {"load": tl, "compute": tc}
        self.top = {"sram": 0, "acc": 0}

    def emit(self, ins: Instr) -> None:
        tok = self._fence.pop(ins.queue, None)
        if tok is not None:
            ins = dataclasses.replace(ins, wait=(*ins.wait, tok))
        self.instrs.append(ins)
        if ins.queue == "compute":
            self.last_compute = len(self.instrs) - 1

    def signal_last_compute(self, token: str) -> None:
        if self.last_compute < 0:
            raise AssertionError("no compute instruction to signal from")
        self.signal_at(self.last_compute, token)

    def signal_at(self, index: int, token: str) -> None:
        """Instruction `index` also signals `token` when it completes."""
        ins = self.instrs[index]
        self.instrs[index] = dataclasses.replace(ins, signal=(*ins.signal, token))


def sub(tile: Tile, rows: int, cols: int) -> Tile:
    """The dense rows x cols tile at the same address (an edge tile of a larger slot)."""
    return Tile(tile.space, tile.addr, rows, cols, tile.dtype)


def offset_tile(tile: Tile, row: int, col: int, rows: int, cols: int) -> Tile:
    """rows x cols inside `tile` from (row, col), keeping the parent's row stride."""
    addr = tile.addr + (row * tile.row_stride + col) * ITEMSIZE[tile.dtype]
    return Tile(tile.space, addr, rows, cols, tile.dtype, tile.row_stride)


class Pipeline:
    """Tokens of the double-buffered load -> compute -> store protocol (see module doc)."""

    def __init__(self, kb: KernelBuilder, tag: str = "", out_slots: int = 2) -> None:
        self.kb, self.tag, self.nout = kb, kb.fresh(tag or "p"), out_slots
        self.gens: dict[str, int] = {}
        self.pending: list[str] = []
        self.out_gen = 0

    def _tok(self, kind: str, ch: str, slot: int) -> str:
        return self.kb.token(f"{self.tag}{ch}{kind}{slot}")

    def slot(self, ch: str) -> int:
        """The slot the next generation of channel `ch` will use."""
        return self.gens.get(ch, 0) % 2

    def load(self, ch: str, pairs: list[tuple[Tile, DramRef] | Instr], pend: bool = True):
        """Load one generation of `ch`; returns (generation, tokens to wait on). A pair
        is a (tile, DRAM reference) Load, or a load-queue instruction as it is."""
        if not pairs:
            return None, []
        g = self.gens.get(ch, 0)
        self.gens[ch] = g + 1
        done = self._tok("l", ch, g % 2)
        for j, pair in enumerate(pairs):
            wait = (self._tok("f", ch, g % 2),) if j == 0 and g >= 2 else ()
            if isinstance(pair, Instr):  # a load-queue instruction of its own (LoadDq)
                self.kb.emit(dataclasses.replace(pair, wait=wait, signal=(done,)))
                continue
            tile, ref = pair
            self.kb.emit(Load(dst=tile, src=ref, wait=wait, signal=(done,)))
        tokens = [done] * len(pairs)
        if pend:
            self.pending += tokens
        return (ch, g), tokens

    def load_more(self, gen, pairs: list[tuple[Tile, DramRef]]) -> None:
        """More loads into generation `gen` of its channel, issued later (the pieces of
        a resident panel, each just before the step that reads it); the next compute
        waits for them. Pieces land in issue order, so that compute takes theirs."""
        ch, g = gen
        done = self._tok("l", ch, g % 2)
        for tile, ref in pairs:
            self.kb.emit(Load(dst=tile, src=ref, signal=(done,)))
        self.pending += [done] * len(pairs)

    def wait_for(self, tokens: list[str]) -> None:
        self.pending += tokens

    def compute(self, instrs: list[Instr]) -> None:
        if not instrs:
            return
        first = instrs[0]
        if self.pending:
            first = dataclasses.replace(first, wait=(*first.wait, *self.pending))
            self.pending = []
        self.kb.emit(first)
        for ins in instrs[1:]:
            self.kb.emit(ins)

    def release(self, gen, at: int | None = None) -> None:
        """Compute is done with this generation (signal from the last compute so far, or
        from instruction `at`: a last reader on the vector queue)."""
        if gen is not None:
            ch, g = gen
            tok = self._tok("f", ch, g % 2)
            if at is None:
                self.kb.signal_last_compute(tok)
            else:
                self.kb.signal_at(at, tok)

    def out_slot(self) -> int:
        return self.out_gen % self.nout

    def begin_out(self, pend: bool = True) -> list[str]:
        """The next compute instruction writes the output slot: wait until it was stored
        (with one output slot, the store of the previous tile still overlaps the next
        tile's main loop; only its epilogue waits). pend=False: return the token for the
        caller to wait on (a writer on the vector queue) instead."""
        if self.out_gen < self.nout:
            return []
        tok = self._tok("o", "", self.out_gen % self.nout)
        if pend:
            self.pending.append(tok)
        return [tok]

    def store(self, pairs: list[tuple[DramRef, Tile]], at: int | None = None) -> None:
        """Store the output slot after the last compute so far (or instruction `at`)."""
        slot = self.out_gen % self.nout
        ready, free = self._tok("s", "", slot), self._tok("o", "", slot)
        if at is None:
            self.kb.signal_last_compute(ready)
        else:
            self.kb.signal_at(at, ready)
        for j, (ref, tile) in enumerate(pairs):
            wait = (ready,) if j == 0 else ()
            signal = (free,) if j == len(pairs) - 1 else ()
            self.kb.emit(Store(dst=ref, src=tile, wait=wait, signal=signal))
        self.out_gen += 1
