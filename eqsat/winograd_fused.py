"""The fused Winograd convolution (winograd_conv*, eqsat/ops/winograd.py) instruction
by instruction: input transform, products and output transform in one kernel, the
transformed tiles never leaving the chip.

As in eqsat/winograd_plan.py, one generator serves the backend (backend/winograd.py
places the instructions) and the cost model (which replays them on the simulator's
queues), so the price is the plan's.

The transformed weights U [a*a, C, O] stay in SRAM for the whole kernel. Where C and O
are at most half the array, `pack` transform points share one product: their weights
sit block-diagonally in one (pack*C) x (pack*O) tile and their tiles side by side in
the rows of A, so one pass of the array serves them all (C = O = 64 on a 128 x 128
array: two points a product instead of two products each a quarter used).

A step takes `nb` tile rows of one image:
- load: the image rows it needs, all channels, straight from x [N, C, H, W] (a few
  DMAs, LOAD_PIECES);
- compute queue: one transpose per image row into a zero-bordered pixel-major slot
  (rows outside the image zeroed), so no separate padding kernel runs;
- vector queue: the input transform, row output by row output of B^T (over whole
  padded rows), each followed by B along the columns for its points, into V (`flat`:
  with a spare tile per tile row, one instruction covers every tile row of a step);
- compute queue: one product per group of `pack` points, each waiting only for its
  points of V;
- vector queue: the output transform read from the accumulator, A along the columns
  as the products arrive and A^T along the rows summed term by term as those come, so
  little is left after the last product;
- compute queue, tile row by tile row: one transpose per output row into NCHW rows,
  the epilogue (bias per channel, residual, ReLU), the store (overlapping the next
  tile row's).
The vector-queue work of a step runs beside the products of the steps around it
(double-buffered slots; a step's transposes and epilogue come after the next step's
products on the compute queue).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass

from eqsat.ops.winograd import AT, BT, tiles
from eqsat.winograd_plan import (
    ISZ,
    UNFIT,
    Instrs,
    SramAlloc,
    TileGrid,
    combine,
    plan_cycles,
    planned_cost,
    ranked_cycles,
    sub_tile,
    term_rows,
    with_tokens,
)
from hwsim.costmodel import KernelCost
from hwsim.hardware import Hardware
from hwsim.isa import Binary, DramRef, Instr, Load, Matmul, Select, Store, Tile, Transpose, Unary


@dataclass(frozen=True)
class ConvPlan(TileGrid):
    n: int
    c: int
    o: int
    h: int
    w: int
    m: int
    ph: int
    pw: int
    ho: int
    wo: int
    nb: int  # tile rows per step
    pack: int  # transform points per product
    flat: bool  # one spare tile per tile row: the column pass covers all rows at once
    bias: bool
    residual: bool
    relu: bool

    @property
    def wp(self) -> int:
        return self.m * self.tw + 2

    @property
    def tws(self) -> int:
        """Tiles a tile row takes in V (flat: a spare one, computed and never stored)."""
        return self.tw + 1 if self.flat else self.tw

    @property
    def groups(self) -> int:
        return -(-(self.a * self.a) // self.pack)

    @property
    def steps(self) -> int:
        return self.n * -(-self.th // self.nb)


def pack_of(hw: Hardware, c: int, o: int, a: int) -> int:
    """Transform points one product serves (block-diagonal weights), at most a*a."""
    return max(1, min(hw.array_rows // c, hw.array_cols // o, a * a))


def _combine(dst: Tile, terms, tmp: Tile) -> list[Instr]:
    """A transform's linear combination, issued to the vector queue (beside the products)."""
    return combine(dst, terms, tmp, vector_queue=True)


def _accumulate(dst: Tile, first, term, tmp: Tile) -> list[Instr]:
    """dst += c * src, the A^T pass summed as its terms arrive: the second term of an
    output adds to its first (which must be +1), later ones to dst; the instructions
    `combine` issues for the whole sum, one term at a time."""
    c0, s0, pending = first
    assert c0 == 1, "every row of A^T starts with a +1 term"
    c, s = term
    a = s0 if pending else dst
    op = "add" if c > 0 else "sub"
    if abs(c) == 1:
        return [Binary(op=op, dst=dst, a=a, b=s, vector_queue=True)]
    t = Tile("sram", tmp.addr, s.rows, s.cols, "f32")
    return [
        Binary(op="mul", dst=t, a=s, imm=abs(c), vector_queue=True),
        Binary(op=op, dst=dst, a=a, b=t, vector_queue=True),
    ]


LOAD_PIECES = 4  # DMAs a step's image rows come in


class _Flow:
    """Instructions with one-shot tokens: `then(tokens)` makes the next instruction
    added wait for them; `mark(token)` makes the last one added signal it."""

    def __init__(self, tag: str) -> None:
        self.tag, self.out, self.pending = tag, Instrs(), []

    def wait(self, *tokens: str) -> None:
        self.pending += [self.tag + t for t in tokens]

    def add(self, ins: Instr) -> None:
        self.out.append(with_tokens(ins, tuple(self.pending), ()))
        self.pending = []

    def extend(self, instrs: list[Instr]) -> None:
        for ins in instrs:
            self.add(ins)

    def mark(self, *tokens: str) -> None:
        last = self.out[-1]
        self.out[-1] = with_tokens(last, (), tuple(self.tag + t for t in tokens))


def conv_instrs(
    p: ConvPlan,
    x: str,
    u: str,
    y: str,
    bias: str | None = None,
    residual: str | None = None,
    tag: str = "wc",
    limits: tuple[int, int] | None = None,
    max_steps: int | None = None,
) -> Instrs:
    """The fused kernel's instructions: x [N, C, H, W], u [a*a, C, O], y [N, O, HO, WO]
    and residual of y's shape row-major, bias O values (DRAM buffers from element 0).
    With `limits` (SRAM, accumulator bytes) a plan that does not fit gets no
    instructions; `sram` is then what it would need (the larger overflow's space)."""
    a, m, c, o, tw, nb, pk = p.a, p.m, p.c, p.o, p.tw, p.nb, p.pack
    wp, aa, gs = p.wp, a * a, p.groups
    slots = 2 if p.steps > 1 else 1
    tws = p.tws
    span = nb * tws  # tiles of a full step (flat: the spare ones too)
    rows_in = m * nb + 2  # padded rows a step reads
    xrows = min(p.h, rows_in)
    # elements of a padded row; flat: tws*m pixels, so that tile (r, t) is (r*tws + t)*m
    # pixels from the first (the spare tile reads zeros and the next row's start)
    row = (m * tws if p.flat else wp) * c
    qcols = nb * m * m * tw
    al, acc = SramAlloc(None), SramAlloc(None)  # type: ignore[arg-type]
    wts = al(gs * pk * c, pk * o)
    bt = al(o, 1) if p.bias else None
    xs = [al(c, xrows * p.w) for _ in range(slots)]
    imgs = [al(1 + rows_in, row) for _ in range(slots)]  # row 0 takes the zeroing load
    z = al(a * nb + 1, row)  # flat: the last spare tile reads into the row beyond
    tmp = al(1, max(nb * row, span * max(c, o)))
    vs = [al(gs * span, pk * c) for _ in range(slots)]
    zc = al(a * m * span, o)
    pix = [al(m * m * span, o) for _ in range(slots)]
    qs = [al(o, qcols) for _ in range(slots)]
    rs = [al(o, qcols) for _ in range(slots)] if p.residual else []
    ms = [acc(gs * span, pk * o) for _ in range(slots)]
    ms = [dataclasses.replace(t, space="acc") for t in ms]
    out = Instrs()
    out.sram, out.steps = al.top, []
    if limits is not None and (al.top > limits[0] or acc.top > limits[1]):
        out.sram = max(al.top, limits[0] + 1)
        return out
    bt_rows, at = term_rows(BT[m]), term_rows(AT[m])
    f = _Flow(tag)
    # prologue: zeros in the image slots (and in residual slots of cropped rows); the
    # weights and the bias come after the first image rows (weights(), below)
    for s, img in enumerate(imgs):
        f.add(Load(dst=img, src=DramRef(x, 0, 1, 1, 1)))
        f.mark(f"z{s}")
    f.add(Load(dst=z, src=DramRef(x, 0, 1, 1, 1)))
    f.mark("zz")
    wop = m * tw
    for s, r in enumerate(rs if p.wo != wop else []):
        f.add(Load(dst=r, src=DramRef(residual, 0, 1, 1, 1)))  # type: ignore[arg-type]
        f.mark(f"rz{s}")

    def weights() -> None:
        """The bias, then the weights group by group (each product waits for its own;
        packed: zeros around the diagonal blocks first)."""
        if bt is not None:
            f.add(Load(dst=bt, src=DramRef(bias, 0, o, 1, 1)))  # type: ignore[arg-type]
            f.mark("b")
        if pk > 1:
            f.add(Load(dst=wts, src=DramRef(u, 0, 1, 1, 1)))
        for gi in range(gs):
            for k in range(gi * pk, min(aa, (gi + 1) * pk)):
                j = k - gi * pk
                at_ = wts.addr + ((gi * pk * c + j * c) * pk * o + j * o) * ISZ
                f.add(
                    Load(
                        dst=Tile("sram", at_, c, o, "f32", pk * o),
                        src=DramRef(u, k * c * o, c, o, o),
                    )
                )
            f.mark(f"w{gi}")

    steps = [(n, ty0) for n in range(p.n) for ty0 in range(0, p.th, nb)]
    if max_steps is not None:
        steps = steps[:max_steps]

    def pieces(g: int) -> list[tuple[int, int]]:
        """The rows [lo, hi) of x a step loads, in up to LOAD_PIECES DMAs (the first
        transposes start when the first piece lands)."""
        _, ty0 = steps[g]
        lo, hi = max(0, m * ty0 - p.ph), min(p.h, m * ty0 + rows_in - p.ph)
        k = min(LOAD_PIECES, hi - lo)
        cuts = [lo + (hi - lo) * i // k for i in range(k + 1)]
        return list(itertools.pairwise(cuts))

    def load(g: int) -> None:
        n, _ = steps[g]
        parts = pieces(g)
        lo = parts[0][0]
        if g >= 2:
            f.wait(f"xf{g - 2}")
        for k, (l0, l1) in enumerate(parts):
            at_ = xs[g % slots].addr + (l0 - lo) * p.w * ISZ
            f.add(
                Load(
                    dst=Tile("sram", at_, c, (l1 - l0) * p.w, "f32", xrows * p.w),
                    src=DramRef(x, (n * c * p.h + l0) * p.w, c, (l1 - l0) * p.w, p.h * p.w),
                )
            )
            f.mark(f"xl{g}_{k}")

    def turn_in(g: int) -> None:  # image rows -> the zero-bordered pixel-major slot
        _, ty0 = steps[g]
        nbg = min(nb, p.th - ty0)
        rows = m * nbg + 2
        img, xt = imgs[g % slots], xs[g % slots]
        parts = pieces(g)
        lo = parts[0][0]
        f.wait(f"if{g - 2}" if g >= 2 else f"z{g}")
        inside = [
            r for r in range(rows) if 0 <= m * ty0 + r - p.ph < p.h
        ]  # padded rows of the step inside x
        piece = -1
        for r in inside:
            hx = m * ty0 + r - p.ph - lo
            while piece + 1 < len(parts) and hx + lo >= parts[piece + 1][0]:
                piece += 1
                f.wait(f"xl{g}_{piece}")
            f.add(
                Transpose(
                    dst=sub_tile(img, (1 + r) * row + p.pw * c, p.w, c),
                    src=Tile("sram", xt.addr + hx * p.w * ISZ, c, p.w, "f32", xrows * p.w),
                )
            )
        f.wait(*(f"xl{g}_{k}" for k in range(piece + 1, len(parts))))  # pieces not used
        if g >= 2:  # rows outside x: the slot held image rows two steps ago
            for r in range(rows):
                if r not in inside:
                    t = sub_tile(img, (1 + r) * row, 1, row)
                    f.add(Select(dst=t, cond=t, imm_a=0.0, imm_b=0.0))
        f.mark(f"xf{g}", f"tt{g}")

    def transform_in(g: int) -> None:
        _, ty0 = steps[g]
        nbg = min(nb, p.th - ty0)
        img, v = imgs[g % slots], vs[g % slots]
        f.wait(f"tt{g}")
        if g == 0:
            f.wait("zz")
        if g >= 2:
            f.wait(f"mf{g - 2}")
        for xi, terms in enumerate(bt_rows):  # per row output of B^T, its points
            dz = sub_tile(z, xi * nb * row, nbg, row)  # B^T along the rows: whole padded rows
            srcs = [(cf, sub_tile(img, (1 + i) * row, nbg, row, m * row)) for cf, i in terms]
            f.extend(_combine(dz, srcs, tmp))
            for nu in range(a):  # B along the columns
                k = xi * a + nu
                gi, j = divmod(k, pk)
                for r0, rn in [(0, nbg * tws)] if p.flat else [(r, tw) for r in range(nbg)]:
                    zr = xi * nb * row + r0 * m * c if p.flat else (xi * nb + r0) * row
                    srcs = [(cf, sub_tile(z, zr + jj * c, rn, c, m * c)) for cf, jj in bt_rows[nu]]
                    dv = sub_tile(v, (gi * span + r0 * tws) * pk * c + j * c, rn, c, pk * c)
                    f.extend(_combine(dv, srcs, tmp))
                if j == pk - 1 or k == aa - 1:
                    f.mark(f"v{g}_{gi}")
        f.mark(f"if{g}")

    def products(g: int) -> None:
        _, ty0 = steps[g]
        sp = min(nb, p.th - ty0) * tws
        v, mt = vs[g % slots], ms[g % slots]
        for gi in range(gs):
            pg = min(pk, aa - gi * pk)
            f.wait(f"v{g}_{gi}")
            if gi == 0 and g >= 2:
                f.wait(f"of{g - 2}")
            if g == 0:
                f.wait(f"w{gi}")
            f.add(
                Matmul(
                    acc=Tile("acc", mt.addr + gi * span * pk * o * ISZ, sp, pg * o, "f32", pk * o),
                    a=Tile("sram", v.addr + gi * span * pk * c * ISZ, sp, pg * c, "f32", pk * c),
                    b=Tile(
                        "sram", wts.addr + gi * pk * c * pk * o * ISZ, pg * c, pg * o, "f32", pk * o
                    ),
                )
            )
            f.mark(f"mg{g}_{gi}")
        f.mark(f"mf{g}")

    def point(mt: Tile, k: int, sp: int) -> Tile:
        gi, j = divmod(k, pk)
        return Tile("acc", mt.addr + ((gi * span) * pk * o + j * o) * ISZ, sp, o, "f32", pk * o)

    def transform_out(g: int) -> None:
        _, ty0 = steps[g]
        sp = min(nb, p.th - ty0) * tws
        mt, px = ms[g % slots], pix[g % slots]
        done, firsts, scratch = -1, {}, sub_tile(tmp, 0, sp, o)
        for xi in range(a):  # A along the columns, from the accumulator, then ...
            need = (xi * a + a - 1) // pk
            f.wait(*(f"mg{g}_{gi}" for gi in range(done + 1, need + 1)))
            done = max(done, need)
            for b, terms in enumerate(at):
                dz = sub_tile(zc, (xi * m + b) * span * o, sp, o)
                srcs = [(cf, point(mt, xi * a + nu, sp)) for cf, nu in terms]
                f.extend(_combine(dz, srcs, scratch))
            if xi == a - 1:
                f.mark(f"of{g}")
            if xi == 0 and g >= 2:
                f.wait(f"pf{g - 2}")
            for ar, b in itertools.product(range(m), range(m)):  # ... A^T, term by term
                cf = float(AT[m][ar, xi])
                if cf == 0:
                    continue
                dp = sub_tile(px, (ar * span * m + b) * o, sp, o, m * o)
                src = sub_tile(zc, (xi * m + b) * span * o, sp, o)
                first = firsts.setdefault((ar, b), (cf, src, True))
                if first[2] and first[1] is src:
                    continue  # the first term waits for the second (one add for both)
                firsts[ar, b] = (first[0], first[1], False)
                f.extend(_accumulate(dp, first, (cf, src), scratch))
        for (ar, b), (_, src, pending) in firsts.items():  # an output of one term
            if pending:
                dp = sub_tile(px, (ar * span * m + b) * o, sp, o, m * o)
                f.add(Binary(op="add", dst=dp, a=src, imm=0.0, vector_queue=True))
        f.mark(f"ot{g}")

    def residual_load(g: int) -> None:
        n, ty0 = steps[g]
        hv = min(min(nb, p.th - ty0) * m, p.ho - m * ty0)
        r = rs[g % slots]
        base = ((n * o) * p.ho + m * ty0) * p.wo
        if g >= 2:
            f.wait(f"rf{g - 2}")
        if p.wo == wop:
            f.add(
                Load(
                    dst=Tile("sram", r.addr, o, hv * p.wo, "f32", qcols),
                    src=DramRef(residual, base, o, hv * p.wo, p.ho * p.wo),  # type: ignore[arg-type]
                )
            )
        else:
            for hh in range(hv):
                f.add(
                    Load(
                        dst=Tile("sram", r.addr + hh * wop * ISZ, o, p.wo, "f32", qcols),
                        src=DramRef(residual, base + hh * p.wo, o, p.wo, p.ho * p.wo),  # type: ignore[arg-type]
                    )
                )
        f.mark(f"rl{g}")

    def finish(g: int) -> None:  # NCHW rows, epilogue, store
        n, ty0 = steps[g]
        nbg = min(nb, p.th - ty0)
        hv = min(nbg * m, p.ho - m * ty0)
        q, px = qs[g % slots], pix[g % slots]
        f.wait(f"ot{g}")
        if g >= 2:
            f.wait(f"qs{g - 2}")
        if rs:
            f.wait(f"rl{g}")
            if g < 2 and p.wo != wop:
                f.wait(f"rz{g}")
        if g == 0 and bt is not None:
            f.wait("b")
        base = ((n * o) * p.ho + m * ty0) * p.wo
        for r in range(nbg):  # tile row by tile row: a row's store overlaps the next
            h0, hn = r * m, min(m, hv - r * m)
            for ar in range(hn):
                srcp = sub_tile(px, ((ar * span + r * tws) * m) * o, tw * m, o)
                f.add(Transpose(dst=sub_tile(q, (h0 + ar) * wop, o, wop, qcols), src=srcp))
            if r == nbg - 1:
                f.mark(f"pf{g}")
            valid = sub_tile(q, h0 * wop, o, hn * wop, qcols)
            if bt is not None:
                f.add(Binary(op="add", dst=valid, a=valid, b=bt, bcast="col"))
            if rs:
                rv = sub_tile(rs[g % slots], h0 * wop, o, hn * wop, qcols)
                f.add(Binary(op="add", dst=valid, a=valid, b=rv))
            if p.relu:
                f.add(Unary(op="relu", dst=valid, src=valid))
            f.mark(f"qe{g}_{r}", *((f"rf{g}",) if r == nbg - 1 else ()))
            f.wait(f"qe{g}_{r}")
            if p.wo == wop:
                f.add(
                    Store(
                        dst=DramRef(y, base + h0 * p.wo, o, hn * p.wo, p.ho * p.wo),
                        src=sub_tile(q, h0 * wop, o, hn * p.wo, qcols),
                    )
                )
            else:
                for hh in range(h0, h0 + hn):
                    f.add(
                        Store(
                            dst=DramRef(y, base + hh * p.wo, o, p.wo, p.ho * p.wo),
                            src=sub_tile(q, hh * wop, o, p.wo, qcols),
                        )
                    )
        f.mark(f"qs{g}")

    # the order: a topological one in which each queue runs as the module doc says
    # (compute: T0, T1, P0, T2, P1, F0, ...; vector: I0, I1, O0, I2, O1, ...)
    count = len(steps)
    load(0)
    weights()
    turn_in(0)
    transform_in(0)
    for g in range(count):
        out.steps.append(len(f.out))
        if g + 1 < count:
            load(g + 1)
            turn_in(g + 1)
            transform_in(g + 1)
        if rs:
            residual_load(g)
        products(g)
        transform_out(g)
        if g >= 1:
            finish(g - 1)
    finish(count - 1)
    out.extend(f.out)
    return out


def _nbs(th: int) -> list[int]:
    return sorted({th, *(b for b in (1, 2, 4, 8, 16) if b < th)}, reverse=True)


@functools.cache
def _conv_block(
    hw: Hardware, n: int, c: int, o: int, h: int, w: int, m: int, pad: tuple[int, int]
) -> int | None:
    """(tile rows per step, flat): the fastest that fits (with the largest epilogue, so that
    one block serves every epilogue), ranked by replaying the first steps."""
    ho, wo = h + 2 * pad[0] - 2, w + 2 * pad[1] - 2
    th, _ = tiles((ho, wo), m)
    pk = pack_of(hw, c, o, m + 2)
    best = None
    for nb, flat in itertools.product(_nbs(th), (False, True)):
        if flat and nb == 1:  # one tile row a step: the spare tile only adds work
            continue
        p = ConvPlan(n, c, o, h, w, m, pad[0], pad[1], ho, wo, nb, pk, flat, True, True, True)
        if not _usable(p):
            continue
        probe = conv_instrs(
            p, "x", "u", "y", "b", "r", limits=(hw.sram_bytes, hw.acc_bytes), max_steps=3
        )
        if probe.sram > hw.sram_bytes:
            continue
        rank = ranked_cycles(hw, probe, p.steps) if p.steps > 3 else plan_cycles(hw, probe)
        if best is None or rank < best[1]:
            best = ((nb, flat), rank)
    return None if best is None else best[0]


def _usable(p: ConvPlan) -> bool:
    """Every step reads some row of x (a padding of 3 or more could leave one empty)."""
    return all(
        max(0, p.m * ty0 - p.ph) < min(p.h, p.m * ty0 + p.m * p.nb + 2 - p.ph)
        for ty0 in range(0, p.th, p.nb)
    )


@functools.cache
def conv_plan(
    hw: Hardware,
    n: int,
    c: int,
    o: int,
    h: int,
    w: int,
    m: int,
    pad: tuple[int, int],
    epilogue: tuple[bool, bool, bool],
) -> tuple[ConvPlan, int] | None:
    """The fused kernel's plan and cycles (None: no block fits SRAM and the accumulator)."""
    block = _conv_block(hw, n, c, o, h, w, m, pad)
    if block is None:
        return None
    ho, wo = h + 2 * pad[0] - 2, w + 2 * pad[1] - 2
    pk = pack_of(hw, c, o, m + 2)
    p = ConvPlan(n, c, o, h, w, m, pad[0], pad[1], ho, wo, block[0], pk, block[1], *epilogue)
    b, r = "b" if p.bias else None, "r" if p.residual else None
    return p, plan_cycles(hw, conv_instrs(p, "x", "u", "y", b, r))


def conv_cost(hw: Hardware, x_shape, u_shape, m: int, padding, epilogue) -> KernelCost:
    n, c, h, w = (int(d) for d in x_shape)
    o = int(u_shape[2])
    found = conv_plan(hw, n, c, o, h, w, m, (int(padding[0]), int(padding[1])), tuple(epilogue))
    if found is None:
        return planned_cost(UNFIT, 0, False)
    ho, wo = h + 2 * padding[0] - 2, w + 2 * padding[1] - 2
    out = n * o * ho * wo
    dram = ISZ * (n * c * h * w + int(u_shape[0]) * c * o + out * (2 if epilogue[1] else 1))
    return planned_cost(found[1], dram + (ISZ * o if epilogue[0] else 0))
