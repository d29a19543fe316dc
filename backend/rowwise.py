"""Kernels that work on whole rows: reductions over trailing axes, softmax, layernorm,
rmsnorm.

The row is the last axis of the input view (the compiler permutes the reduced or
normalized axes last and makes them contiguous first). Tiles are rows x cols blocks;
a reduction may split long rows into column chunks and combine the partial results,
softmax and layernorm keep a whole row per tile (its working set must fit SRAM).
The vector program follows the reference ops (max, subtract, exp, sum,
divide; mean, center, variance, rsqrt, scale, shift; square, mean, rsqrt, scale) so
results match in f32.
"""

from __future__ import annotations

import numpy as np

from eqsat.ir.strides import coalesce
from eqsat.row_plan import (
    PARAMS,
    RowQuant,
    RowTiles,
    column_reduce_tiles,
    quantized_row_program,
    reduce_tiles,
    row_kernel_fits,
    rows_per_tile,
)
from hwsim.isa import Binary, Reduce, Unary

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .errors import BackendError
from .expr import compute_dtype
from .space import Operand, Space, dram
from .views import View


def rows_space(x: View, out_strides: tuple[int, ...]) -> tuple[Space, Operand, tuple]:
    """Space over x's shape with the last axis as columns, kept axes coalesced."""
    kept, red = x.shape[:-1], x.shape[-1]
    kshape, (kx, ko) = (
        coalesce(kept, [x.strides[:-1], out_strides[:-1]]) if kept else ((1,), [(0,), (0,)])
    )
    shape = (*kshape, red)
    space = Space(shape, len(shape) - 2, len(shape) - 1)
    return space, Operand(x.buf, x.offset, (*kx, x.strides[-1])), (*ko, out_strides[-1])


def emit_reduce(kb: KernelBuilder, x: View, out: View, op: str, mean: bool) -> None:
    """out[kept] = reduce(op) of x over its last axis (x's last stride is 1)."""
    space, xo, ostrides = rows_space(x, (*out.strides, 0))
    oop = Operand(out.buf, out.offset, ostrides)
    n = space.cols
    acc_dt = compute_dtype(x.dtype)
    tiles = reduce_tiles(kb.hw, space.rows, n, x.dtype, out.dtype)
    rt, ct = tiles.rows, tiles.cols
    if rt < 1:
        raise BackendError(f"kernel {kb.name}: a reduction tile does not fit SRAM")
    xs = kb.alloc2(rt, ct, x.dtype)
    acc, part = kb.alloc(rt, 1, acc_dt), kb.alloc(rt, 1, acc_dt)
    outs = kb.alloc2(rt, 1, out.dtype)
    pipe = Pipeline(kb, "r")
    combine = "add" if op == "sum" else "max"
    for pos in space.positions(rt, n):
        rn = pos.rows
        for c0 in range(0, n, ct):
            cn = min(ct, n - c0)
            slot = pipe.slot("x")
            index = list(pos.index)
            index[space.col] = c0
            off = xo.offset + sum(i * s for i, s in zip(index, xo.strides, strict=True))
            tile = sub(xs[slot], rn, cn)
            gen, _ = pipe.load("x", [(tile, dram(xo, off, rn, cn, xo.strides[space.row]))])
            a, p = sub(acc, rn, 1), sub(part, rn, 1)
            if c0 == 0:
                pipe.compute([Reduce(op=op, dst=a, src=tile)])
            else:
                pipe.compute([Reduce(op=op, dst=p, src=tile), Binary(op=combine, dst=a, a=a, b=p)])
            pipe.release(gen)
        pipe.begin_out()
        o = sub(outs[pipe.out_slot()], rn, 1)
        a = sub(acc, rn, 1)
        last = (
            Binary(op="div", dst=o, a=a, imm=float(n)) if mean else Unary(op="copy", dst=o, src=a)
        )
        pipe.compute([last])
        ref = dram(oop, pos.offset(oop), rn, 1, oop.strides[space.row])
        pipe.store([(ref, o)])


def emit_column_reduce(kb: KernelBuilder, x: View, out: View, op: str, mean: bool) -> None:
    """out[..., c] = reduce(op) of x[..., k, c] over k, x's last axis contiguous: a
    channels-last image summed over its pixels (the global pool of a window kernel's
    NHWC output), read as it is stored instead of copied into rows first. Each
    [kt, ct] chunk of x joins one accumulator tile elementwise; after the last, its
    rows fold pairwise (a tree of adds, or maxes) into one row, the output row."""
    *lead, k, n = x.shape
    lshape, (lx, lo) = (
        coalesce(tuple(lead), [x.strides[:-2], out.strides[:-1]]) if lead else ((1,), [(0,), (0,)])
    )
    acc_dt = compute_dtype(x.dtype)
    tiles = column_reduce_tiles(kb.hw, k, n, x.dtype, out.dtype)
    kt, ct = tiles.rows, tiles.cols
    if kt < 1:
        raise BackendError(f"kernel {kb.name}: a reduction tile does not fit SRAM")
    xs = kb.alloc2(kt, ct, x.dtype)
    acc = kb.alloc(kt, ct, acc_dt)
    outs = kb.alloc2(1, ct, out.dtype)
    xo, oo = Operand(x.buf, x.offset, x.strides), Operand(out.buf, out.offset, out.strides)
    pipe = Pipeline(kb, "r")
    combine = "add" if op == "sum" else "max"
    for index in np.ndindex(*lshape):
        xoff = x.offset + sum(i * s for i, s in zip(index, lx, strict=True))
        ooff = out.offset + sum(i * s for i, s in zip(index, lo, strict=True))
        for c0 in range(0, n, ct):
            cn = min(ct, n - c0)
            for k0 in range(0, k, kt):
                kn = min(kt, k - k0)
                tile = sub(xs[pipe.slot("x")], kn, cn)
                ref = dram(xo, xoff + k0 * x.strides[-2] + c0, kn, cn, x.strides[-2])
                gen, _ = pipe.load("x", [(tile, ref)])
                a = sub(acc, kn, cn)
                first = Unary(op="copy", dst=a, src=tile)
                pipe.compute([first if k0 == 0 else Binary(op=combine, dst=a, a=a, b=tile)])
                pipe.release(gen)
            folds, rows = [], min(kt, k)
            while rows > 1:  # the bottom half onto the top half (a middle row stays)
                half = rows // 2
                top = offset_tile(sub(acc, rows, cn), 0, 0, half, cn)
                bottom = offset_tile(sub(acc, rows, cn), rows - half, 0, half, cn)
                folds.append(Binary(op=combine, dst=top, a=top, b=bottom))
                rows -= half
            pipe.begin_out()
            o = sub(outs[pipe.out_slot()], 1, cn)
            row = sub(acc, 1, cn)
            last = (
                Binary(op="div", dst=o, a=row, imm=float(k))
                if mean
                else Unary(op="copy", dst=o, src=row)
            )
            pipe.compute([*folds, last])
            pipe.store([(dram(oo, ooff + c0 * out.strides[-1], 1, cn, cn), o)])


def emit_rows(
    kb: KernelBuilder, x: View, out: View, kind: str, params: dict, quant: RowQuant | None = None
) -> None:
    """softmax, layernorm or rmsnorm over the last axis of x into out (same shape), as
    planned in eqsat/row_plan.py (tile rows, the row program; `quant`: its int8
    edges)."""
    space, xo, ostrides = rows_space(x, out.strides)
    oop = Operand(out.buf, out.offset, ostrides)
    n = space.cols
    vectors = [k for k in PARAMS[kind] if k in params]  # rows resident in SRAM
    dtypes = {k: params[k].dtype for k in vectors}
    rt = rows_per_tile(kb.hw, space.rows, n, x.dtype, out.dtype, dtypes)
    if rt < 1 or not row_kernel_fits(kb.hw, kind, n, x.dtype, out.dtype, dtypes):
        raise BackendError(
            f"kernel {kb.name}: one row of {n} elements does not fit the SRAM of {kb.hw.name}"
        )
    pipe = Pipeline(kb, "n")
    rows = {}
    if vectors:
        pairs = []
        for key in vectors:
            v: View = params[key]
            t = kb.alloc(1, n, v.dtype)
            rows[key] = t
            pairs.append((t, dram(Operand(v.buf, v.offset, v.strides), v.offset, 1, n, n)))
        pipe.load("c", pairs)
    xs = kb.alloc2(rt, n, x.dtype)
    t, u = kb.alloc(rt, n, "f32"), kb.alloc(rt, n, "f32")
    c1, c2 = kb.alloc(rt, 1, "f32"), kb.alloc(rt, 1, "f32")
    outs = kb.alloc2(rt, n, out.dtype)
    for pos in space.positions(rt, n):
        rn = pos.rows
        slot = pipe.slot("x")
        xt = sub(xs[slot], rn, n)
        gen, _ = pipe.load("x", [(xt, dram(xo, pos.offset(xo), rn, n, xo.strides[space.row]))])
        o = sub(outs[pipe.out_slot()], rn, n)
        tiles = RowTiles(xt, sub(t, rn, n), sub(u, rn, n), sub(c1, rn, 1), sub(c2, rn, 1), o, rows)
        body, finish = quantized_row_program(kind, tiles, float(params.get("eps", 0.0)), quant)
        pipe.compute(body)
        pipe.release(gen)
        pipe.begin_out()
        pipe.compute(finish)
        pipe.store([(dram(oop, pos.offset(oop), rn, n, oop.strides[space.row]), o)])
