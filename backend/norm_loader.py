"""The A loader of a matrix product with a normalization in its prologue
(norm_matmul.py): each A panel (whole rows of x) is loaded, the vector unit runs the
row program of eqsat/row_plan.py on it (the instructions the standalone
layernorm/rmsnorm kernel runs, so results match it), and the normalized panel is the A
tile of every product of that panel. The parameter rows are loaded once, with the
first panel. The GEMM loops (contract.emit_matmul, gated.py) wrap their A loader in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqsat.norm_prologue import prologue_sram_bytes
from eqsat.row_plan import RowTiles, row_program
from hwsim.isa import Instr, Tile

from .emit import KernelBuilder, sub
from .errors import BackendError
from .space import Operand, dram
from .views import View


@dataclass(frozen=True)
class NormPrologue:
    """What the A loader normalizes: the row program's kind, its parameter rows (1-D
    views of K elements) by name, and epsilon."""

    kind: str
    params: dict[str, View]
    eps: float

    def sram_bytes(self, rows: int, k: int, dtype: str) -> int:
        return prologue_sram_bytes(rows, k, dtype, self.kind)


class NormLoader:
    """A loader of whole rows of x (any Loader with a one-step K loop) whose tiles come
    out normalized: `ready` returns the row program and the normalized tile."""

    whole_rows = True  # its panels land whole, never in pieces (backend/gemm.py)

    def __init__(self, inner, prologue: NormPrologue) -> None:
        self.inner, self.prologue = inner, prologue
        self.dtype = inner.dtype

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        self.inner.alloc(kb, rows, cols)
        self.k = cols
        self.rows = {name: kb.alloc(1, cols, v.dtype) for name, v in self.prologue.params.items()}
        self.t, self.u = kb.alloc(rows, cols, "f32"), kb.alloc(rows, cols, "f32")
        self.c1, self.c2 = kb.alloc(rows, 1, "f32"), kb.alloc(rows, 1, "f32")
        self.out = kb.alloc(rows, cols, self.dtype)
        self.params_loaded = False

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        pairs = list(self.inner.load(slot, bidx, r0, rn, c0, cn))
        if not self.params_loaded:  # the parameter rows ride with the first panel
            self.params_loaded = True
            for name, v in self.prologue.params.items():
                op = Operand(v.buf, v.offset, v.strides)
                pairs.append((self.rows[name], dram(op, v.offset, 1, self.k, self.k)))
        return pairs

    def ready(self, slot: int, rn: int, cn: int) -> tuple[list[Instr], Tile]:
        if cn != self.k:
            raise BackendError(f"a normalized A panel needs whole rows ({self.k}), got {cn}")
        pre, x = self.inner.ready(slot, rn, cn)
        tiles = RowTiles(
            x,
            sub(self.t, rn, cn),
            sub(self.u, rn, cn),
            sub(self.c1, rn, 1),
            sub(self.c2, rn, 1),
            sub(self.out, rn, cn),
            self.rows,
        )
        body, finish = row_program(self.prologue.kind, tiles, self.prologue.eps)
        return [*pre, *body, *finish], sub(self.out, rn, cn)
