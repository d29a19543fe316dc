"""Per-instruction cycle formulas, shared by the simulator and the analytic cost model.

Keeping them in one place is what lets the cost model predict the simulator: the model
sums these same formulas over the instructions a kernel would issue. With R x C the
array, L the vector lanes, I the issue overhead, B the DRAM bytes per cycle:

    DMA (load/store of n bytes)   occupies its queue  I + ceil(n / B)
                                  (loaddq: n = the packed weight bytes it reads)
                                  and the DRAM channel ceil(n / B); its data is
                                  usable dram_latency cycles after the transfer.
    gather of r rows of n bytes   I + r * ceil(n / B): each row is its own burst
    matmul  A[m,k] @ B[k,n]       I + folds * max(m * p, R) + R + C
        folds = ceil(k / R) * ceil(n / C)   (K and N padded up to the array)
        p     = R*C // macs_per_cycle[dtype] (cycles per streamed row of A)
        Each fold preloads an R x C block of B (R cycles, hidden behind the previous
        fold's streaming when m*p >= R) and streams m rows of A; the pipeline fills
        and drains once per instruction (R + C).
    vector op on e elements       I + ceil(e * passes(op) / L)   (select: op "select";
                                  fma, a fused multiply-add, one pass like add)
    row reduction of r x c        I + ceil(r*c / L) + ceil(log2(L))  (lane tree)
    custom.NAME                   the cost its hardware file declares (hwsim/custom.py)
    kernel launch                 launch_cycles
"""

from __future__ import annotations

import functools
import math

from .hardware import Hardware
from .isa import (
    Binary,
    Custom,
    Fma,
    Gather,
    Instr,
    Kernel,
    Load,
    LoadDq,
    Matmul,
    Move,
    Reduce,
    Requantize,
    Select,
    Store,
    Transpose,
    Unary,
)

# Lane passes per element: cheap ALU ops take one, transcendental ones several
# (a short polynomial/Newton sequence on the vector unit).
OP_PASSES: dict[str, int] = {
    "copy": 1,
    "neg": 1,
    "relu": 1,
    "scale": 1,
    "add": 1,
    "sub": 1,
    "mul": 1,
    "max": 1,
    "min": 1,
    "sum": 1,
    "div": 4,
    "reciprocal": 4,
    "sqrt": 4,
    "rsqrt": 4,
    "exp": 4,
    "tanh": 4,
    "sigmoid": 4,
    "gelu": 6,
    # comparisons, logic, selection and rounding are one ALU pass; log/sin/cos/erf a
    # polynomial like exp; exact gelu is erf's plus the products; pow is exp(b * log a)
    # (integers: repeated squaring, priced the same)
    "abs": 1,
    "floor": 1,
    "ceil": 1,
    "trunc": 1,
    "not": 1,
    "isnan": 1,
    "eq": 1,
    "lt": 1,
    "le": 1,
    "gt": 1,
    "ge": 1,
    "and": 1,
    "or": 1,
    "xor": 1,
    "select": 1,
    "fma": 1,  # one rounding, one pass: the multiply-add units
    "log": 4,
    "sin": 4,
    "cos": 4,
    "erf": 4,
    "gelu_erf": 6,
    "pow": 9,
    "transpose": 1,
    "move": 1,
    "requantize": 2,
}


def dma_transfer_cycles(hw: Hardware, nbytes: int) -> int:
    """Cycles the DRAM channel is busy moving `nbytes` (at least one)."""
    return max(1, math.ceil(nbytes / hw.dram_bytes_per_cycle))


def dma_cycles(hw: Hardware, nbytes: int) -> int:
    """Cycles a load/store occupies its queue (latency comes on top, pipelined)."""
    return hw.issue_cycles + dma_transfer_cycles(hw, nbytes)


def gather_cycles(hw: Hardware, rows: int, row_bytes: int) -> int:
    """Cycles an indexed DMA of `rows` rows of `row_bytes` each occupies its queue and
    the DRAM channel: every row is a separate burst, rounded up to whole cycles."""
    return hw.issue_cycles + rows * dma_transfer_cycles(hw, row_bytes)


def matmul_folds(hw: Hardware, n: int, k: int) -> int:
    """How many R x C blocks of B an (m,k)@(k,n) product streams through the array."""
    return math.ceil(k / hw.array_rows) * math.ceil(n / hw.array_cols)


def matmul_cycles(hw: Hardware, dtype: str, m: int, n: int, k: int) -> int:
    """Cycles of one matmul instruction A[m,k] @ B[k,n] on the systolic array."""
    stream = max(m * hw.passes(dtype), hw.array_rows)
    return hw.issue_cycles + matmul_folds(hw, n, k) * stream + hw.array_rows + hw.array_cols


def gemv_cycles(hw: Hardware, n: int, k: int) -> int:
    """Cycles of a matrix-vector step x[1,k] @ B[k,n] on the vector unit that sums its
    products into the accumulator row itself (backend/gemm.py gemv_step, attention's
    one-query products): gemv_instruction_cycles."""
    return sum(gemv_instruction_cycles(hw, n, k))


def gemv_instruction_cycles(hw: Hardware, n: int, k: int) -> list[int]:
    """The cycles of each instruction of a GEMV step (gemv_cycles), in order: its
    products into h = gemv_rows(hw, n, k) partial-sum rows, then their fold."""
    h = gemv_rows(hw, n, k)
    return gemv_product_cycles(hw, n, k, h) + gemv_fold_cycles(hw, n, h)


def gemv_blocks(k: int, h: int) -> list[tuple[int, int]]:
    """(first row, rows) of the blocks of B's k rows a GEMV step with h partial-sum
    rows multiplies in, one instruction each (the last block may be shorter)."""
    return [(r, min(h, k - r)) for r in range(0, k, h)]


def gemv_product_cycles(hw: Hardware, n: int, k: int, h: int) -> list[int]:
    """The products of x[1,k] @ B[k,n] into h rows of partial sums P: one instruction
    per block of h rows of B, P = B[block] * x[block] (x read as a column), or fused
    into what P holds, P += B[block] * x[block] (an fma; both one pass)."""
    return [vector_cycles(hw, rows * n, "fma") for _, rows in gemv_blocks(k, h)]


def gemv_fold_cycles(hw: Hardware, n: int, h: int) -> list[int]:
    """P's h rows summed into one by a tree of in-place adds (halves), then that row
    moved or added into the accumulator row (one pass either way)."""
    out, rows = [], h
    while rows > 1:
        half = rows // 2
        out.append(vector_cycles(hw, half * n, "add"))
        rows -= half
    return [*out, vector_cycles(hw, n, "add")]


@functools.lru_cache(maxsize=1 << 14)
def gemv_rows(hw: Hardware, n: int, k: int, steps: int = 1) -> int:
    """The partial-sum rows h (a power of two, at most k) that make `steps` GEMV steps
    of n x k whose partial sums are folded once cheapest: few rows issue many short
    instructions, many rows a long fold."""
    best, h = None, 1
    while h <= max(1, k):
        cost = steps * sum(gemv_product_cycles(hw, n, k, h)) + sum(gemv_fold_cycles(hw, n, h))
        if best is None or cost < best[0]:
            best = (cost, h)
        h *= 2
    return best[1]  # type: ignore[index]


def gemv_kernel_rows(hw: Hardware, n: int, k: int, tn: int, tk: int) -> int:
    """The partial-sum rows of a GEMM kernel's GEMV steps (n x k at tile tn x tk): its
    partial sums stay on chip across the k steps of an output tile, folded once."""
    tn, tk = min(tn, n), min(tk, k)
    return gemv_rows(hw, tn, tk, math.ceil(k / tk))


def gemv_on_vector(hw: Hardware, dtype: str, m: int, n: int, k: int) -> bool:
    """Whether a GEMM of one row (m = 1, a decode step's projections) at tile n x k runs
    its products on the vector unit: in f32 (the vector unit's own type) where that is
    faster than the array, whose weight preload (R cycles per R x C block, whatever m)
    streams fewer bytes per cycle than a wide DRAM channel delivers."""
    return m == 1 and dtype == "f32" and gemv_cycles(hw, n, k) < matmul_cycles(hw, dtype, m, n, k)


def vector_cycles(hw: Hardware, elements: int, op: str = "copy") -> int:
    """Cycles of one elementwise vector instruction over `elements` outputs."""
    return hw.issue_cycles + math.ceil(elements * OP_PASSES[op] / hw.vector_lanes)


def reduce_cycles(hw: Hardware, rows: int, cols: int) -> int:
    """Cycles of one row reduction of a rows x cols tile into rows x 1."""
    tree = math.ceil(math.log2(hw.vector_lanes)) if hw.vector_lanes > 1 else 0
    return hw.issue_cycles + math.ceil(rows * cols / hw.vector_lanes) + tree


def instruction_cost(hw: Hardware, ins: Instr) -> tuple[str, int]:
    """(unit, cycles) of one instruction: the unit is load, store, matrix, vector or launch.

    For load/store the cycles are queue occupancy; the DRAM latency comes on top.
    """
    match ins:
        case Load():
            return "load", dma_cycles(hw, ins.src.rows * ins.src.cols * ins.dst.itemsize)
        case LoadDq():  # the dequantizer keeps pace with the DMA of the packed bytes
            return "load", dma_cycles(hw, ins.src.rows * ins.src.cols)
        case Gather():
            return "load", gather_cycles(hw, ins.index.rows, ins.src.cols * ins.dst.itemsize)
        case Store():
            return "store", dma_cycles(hw, ins.dst.rows * ins.dst.cols * ins.src.itemsize)
        case Matmul():
            return "matrix", matmul_cycles(hw, ins.a.dtype, ins.a.rows, ins.b.cols, ins.a.cols)
        case Reduce():
            return "vector", reduce_cycles(hw, ins.src.rows, ins.src.cols)
        case Kernel():
            return "launch", hw.launch_cycles
        case Custom():
            return "vector", custom_cycles(hw, ins)
    return "vector", vector_cycles(hw, ins.dst.elements, vector_op(ins))  # type: ignore[attr-defined]


def custom_cycles(hw: Hardware, ins: Custom) -> int:
    """Cycles of a declared instruction: its declared cost (hwsim/custom.py)."""
    decl = hw.instruction(ins.name)
    if decl is None:
        raise ValueError(f"{hw.name} declares no instruction '{ins.name}'")
    sizes = [t.elements for t in ins.srcs]
    return decl.cycles(
        hw.vector_lanes, hw.issue_cycles, hw.launch_cycles, ins.dst.rows, ins.dst.cols, sizes
    )


def lane_work(hw: Hardware, ins: Instr) -> int:
    """Lane passes of a vector-unit instruction over its whole output (roofline work)."""
    if isinstance(ins, Custom):
        decl = hw.instruction(ins.name)
        return math.ceil(ins.dst.elements * (decl.lane_ops() if decl is not None else 1.0))
    return ins.dst.elements * OP_PASSES[vector_op(ins)]  # type: ignore[attr-defined]


def vector_op(ins: Instr) -> str:
    """The OP_PASSES entry that prices a vector-unit instruction."""
    if isinstance(ins, Unary | Binary | Reduce):
        return ins.op
    kinds = {
        Fma: "fma",
        Move: "move",
        Transpose: "transpose",
        Requantize: "requantize",
        Select: "select",
    }
    return kinds[type(ins)]
