"""The tiled GEMM loop every matrix kernel (matmul, batched matmul, conv) runs.

Loop order is the cost model's canonical one (hwsim/costmodel.py; the generator in
tests/hwsim/hwsim_programs.py): output-stationary, for each batch index, each (m, n)
output tile, each k tile: load A and B tiles (double buffered), matmul-accumulate;
then the epilogue reads the accumulator, applies the fused ops on the tile, and the
tile is stored. With one k tile an A row panel stays resident across the n loop, and
with one n tile too, B is loaded once per batch index.

Operands come through loaders (how a tile of A or B is fetched: one strided DMA, an
on-chip transpose, or several DMAs for a convolution's patches); the epilogue is an
`OutWriter` (writes the tile, possibly transposed, through a tile expression).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Protocol

from hwsim import timing
from hwsim.gemm_queues import first_pieces, k_steps
from hwsim.hardware import Hardware
from hwsim.isa import Binary, Fma, Instr, Matmul, Move, Store, Tile, Transpose

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .expr import Expr, Leaf, Un
from .space import Operand, Pos, Space, dram
from .tileexpr import TileExpr


class Loader(Protocol):
    """Fetches rows [r0, r0+rn) x cols [c0, c0+cn) of one operand matrix."""

    dtype: str

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None: ...

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list: ...

    def ready(self, slot: int, rn: int, cn: int) -> tuple[list[Instr], Tile]: ...


class StridedLoader:
    """A matrix view whose columns (mode n) or rows (mode t) are contiguous in DRAM.

    Mode t loads the transposed block (cols x rows) and transposes it on chip.
    """

    def __init__(self, op: Operand, row_axis: int, col_axis: int, mode: str) -> None:
        self.op, self.ra, self.ca, self.mode = op, row_axis, col_axis, mode
        self.dtype = op.dtype

    def alloc(self, kb: KernelBuilder, rows: int, cols: int) -> None:
        shape = (rows, cols) if self.mode == "n" else (cols, rows)
        self.slots = kb.alloc2(*shape, self.dtype)
        self.tr = kb.alloc(rows, cols, self.dtype) if self.mode == "t" else None

    def _offset(self, bidx: tuple, r0: int, c0: int) -> int:
        s = self.op.strides
        nb = len(bidx)
        return (
            self.op.offset
            + sum(i * st for i, st in zip(bidx, s[:nb], strict=True))
            + (r0 * s[self.ra] + c0 * s[self.ca])
        )

    def load(self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int) -> list:
        off = self._offset(bidx, r0, c0)
        s = self.op.strides
        if self.mode == "n":
            return [(sub(self.slots[slot], rn, cn), dram(self.op, off, rn, cn, s[self.ra]))]
        return [(sub(self.slots[slot], cn, rn), dram(self.op, off, cn, rn, s[self.ca]))]

    def load_part(
        self, slot: int, bidx: tuple, r0: int, rn: int, c0: int, cn: int, width: int
    ) -> list:
        """Columns [c0, c0 + cn) of a panel `width` wide, into their place in the slot
        (mode n)."""
        panel = sub(self.slots[slot], rn, width)
        ref = dram(self.op, self._offset(bidx, r0, c0), rn, cn, self.op.strides[self.ra])
        return [(offset_tile(panel, 0, c0, rn, cn), ref)]

    def ready(self, slot: int, rn: int, cn: int) -> tuple[list[Instr], Tile]:
        if self.mode == "n":
            return [], sub(self.slots[slot], rn, cn)
        t = sub(self.tr, rn, cn)  # type: ignore[arg-type]
        return [Transpose(dst=t, src=sub(self.slots[slot], cn, rn))], t


@dataclass
class OutWriter:
    """Epilogue: out tile = expr(acc, operands...), stored into `out` over `space`.

    Leaf(0) of `expr` is the accumulator tile. With `transpose`, the output tile is the
    transposed accumulator (conv: pixels x channels -> channels x pixels).
    """

    out: Operand
    space: Space
    expr: Expr | None
    operands: list[Operand | None]
    acc_dtype: str
    transpose: bool = False
    out_slots: int = 2
    norm: object = None  # a NormEpilogue (backend/norm_epilogue.py): rows normalized

    def alloc(self, kb: KernelBuilder, tm: int, tn: int, zero: Operand | None) -> None:
        rt, ct = (tn, tm) if self.transpose else (tm, tn)
        self.kb = kb
        self.act = _move_act(self.expr)
        self.tx = None
        if self.act is None:
            self.tx = TileExpr(
                kb,
                self.space,
                self.expr,
                self.operands,  # type: ignore[arg-type]
                {j: self.acc_dtype for j, op in enumerate(self.operands) if op is None},
                self.out.dtype if self.norm is None else "f32",  # a norm reads the f32 sum
                rt,
                ct,
                zero,
            )
            if self.transpose:
                self.tacc = kb.alloc(rt, ct, self.acc_dtype)
        self.outs = [kb.alloc(rt, ct, self.out.dtype) for _ in range(self.out_slots)]
        if self.norm is not None:
            if self.tx is None or self.transpose:
                raise ValueError("a normalizing epilogue needs an epilogue expression")
            self.norm.alloc(kb, rt, ct, self.out.dtype)  # type: ignore[attr-defined]

    def prologue(self, pipe: Pipeline) -> None:
        if self.tx is not None:
            self.tx.prologue(pipe)

    def pos(self, bidx: tuple, m0: int, rm: int, n0: int, rn: int) -> Pos:
        if self.transpose:
            return Pos((*bidx, n0, m0), rn, rm)
        return Pos((*bidx, m0, n0), rm, rn)

    def loads(self, pipe: Pipeline, pos: Pos):
        if self.tx is None:
            return None, []
        loaded = pipe.load("e", self.tx.loads(pos, pipe.slot("e")), pend=False)
        if self.norm is not None:  # its parameter rows after the first tile's operands
            self.norm.load_params(pipe)  # type: ignore[attr-defined]
        return loaded

    def finish(
        self,
        pipe: Pipeline,
        pos: Pos,
        gen,
        tokens: list[str],
        acc: Tile,
        more: tuple = (),
        products: tuple[tuple[int, int], ...] = (),
    ) -> str | None:
        """The tile's epilogue and store. With a norm (`products`: (rows, index of its
        matmul) of each row piece of the last K step), on the vector queue; returns the
        token the next tile's first product waits for (the accumulator read)."""
        slot = (gen[1] % 2) if gen is not None else 0
        if self.norm is not None:
            return self._norm_rows(pipe, pos, gen, slot, tokens, acc, more, products)
        pipe.wait_for(tokens)
        pipe.begin_out()
        o = sub(self.outs[pipe.out_slot()], pos.rows, pos.cols)
        instrs: list[Instr] = []
        if self.act is not None and self.transpose:
            instrs.append(Transpose(dst=o, src=acc))
            if self.act == "relu":
                instrs.append(Move(dst=o, src=o, act="relu"))
        elif self.act is not None:
            instrs.append(Move(dst=o, src=acc, act=self.act))
        else:
            given = acc
            if self.transpose:
                given = sub(self.tacc, pos.rows, pos.cols)
                instrs.append(Transpose(dst=given, src=acc))
            given_all = {0: given, **{j + 1: t for j, t in enumerate(more)}}
            instrs += self.tx.compute(pos, slot, o, given_all)  # type: ignore[union-attr]
        pipe.compute(instrs)
        pipe.release(gen)
        ref = dram(
            self.out, pos.offset(self.out), pos.rows, pos.cols, self.out.strides[self.space.row]
        )
        pipe.store([(ref, o)])
        return None

    def _norm_rows(self, pipe, pos: Pos, gen, slot, tokens, acc, more, products) -> str:
        """Each row piece on the vector queue once its matmul is done: the expression
        into the sum tile's rows, then the row program in chunks (NormEpilogue.chunks),
        each chunk stored while the next is normalized; the last store frees the
        output slot. The last piece's expression frees the accumulator and the
        epilogue operands' slot."""
        norm, kb = self.norm, self.kb
        waits = [*tokens, *pipe.begin_out(pend=False), *norm.take_param_tokens()]  # type: ignore[attr-defined]
        o = sub(self.outs[pipe.out_slot()], pos.rows, pos.cols)
        stride = self.out.strides[self.space.row]
        base = pos.offset(self.out)
        acc_read = kb.token(kb.fresh("af"))
        r0 = 0
        for p, (rp, product) in enumerate(products):
            done = kb.token(kb.fresh("mp"))
            kb.signal_at(product, done)
            waits.append(done)
            given = {0: offset_tile(acc, r0, 0, rp, pos.cols)}
            given |= {j + 1: offset_tile(t, r0, 0, rp, pos.cols) for j, t in enumerate(more)}
            dst = norm.target(r0, rp, pos.cols)  # type: ignore[attr-defined]
            expr = self.tx.compute(pos, slot, dst, given, (r0, rp))  # type: ignore[union-attr]
            at = _vector_queue(kb, expr, waits)
            waits = []
            if p == len(products) - 1:
                kb.signal_at(at, acc_read)
                pipe.release(gen, at=at)
            parts = norm.chunks(kb, rp)  # type: ignore[attr-defined]
            for j, (c0, rc) in enumerate(parts):
                oc = offset_tile(o, r0 + c0, 0, rc, pos.cols)
                at = _vector_queue(kb, norm.program(r0 + c0, rc, pos.cols, oc), [])  # type: ignore[attr-defined]
                ref = dram(self.out, base + (r0 + c0) * stride, rc, pos.cols, stride)
                if p == len(products) - 1 and j == len(parts) - 1:
                    pipe.store([(ref, oc)], at=at)
                else:
                    token = kb.token(kb.fresh("nc"))
                    kb.signal_at(at, token)
                    kb.emit(Store(dst=ref, src=oc, wait=(token,)))
            r0 += rp
        return acc_read


def _vector_queue(kb: KernelBuilder, instrs: list[Instr], waits: list[str]) -> int:
    """Emit vector-unit instructions on the vector queue, the first waiting on
    `waits`; the index of the last."""
    if not instrs:
        raise ValueError("a vector-queue step with no instructions")
    for j, ins in enumerate(instrs):
        if not hasattr(ins, "vector_queue"):
            raise ValueError(f"{type(ins).__name__} cannot run on the vector queue")
        wait = (*ins.wait, *waits) if j == 0 else ins.wait
        kb.emit(dataclasses.replace(ins, vector_queue=True, wait=wait))
    return len(kb.instrs) - 1


def _move_act(expr: Expr | None) -> str | None:
    """The Move activation that is the whole epilogue, or None if it needs vector ops."""
    if expr is None or expr == Leaf(0):
        return "none"
    if expr == Un("relu", Leaf(0)):
        return "relu"
    return None


@dataclass(frozen=True)
class Gemm:
    batch: tuple[int, ...]
    m: int
    n: int
    k: int
    dtype: str  # matrix input dtype
    acc_dtype: str  # f32 or i32


def emit_gemm(
    kb: KernelBuilder,
    g: Gemm,
    tile: tuple[int, int, int],
    a: Loader,
    b: Loader,
    writer: OutWriter,
    zero: Operand | None,
    more_b: tuple[Loader, ...] = (),
    gemv: bool = False,
    vector_products: bool = False,
    split_first: bool = False,
) -> None:
    """`more_b`: further B operands multiplied by the same A tiles, each into its own
    accumulator, which the epilogue reads as Leaf(1), Leaf(2), ... (a gated product).
    `gemv`: a matmul's GEMM (not a convolution's), whose products of one row of A run on
    the vector unit where hwsim.timing.gemv_on_vector says so (`gemv_step`), into the
    same accumulators. `vector_products`: they run there whatever the dtype (a split
    product's vector share, hwsim/gemv_split.py). Their products are summed in f32
    partial sums kept across the k steps of an output tile (bf16 operands: exact
    products, f32 sums, as the array accumulates). `split_first`: the first output
    tile's first K step runs as the pieces hwsim.gemm_queues.first_pieces says, each
    loaded as a step of its own (the cost model replays the same loop; never for GEMV
    steps). A writer with a norm (backend/norm_epilogue.py) runs each tile's epilogue
    on the vector queue: the next tile's first product waits for its read of the
    accumulator, and the last tile's last K step runs in the norm's row pieces, one
    matmul each (hwsim.gemm_queues RowsTail prices the same)."""
    tm, tn, tk = min(tile[0], g.m), min(tile[1], g.n), min(tile[2], g.k)
    nk, nn = math.ceil(g.k / tk), math.ceil(g.n / tn)
    a_res, b_res = nk == 1, nk == 1 and nn == 1
    on_vector = vector_products or (gemv and timing.gemv_on_vector(kb.hw, g.dtype, g.m, tn, tk))
    # GEMV steps sum into h rows of f32 partial sums per B operand, kept across the k
    # steps of an output tile and folded into its accumulator row at the last one
    h = timing.gemv_kernel_rows(kb.hw, g.n, g.k, tn, tk) if on_vector else 0
    a.alloc(kb, tm, tk)
    bs = (b, *more_b)
    for bl in bs:
        bl.alloc(kb, tk, tn)
    accs = [kb.alloc(tm, tn, g.acc_dtype, "acc") for _ in bs]
    partials = [kb.alloc(h, tn, "f32") for _ in bs] if on_vector else []
    writer.alloc(kb, tm, tn, zero)
    pipe = Pipeline(kb, "g", writer.out_slots)
    writer.prologue(pipe)
    pieces = 1
    if split_first and not on_vector:
        # the resident A panel in the same pieces unless it must land whole (its rows
        # normalized on the way in: a NormLoader's `whole_rows`); one turned on chip
        # (mode t) lands whole too, which the model leaves out as it leaves out its turn
        a_whole = a_res and getattr(a, "whole_rows", False)
        pieces = first_pieces(kb.hw, g.dtype, tm, tn, tk, a_whole, b_res, len(bs))
    a_split = pieces > 1 and a_res and isinstance(a, StridedLoader) and a.mode == "n"
    norm = writer.norm
    last_bidx = tuple(d - 1 for d in g.batch)
    acc_read: str | None = None  # the previous tile's epilogue read of the accumulator
    for bidx in itertools.product(*(range(d) for d in g.batch)):
        bgen = None
        for m0 in range(0, g.m, tm):
            rm = min(tm, g.m - m0)
            agen = None
            parts = None  # the first panel's pieces, each loaded before its product's B
            if a_res:
                aslot = pipe.slot("a")
                if a_split and m0 == 0 and not any(bidx):
                    parts = [
                        a.load_part(aslot, bidx, m0, rm, k0, rk, g.k)  # type: ignore[attr-defined]
                        for k0, rk in k_steps(g.k, tk, pieces)
                    ]
                    agen, _ = pipe.load("a", parts[0])
                else:
                    agen, _ = pipe.load("a", a.load(aslot, bidx, m0, rm, 0, g.k))
                a_pre, a_tile = a.ready(aslot, rm, g.k)
                pipe.compute(a_pre)
                if a_pre:
                    pipe.release(agen)
                    agen = None
            for n0 in range(0, g.n, tn):
                rn = min(tn, g.n - n0)
                pos = writer.pos(bidx, m0, rm, n0, rn)
                if b_res and bgen is None and m0 == 0:
                    bslot = pipe.slot("b")
                    loads = [p for bl in bs for p in bl.load(bslot, bidx, 0, g.k, n0, rn)]
                    bgen, _ = pipe.load("b", loads)
                    readies = [bl.ready(bslot, g.k, rn) for bl in bs]
                    b_pre = [ins for pre, _ in readies for ins in pre]
                    b_tiles = [t for _, t in readies]
                    pipe.compute(b_pre)
                    if b_pre:
                        pipe.release(bgen)
                        bgen = "done"
                first = m0 == 0 and n0 == 0 and not any(bidx)
                last_tile = bidx == last_bidx and m0 + tm >= g.m and n0 + tn >= g.n
                rows = norm.pieces(rm) if norm is not None and last_tile else (rm,)  # type: ignore[attr-defined]
                products: list[tuple[int, int]] = []  # the last step's (rows, matmul)
                for j, (k0, rk) in enumerate(k_steps(g.k, tk, pieces if first else 1)):
                    slot = pipe.slot("k")
                    if first and parts is not None and j > 0:
                        pipe.load_more(agen, parts[j])
                    pairs = [] if a_res else a.load(slot, bidx, m0, rm, k0, rk)
                    if not b_res:
                        pairs += [p for bl in bs for p in bl.load(slot, bidx, k0, rk, n0, rn)]
                    kgen, _ = pipe.load("k", pairs)
                    if j == 0:  # the epilogue's operands after what the first product needs
                        egen, etok = writer.loads(pipe, pos)
                    pre: list[Instr] = []
                    if not a_res:
                        a_pre, a_tile = a.ready(slot, rm, rk)
                        pre += a_pre
                        a_k = a_tile
                    else:  # the columns of this step in the resident panel
                        a_k = offset_tile(a_tile, 0, k0, rm, rk) if rk < g.k else a_tile
                    if not b_res:
                        readies = [bl.ready(slot, rk, rn) for bl in bs]
                        pre += [ins for p, _ in readies for ins in p]
                        b_tiles = [t for _, t in readies]
                    mode = "overwrite" if k0 == 0 else "accumulate"
                    last = k0 + rk >= g.k
                    if j == 0 and acc_read is not None:  # the accumulator was read out
                        pipe.wait_for([acc_read])
                    if on_vector:
                        mms = []
                        for acc_full, bt, part in zip(accs, b_tiles, partials, strict=True):
                            p = sub(part, h, rn)
                            mms += gemv_products(p, a_k, bt, k0 == 0)
                            if last:
                                mms += gemv_fold(p, sub(acc_full, rm, rn), "overwrite")
                        pipe.compute([*pre, *mms])
                        products = [(rm, kb.last_compute)]
                    else:  # the last step in row pieces, each its own product
                        products, r0 = [], 0
                        for rp in rows if last else (rm,):
                            piece = rp < rm
                            a_p = offset_tile(a_k, r0, 0, rp, rk) if piece else a_k
                            mms = []
                            for acc_full, bt in zip(accs, b_tiles, strict=True):
                                acc_p = sub(acc_full, rm, rn)
                                acc_p = offset_tile(acc_p, r0, 0, rp, rn) if piece else acc_p
                                mms.append(Matmul(acc=acc_p, a=a_p, b=bt, mode=mode))
                            pipe.compute([*(pre if r0 == 0 else []), *mms])
                            products.append((rp, kb.last_compute))
                            r0 += rp
                    pipe.release(kgen)
                if a_res and agen is not None and n0 + tn >= g.n:
                    pipe.release(agen)
                if b_res and bgen not in (None, "done") and m0 + tm >= g.m:
                    pipe.release(bgen)
                more = tuple(sub(t, rm, rn) for t in accs[1:])
                acc = sub(accs[0], rm, rn)
                acc_read = writer.finish(pipe, pos, egen, etok, acc, more, tuple(products))


def gemv_products(partial: Tile, a: Tile, b: Tile, init: bool) -> list[Instr]:
    """partial[h, n] (=, or += unless `init`) the products of a[1, k] @ b[k, n] in
    blocks of h rows (hwsim.timing.gemv_product_cycles): block j of b times a's
    elements of those rows, read as a column (a's k elements are contiguous either
    way), by a multiply (the first block of `init`) or a fused multiply-add."""
    h, n = partial.rows, partial.cols
    instrs: list[Instr] = []
    for j, (r0, rows) in enumerate(timing.gemv_blocks(b.rows, h)):
        p = offset_tile(partial, 0, 0, rows, n)
        block = offset_tile(b, r0, 0, rows, n)
        column = Tile(a.space, a.addr + r0 * a.itemsize, rows, 1, a.dtype, 1)
        if j == 0 and init:
            instrs.append(Binary(op="mul", dst=p, a=block, b=column, bcast="col"))
        else:
            instrs.append(Fma(dst=p, a=block, b=column, c=p))  # column: by its shape
    return instrs


def gemv_fold(partial: Tile, acc: Tile, mode: str) -> list[Instr]:
    """acc[1, n] (=, or += with mode accumulate) the sum of partial's rows: halved in
    place by adds, then the first row moved or added (hwsim.timing.gemv_fold_cycles)."""
    rows, n = partial.rows, partial.cols
    instrs: list[Instr] = []
    while rows > 1:
        half = rows // 2
        top = offset_tile(partial, 0, 0, half, n)
        bottom = offset_tile(partial, rows - half, 0, half, n)
        instrs.append(Binary(op="add", dst=top, a=top, b=bottom))
        rows -= half
    first = offset_tile(partial, 0, 0, 1, n)
    if mode == "overwrite":
        return [*instrs, Move(dst=acc, src=first)]
    return [*instrs, Binary(op="add", dst=acc, a=acc, b=first)]


def gemv_step(hw: Hardware, acc: Tile, a: Tile, b: Tile, mode: str) -> list[Instr]:
    """acc[1, n] (=, or += with mode accumulate) a[1, k] @ b[k, n] on the vector unit,
    priced by hwsim.timing.gemv_cycles: the products into b's own first h rows
    (h = timing.gemv_rows), then their fold. b is the step's own loaded f32 slot, free
    to overwrite: the next load into it waits for this compute."""
    h = timing.gemv_rows(hw, b.cols, b.rows)
    partial = offset_tile(b, 0, 0, h, b.cols)
    return gemv_products(partial, a, b, True) + gemv_fold(partial, acc, mode)


def sram_need(
    g: Gemm,
    tile: tuple[int, int, int],
    itemsizes: tuple[int, int, int, int],
    modes: str = "nn",
    out_slots: int = 2,
) -> int:
    """SRAM bytes of the operand and output slots for a tile, plus `extra` per output
    element (the epilogue); a transposed operand (mode t) needs a third buffer."""
    tm, tn, tk = min(tile[0], g.m), min(tile[1], g.n), min(tile[2], g.k)
    sa, sb, so, extra = itemsizes
    na, nb = (2 + (m == "t") for m in modes)
    return na * tm * tk * sa + nb * tk * tn * sb + (out_slots * so + extra) * tm * tn
