"""A normalization in the prologue of a matrix product (eqsat/ops/norm_matmul.py):
layernorm_matmul*, rmsnorm_matmul.

The kernel is the GEMM of the inner product (matmul, matmul_bias, matmul_bias_gelu:
backend/lower_contract.py) at a tile whose K loop has one step, with a `NormLoader`
for A: each A panel (whole rows of x) is loaded, the vector unit runs the row program
of eqsat/row_plan.py on it (the instructions the standalone layernorm/rmsnorm kernel
runs, so results match it), and the normalized panel is the A tile of every product
of that panel. The parameter rows are loaded once, with the first panel. Planned (and
priced) by eqsat/norm_prologue.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqsat.ir.graph import Node
from eqsat.norm_prologue import NORM_MATMUL, prologue_sram_bytes
from eqsat.ops import REGISTRY
from eqsat.row_plan import RowTiles, row_program
from hwsim.isa import Instr, Tile

from .compiler import Compiler
from .emit import KernelBuilder, sub
from .errors import BackendError
from .space import Operand, dram
from .views import Value, View


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


def lower_norm_matmul(c: Compiler, i: int, node: Node) -> Value:
    """The inner product's lowering with the norm in its A loader."""
    from .lower_contract import lower_contraction, lower_fused
    from .lowering import _row_operand

    kind, inner, count = NORM_MATMUL[node.op]
    k = c.graph.nodes[node.inputs[0]].type.shape[-1]
    names = [n for n in node.opdef.operands[count:]]
    params = {
        name: _row_operand(c, c.value(j), (k,), f"{c.label(i)}.{name}", i)
        for name, j in zip(names, node.inputs[count:], strict=True)
    }
    prologue = NormPrologue(kind, params, float(node.attr("eps")))  # type: ignore[arg-type]
    inner_attrs = {a.name for a in REGISTRY[inner].attrs}
    attrs = tuple((key, v) for key, v in node.attrs if key in inner_attrs)
    inner_node = Node(inner, node.inputs[:count], attrs, node.type, node.name)
    if inner == "matmul":
        return lower_contraction(c, i, inner_node, prologue)
    return lower_fused(c, i, inner_node, prologue)
