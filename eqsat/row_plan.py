"""How the backend runs a row kernel (softmax, layernorm, rmsnorm), decided once for the
backend (backend/rowwise.py) and the cost model.

A tile holds `rows` whole rows of the normalized (last) axis: the kernel loads it,
runs the row program below on the vector unit, writes the output slot and stores it,
double buffered (backend/emit.py Pipeline). The parameter rows (gamma, beta) are
loaded once before the first tile and stay resident. The cost model prices exactly
these instructions with hwsim's timing formulas, stepping the tiles through the
simulator's queues (eqsat/spatial_plan.py Queues), so the two cannot drift: the
instructions the backend emits are the ones built here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from eqsat.spatial_plan import (
    Repeat,
    Step,
    StreamPlan,
    largest_fitting,
    plans_cost,
    tiles_end,
)
from hwsim import timing
from hwsim.costmodel import KernelCost, tile_splits
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware
from hwsim.isa import Binary, Instr, Reduce, Tile, Unary

ROW_KINDS = ("softmax", "layernorm", "rmsnorm")
PARAMS = {"softmax": (), "layernorm": ("gamma", "beta"), "rmsnorm": ("gamma",)}
SLACK = 1024  # bytes of SRAM kept free for the alignment of the kernel's tiles


@dataclass(frozen=True)
class RowTiles:
    """The SRAM tiles one step of a row kernel works on (rn rows of n): the loaded
    input x, f32 scratch t and u, per-row f32 columns c1 and c2, the output slot, and
    the resident parameter rows (1 x n) by name."""

    x: Tile
    t: Tile
    u: Tile
    c1: Tile
    c2: Tile
    out: Tile
    params: dict[str, Tile]


@dataclass(frozen=True)
class RowQuant:
    """Int8 edges of a row kernel (ONNX Runtime's quantizer leaves softmax and layernorm
    in float between a DequantizeLinear and QuantizeLinears): `pre`, the (scale, zero)
    that dequantizes the i8 input; `post`, the steps applied to the f32 row result in
    order, each ("quantize", scale, zero) or ("dequantize", scale, zero), the last a
    quantize (the i8 output). Each step is the instructions of the standalone
    dequantize/quantize kernel (backend/ewise_ops.py), in the same order."""

    pre: tuple[float, int] | None = None
    post: tuple[tuple[str, float, int], ...] = ()


def _f32(x: float) -> float:
    return float(np.float32(x))


def _dequantized(dst: Tile, src: Tile, scale: float, zero: int) -> list[Instr]:
    """dst (f32) = (f32(src) - zero) * scale."""
    out: list[Instr] = [Unary(op="copy", dst=dst, src=src)]
    if zero:
        out.append(Binary(op="sub", dst=dst, a=dst, imm=_f32(zero)))
    return [*out, Binary(op="mul", dst=dst, a=dst, imm=_f32(scale))]


def _quantized(o: Tile, t: Tile, u: Tile, scale: float, zero: int) -> list[Instr]:
    """o (i8) = saturate(round(t / scale) + zero): the i32 sum in u's SRAM."""
    ui = replace(u, dtype="i32")
    out: list[Instr] = [
        Binary(op="div", dst=t, a=t, imm=_f32(scale)),
        Unary(op="copy", dst=ui, src=t),
    ]
    if zero:
        out.append(Binary(op="add", dst=ui, a=ui, imm=float(zero)))
    return [*out, Unary(op="copy", dst=o, src=ui)]


def quantized_row_program(
    kind: str, tiles: RowTiles, eps: float, quant: RowQuant | None
) -> tuple[list[Instr], list[Instr]]:
    """row_program with the int8 edges of `quant`: the input dequantized into the
    scratch tile u (softmax and layernorm read x only before they write u), the result
    left in t and carried through the steps of quant.post into the output slot."""
    if quant is None:
        return row_program(kind, tiles, eps)
    if kind not in ("softmax", "layernorm"):
        raise ValueError(f"row kernel {kind!r} takes no int8 prologue")
    pre: list[Instr] = []
    if quant.pre is not None:
        pre = _dequantized(tiles.u, tiles.x, *quant.pre)
        tiles = replace(tiles, x=tiles.u)
    body, finish = row_program(kind, tiles, eps)
    if not quant.post:
        return pre + body, finish
    t, o = tiles.t, tiles.out
    finish = [replace(finish[-1], dst=t)]
    for k, (step, scale, zero) in enumerate(quant.post):
        if step == "quantize":
            finish += _quantized(o, t, tiles.u, scale, zero)
            if k + 1 < len(quant.post):  # the saturated i8 value goes on in f32
                finish.append(Unary(op="copy", dst=t, src=o))
        else:
            finish += _dequantized(t, t, scale, zero)[1:]  # t holds the i8 value in f32
    return pre + body, finish


def row_program(kind: str, tiles: RowTiles, eps: float) -> tuple[list[Instr], list[Instr]]:
    """(body, finish) of one tile: the body reads x into the scratch tiles; finish
    writes the output slot (it waits for that slot to be free). The program follows the
    reference ops (max, subtract, exp, sum, divide; mean, center, variance, rsqrt,
    scale, shift; square, mean, rsqrt, scale) so results match in f32; layernorm
    multiplies by each row's reciprocal deviation, as ONNX Runtime's and PyTorch's
    kernels do, rather than dividing every element (a divide is four vector passes)."""
    x, t, u, a, b, o = tiles.x, tiles.t, tiles.u, tiles.c1, tiles.c2, tiles.out
    n = x.cols
    p = tiles.params
    if kind == "softmax":
        body: list[Instr] = [
            Reduce(op="max", dst=a, src=x),
            Binary(op="sub", dst=t, a=x, b=a, bcast="col"),
            Unary(op="exp", dst=t, src=t),
            Reduce(op="sum", dst=b, src=t),
        ]
        return body, [Binary(op="div", dst=o, a=t, b=b, bcast="col")]
    if kind == "rmsnorm":
        body = [
            Binary(op="mul", dst=u, a=x, b=x),
            Reduce(op="sum", dst=a, src=u),
            Binary(op="div", dst=a, a=a, imm=float(n)),
            Binary(op="add", dst=a, a=a, imm=float(eps)),
            Unary(op="rsqrt", dst=a, src=a),
            Binary(op="mul", dst=t, a=x, b=a, bcast="col"),
        ]
        return body, [Binary(op="mul", dst=o, a=t, b=p["gamma"], bcast="row")]
    if kind == "layernorm":
        body = [
            Reduce(op="sum", dst=a, src=x),
            Binary(op="div", dst=a, a=a, imm=float(n)),
            Binary(op="sub", dst=t, a=x, b=a, bcast="col"),
            Binary(op="mul", dst=u, a=t, b=t),
            Reduce(op="sum", dst=b, src=u),
            Binary(op="div", dst=b, a=b, imm=float(n)),
            Binary(op="add", dst=b, a=b, imm=float(eps)),
            Unary(op="rsqrt", dst=b, src=b),  # one reciprocal per row, then a product
            Binary(op="mul", dst=t, a=t, b=b, bcast="col"),
            Binary(op="mul", dst=t, a=t, b=p["gamma"], bcast="row"),
        ]
        return body, [Binary(op="add", dst=o, a=t, b=p["beta"], bcast="row")]
    raise ValueError(f"unknown row kernel {kind!r}; use one of {', '.join(ROW_KINDS)}")


def row_tiles(
    rt: int, n: int, x_dtype: str, out_dtype: str, param_dtypes: dict[str, str]
) -> list[tuple[int, int, int]]:
    """The SRAM tiles (rows, cols, item size) emit_rows allocates, in order: the
    parameter rows, two input slots, the f32 scratch t and u, the per-row columns c1
    and c2, two output slots."""
    isz, osz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype]
    params = [(1, n, ITEMSIZE[d]) for d in param_dtypes.values()]
    return [
        *params,
        *[(rt, n, isz)] * 2,
        *[(rt, n, 4)] * 2,
        *[(rt, 1, 4)] * 2,
        *[(rt, n, osz)] * 2,
    ]


def rows_per_tile(
    hw: Hardware,
    rows: int,
    n: int,
    x_dtype: str,
    out_dtype: str,
    param_dtypes: dict[str, str] | None = None,
) -> int:
    """Rows per tile: as many as fit SRAM with every tile the kernel allocates, and no
    more than a streaming kernel's chunk (a quarter of SRAM for one tile's input and
    output); 0 when not even one row fits."""
    params = param_dtypes or {}
    chunk = max(1, hw.sram_bytes // 4 // max(1, n * (ITEMSIZE[x_dtype] + ITEMSIZE[out_dtype])))

    def fits(rt: int) -> bool:
        return tiles_end(row_tiles(rt, n, x_dtype, out_dtype, params)) <= hw.sram_bytes

    return largest_fitting(max(1, min(rows, chunk)), fits)


def row_kernel_fits(
    hw: Hardware, kind: str, n: int, x_dtype: str, out_dtype: str, param_dtypes: dict[str, str]
) -> bool:
    """Can the backend run this row kernel at all (one row and the parameters in SRAM)?"""
    params = {k: param_dtypes[k] for k in PARAMS[kind]}
    return tiles_end(row_tiles(1, n, x_dtype, out_dtype, params)) <= hw.sram_bytes


def _tiles(rn: int, n: int, x_dtype: str, out_dtype: str, params: dict[str, str]) -> RowTiles:
    """Placeholder tiles of the step's shapes (addresses do not change timings)."""

    def tile(rows: int, cols: int, dtype: str) -> Tile:
        return Tile("sram", 0, rows, cols, dtype)

    return RowTiles(
        x=tile(rn, n, x_dtype),
        t=tile(rn, n, "f32"),
        u=tile(rn, n, "f32"),
        c1=tile(rn, 1, "f32"),
        c2=tile(rn, 1, "f32"),
        out=tile(rn, n, out_dtype),
        params={k: tile(1, n, d) for k, d in params.items()},
    )


def _step(hw: Hardware, load: int, compute: int, store: int) -> Step:
    """One tile as the queues see it: one load of `load` bytes, `compute` cycles, a
    store of `store` bytes (0: the tile stores nothing)."""
    return Step(
        (timing.dma_cycles(hw, load),),
        compute,
        timing.dma_cycles(hw, store) if store else 0,
        timing.dma_transfer_cycles(hw, load)
        + (timing.dma_transfer_cycles(hw, store) if store else 0),
        load + store,
    )


def _compute(hw: Hardware, instrs: list[Instr]) -> int:
    return sum(timing.instruction_cost(hw, ins)[1] for ins in instrs)


def row_plan(
    hw: Hardware,
    kind: str,
    rows: int,
    n: int,
    x_dtype: str,
    out_dtype: str,
    param_dtypes: dict[str, str],
    quant: RowQuant | None = None,
) -> StreamPlan:
    """The row kernel's steps in the order the backend emits them, with the parameter
    load as the prologue; `quant`: its int8 edges (quantized_row_program)."""
    params = {k: param_dtypes[k] for k in PARAMS[kind]}
    rt = max(1, rows_per_tile(hw, rows, n, x_dtype, out_dtype, params))
    isz, osz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype]

    def step(rn: int) -> Step:
        tiles = _tiles(rn, n, x_dtype, out_dtype, params)
        body, finish = quantized_row_program(kind, tiles, 0.0, quant)
        return _step(hw, rn * n * isz, _compute(hw, body + finish), rn * n * osz)

    order = Repeat(1, tuple(Repeat(c, (step(s),)) for s, c in tile_splits(rows, rt)))
    loads = [n * ITEMSIZE[d] for d in params.values()]
    prologue = (sum(timing.dma_cycles(hw, b) for b in loads), 0) if loads else None
    fits = row_kernel_fits(hw, kind, n, x_dtype, out_dtype, params)
    return StreamPlan((rt, n), order, prologue, fits)


def row_cost(
    hw: Hardware,
    kind: str,
    rows: int,
    n: int,
    x_dtype: str,
    out_dtype: str,
    param_dtypes: dict[str, str],
    quant: RowQuant | None = None,
) -> KernelCost:
    """The row kernel's cycles: the launch and its steps through the simulator's queues
    (the parameter rows loaded once besides)."""
    plan = row_plan(hw, kind, rows, n, x_dtype, out_dtype, param_dtypes, quant)
    params = sum(n * ITEMSIZE[param_dtypes[k]] for k in PARAMS[kind])
    return plans_cost(hw, [plan], params)


# ----------------------------------------------------------------- reductions
# reduce_sum/max/mean over the last axis of a [rows, n] view (backend/rowwise.py
# emit_reduce): tiles of `rows` rows by `cols` columns; a row longer than a quarter of
# SRAM is cut into column chunks whose partial results are combined; after the last
# chunk the mean divides (else a copy) into the output slot, which is stored.


@dataclass(frozen=True)
class ReduceTiles:
    rows: int
    cols: int


def reduce_tiles(hw: Hardware, rows: int, n: int, x_dtype: str, out_dtype: str) -> ReduceTiles:
    """Rows and columns per tile: a column chunk is at most a quarter of SRAM; as many
    rows as fit SRAM and a streaming chunk (0 rows: not even one fits)."""
    isz, osz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype]
    cols = min(n, max(1, (hw.sram_bytes // 4) // isz))
    per_row = 2 * cols * isz + 8 + 2 * osz
    fit = (hw.sram_bytes - SLACK) // per_row
    chunk = max(1, hw.sram_bytes // 4 // max(1, cols * isz + osz))
    return ReduceTiles(max(0, min(rows, fit, chunk)), cols)


def column_reduce_tiles(hw: Hardware, k: int, n: int, x_dtype: str, out_dtype: str) -> ReduceTiles:
    """Tiles [rows of k, columns of n] of a reduction over the second-last axis with the
    last contiguous (backend/rowwise.py emit_column_reduce): two input slots and the
    accumulator of one chunk, two output rows; a chunk at most a quarter of SRAM."""
    isz, osz, asz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype], 4
    cols = min(n, max(1, (hw.sram_bytes // 4) // isz))
    per_row = cols * (2 * isz + asz)
    fit = (hw.sram_bytes - SLACK - 2 * cols * osz) // per_row
    chunk = max(1, hw.sram_bytes // 4 // (cols * isz))
    return ReduceTiles(max(0, min(k, fit, chunk)), cols)


def reduce_program(rn: int, cn: int, first: bool, last: bool, mean: bool) -> list[tuple]:
    """(kind, rows, cols, op) of the vector instructions of one chunk: its reduction,
    the combine with the partial result before it, and after the last chunk the
    division of a mean (or a copy) into the output slot."""
    ops: list[tuple] = [("reduce", rn, cn, "sum")]
    if not first:
        ops.append(("vector", rn, 1, "add"))
    if last:
        ops.append(("vector", rn, 1, "div" if mean else "copy"))
    return ops


def _reduce_compute(hw: Hardware, ops: list[tuple]) -> int:
    return sum(
        timing.reduce_cycles(hw, r, c) if kind == "reduce" else timing.vector_cycles(hw, r * c, op)
        for kind, r, c, op in ops
    )


def reduce_plan(
    hw: Hardware, rows: int, n: int, x_dtype: str, out_dtype: str, mean: bool
) -> StreamPlan:
    """The reduction's chunks in the order the backend emits them: per row tile, its
    column chunks (the output stored after the last)."""
    t = reduce_tiles(hw, rows, n, x_dtype, out_dtype)
    rt = max(1, t.rows)
    isz, osz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype]

    def row_tile(rn: int) -> tuple:
        steps = []
        flat = [s for s, c in tile_splits(n, t.cols) for _ in range(c)]
        for j, cn in enumerate(flat):
            first, last = j == 0, j == len(flat) - 1
            ops = reduce_program(rn, cn, first, last, mean)
            steps.append(
                _step(hw, rn * cn * isz, _reduce_compute(hw, ops), rn * osz if last else 0)
            )
        return tuple(steps)

    order = Repeat(1, tuple(Repeat(c, row_tile(s)) for s, c in tile_splits(rows, rt)))
    return StreamPlan((rt, t.cols), order, None, t.rows > 0)


def column_reduce_plan(
    hw: Hardware, lead: int, k: int, n: int, x_dtype: str, out_dtype: str, op: str, mean: bool
) -> StreamPlan:
    """backend/rowwise.py emit_column_reduce's chunks: per leading index and column
    block, its k chunks (a copy, then one combine each into the accumulator), then
    the pairwise folds of the accumulator's rows and the output row."""
    t = column_reduce_tiles(hw, k, n, x_dtype, out_dtype)
    kt = max(1, t.rows)
    isz, osz = ITEMSIZE[x_dtype], ITEMSIZE[out_dtype]
    combine = "add" if op == "sum" else "max"

    def block(cn: int) -> tuple:
        chunks = [s for s, c in tile_splits(k, kt) for _ in range(c)]
        steps = []
        for j, kn in enumerate(chunks):
            compute = timing.vector_cycles(hw, kn * cn, "copy" if j == 0 else combine)
            if j < len(chunks) - 1:
                steps.append(_step(hw, kn * cn * isz, compute, 0))
                continue
            rows = min(kt, k)
            while rows > 1:
                half = rows // 2
                compute += timing.vector_cycles(hw, half * cn, combine)
                rows -= half
            compute += timing.vector_cycles(hw, cn, "div" if mean else "copy")
            steps.append(_step(hw, kn * cn * isz, compute, cn * osz))
        return tuple(steps)

    order = Repeat(lead, tuple(Repeat(c, block(s)) for s, c in tile_splits(n, t.cols)))
    return StreamPlan((kt, t.cols), order, None, t.rows > 0)


def reduce_cost(
    hw: Hardware, rows: int, n: int, x_dtype: str, out_dtype: str, mean: bool
) -> KernelCost:
    """The reduction kernel's cycles, as row_cost prices a row kernel."""
    return plans_cost(hw, [reduce_plan(hw, rows, n, x_dtype, out_dtype, mean)])
