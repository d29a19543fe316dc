"""A normalization in the epilogue of a matrix product (eqsat/ops/norm_matmul.py):
matmul_bias_add_layernorm, ONNX Runtime's SkipLayerNormalization inside the GEMM.

The kernel is the GEMM of the inner product (matmul_bias_add: backend/lower_contract.py)
at a tile whose N loop has one step, so that each output tile holds whole rows. Its
`OutWriter` carries a `NormEpilogue`: on the vector queue, beside the array's next
products, the epilogue expression (bias, residual) writes into an f32 sum tile
instead of the output slot (the fused body is computed in f32), then the vector unit
runs the row program of eqsat/row_plan.py (the instructions the standalone layernorm
kernel runs, so results match it) from the sum tile into the output slot, in row
chunks, each stored while the next is normalized (eqsat/norm_epilogue.py row_chunks).
The last K step of the last output tile runs in the row pieces `plan` says
(eqsat/norm_epilogue.py tail_plan), each piece normalized while the array multiplies
the next. The parameter rows are loaded once, after the first product's operands.
Planned (and priced) by eqsat/norm_epilogue.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eqsat.costs import op_cost
from eqsat.ir.graph import Node
from eqsat.norm_epilogue import (
    NORM_EPILOGUE,
    NormTail,
    epilogue_sram_bytes,
    row_chunks,
    whole_rows_apply,
)
from eqsat.row_plan import RowTiles, row_program
from hwsim.dtypes import ITEMSIZE
from hwsim.isa import Instr, Tile

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .errors import BackendError
from .lower_contract import lower_fused
from .operands import inner_node, norm_params, row_operand
from .rowwise import emit_rows
from .space import Operand, dram
from .views import Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


@dataclass
class NormEpilogue:
    """The row program an output tile runs after its epilogue expression: its kind,
    its parameter rows (1-D views of N elements) by name, and epsilon."""

    kind: str
    params: dict[str, View]
    eps: float
    rows: dict[str, Tile] = field(default_factory=dict)
    plan: NormTail | None = None  # the last tile's row pieces (set with the tile)
    param_tokens: list[str] = field(default_factory=list)  # loads not yet waited for
    loaded: bool = False  # the parameter rows' loads were issued

    def sram_bytes(self, rows: int, n: int, dtype: str) -> int:
        return epilogue_sram_bytes(rows, n, dtype, self.kind)

    def alloc(self, kb: KernelBuilder, rows: int, cols: int, dtype: str) -> None:
        self.n, self.dtype = cols, dtype
        self.rows = {name: kb.alloc(1, cols, v.dtype) for name, v in self.params.items()}
        self.sum = kb.alloc(rows, cols, "f32")  # the fused body computes in f32
        self.t, self.u = kb.alloc(rows, cols, "f32"), kb.alloc(rows, cols, "f32")
        self.c1, self.c2 = kb.alloc(rows, 1, "f32"), kb.alloc(rows, 1, "f32")

    def tail(self, hw, n: int, dtype: str, out_slots: int) -> NormTail:
        """The queue model of this epilogue on rows of n in `dtype`, `out_slots`
        output slots (eqsat/norm_epilogue.py), no pieces yet."""
        isz = tuple(ITEMSIZE[v.dtype] for v in self.params.values())
        return NormTail(hw, self.kind, n, dtype, isz, out_slots)

    def pieces(self, rows: int) -> tuple[int, ...]:
        """The row pieces of the last K step of the last output tile (of `rows`)."""
        return self.plan.pieces(rows) if self.plan is not None else (rows,)

    def load_params(self, pipe: Pipeline) -> None:
        """Load the parameter rows once; the first epilogue instruction waits for them."""
        if self.loaded or not self.params:
            return
        self.loaded = True
        pairs = [
            (
                self.rows[name],
                dram(Operand(v.buf, v.offset, v.strides), v.offset, 1, self.n, self.n),
            )
            for name, v in self.params.items()
        ]
        _, self.param_tokens = pipe.load("c", pairs, pend=False)

    def take_param_tokens(self) -> list[str]:
        tokens, self.param_tokens = self.param_tokens, []
        return tokens

    def target(self, r0: int, rn: int, cn: int) -> Tile:
        """Where the epilogue expression of rows [r0, r0 + rn) writes: the sum tile."""
        if cn != self.n:
            raise BackendError(f"a normalized output tile needs whole rows ({self.n}), got {cn}")
        return offset_tile(self.sum, r0, 0, rn, cn)

    def chunks(self, kb: KernelBuilder, rows: int) -> list[tuple[int, int]]:
        """(first row, rows) of the chunks the tile is normalized and stored in."""
        return row_chunks(kb.hw, self.kind, rows, self.n, self.dtype)

    def program(self, r0: int, rn: int, cn: int, out: Tile) -> list[Instr]:
        """The row program of rows [r0, r0 + rn) of the sum tile into `out` (those
        rows of the output slot); the scratch is reused from its first row."""
        tiles = RowTiles(
            offset_tile(self.sum, r0, 0, rn, cn),
            sub(self.t, rn, cn),
            sub(self.u, rn, cn),
            sub(self.c1, rn, 1),
            sub(self.c2, rn, 1),
            out,
            self.rows,
        )
        body, finish = row_program(self.kind, tiles, self.eps)
        return [*body, *finish]


def lower_norm_epilogue(c: Compiler, i: int, node: Node) -> Value:
    """The inner product's lowering with the norm in its output writer."""
    kind, inner, count = NORM_EPILOGUE[node.op]
    n = node.type.shape[-1]
    params = norm_params(c, i, node, count, n)
    norm = NormEpilogue(kind, params, float(node.attr("eps")))  # type: ignore[arg-type]
    product = inner_node(node, inner, count)
    in_types = [c.graph.nodes[j].type for j in node.inputs]
    cost = op_cost(c.hw, node.op, in_types, node.type, node.attr_dict)
    if whole_rows_apply(in_types, node.type) and cost is not None and cost.feasible:
        return lower_fused(c, i, product, norm=norm)
    # the product's result is broadcast by its epilogue, or no tile of whole rows fits
    # this machine (priced unrunnable, so extraction does not choose it): the product
    # with its epilogue, then the norm's own kernel
    total = c.as_view(lower_fused(c, i, product), node.type.shape, c.label(i))
    total = row_operand(c, total, node.type.shape, c.label(i), i)
    out = c.new_buffer(node.type.dtype.value, node.type.shape, c.label(i) + ".norm")
    rows = {**params, "eps": norm.eps}
    c.add_kernel(
        c.kernel_name(i, ".norm"),
        i,
        "main",
        lambda kb: emit_rows(kb, total, out, kind, rows),
        [total, *params.values()],
        [out],
    )
    return out
