"""The Winograd transform kernels (eqsat/ops/winograd.py), instruction by instruction.

One module generates the instructions of both transform kernels; the backend
(backend/winograd.py) emits them into the program and the cost model replays the same
list on the simulator's queues (hwsim/gemv_split.queue_program, gemm_queues.run_queues),
so the price is the plan's, not an estimate of it.

Input transform. Its input is the padded NHWC image [N, Hp, Wp, C] that the
convolution prep writes (backend/conv_prep.nhwc_image, Hp = m*th + 2, Wp = m*tw + 2,
zero borders). A step takes `nb` tile rows of one image and `cb` channels: one DMA of
the m*nb + 2 image rows it needs, then the transform as two passes of vector
instructions, B^T along the rows (each of the a outputs one instruction per term over
whole rows of all nb tile rows at once), then B along the columns (per tile row: tiles
are m pixels apart), written as the [a*a, tiles, cb] block of V and stored with one DMA
per transform point.

Output transform. A step takes `nb` tile rows of one image and `ob` output channels:
the [a*a, tiles, ob] block of the product (one DMA per transform point, one in all
when ob = O), A along the columns then A^T along the rows (each instruction over the
whole block), written pixel-major with the output columns interleaved, turned into
NCHW rows by one transpose per output row, then the epilogue (bias per channel, the
residual, ReLU) and the store.

Blocks. Per channel block (C, C/2, ... down to 8), the most tile rows per step that
fit SRAM; candidates are ranked by replaying their first steps, and the one chosen is
priced whole. The output transform's block is chosen once, with the largest epilogue,
and serves every epilogue.

A linear combination sum_i c_i s_i is one instruction per term: the first two unit
terms as one add or sub, a term of coefficient c as a multiply by |c| into a scratch
tile and an add or sub (every row of B^T and A^T has a +1 term).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from eqsat.ops.winograd import AT, BT, tiles
from eqsat.spatial_plan import ALIGN
from hwsim.costmodel import KernelCost
from hwsim.hardware import Hardware
from hwsim.isa import Binary, DramRef, Instr, Load, Store, Tile, Transpose, Unary

ISZ = 4  # f32


@dataclass(frozen=True)
class InputPlan:
    n: int
    c: int
    m: int
    th: int
    tw: int
    nb: int  # tile rows per step
    cb: int  # channels per step

    @property
    def a(self) -> int:
        return self.m + 2

    @property
    def wp(self) -> int:
        return self.m * self.tw + 2

    @property
    def hp(self) -> int:
        return self.m * self.th + 2


class TileGrid:
    """An ho x wo output in m x m tiles (a plan's fields m, ho, wo): the transform's
    side a = m + 2 and the tile rows and columns."""

    m: int
    ho: int
    wo: int

    @property
    def a(self) -> int:
        return self.m + 2

    @property
    def th(self) -> int:
        return tiles((self.ho, self.wo), self.m)[0]

    @property
    def tw(self) -> int:
        return tiles((self.ho, self.wo), self.m)[1]


@dataclass(frozen=True)
class OutputPlan(TileGrid):
    n: int
    o: int
    m: int
    ho: int
    wo: int
    nb: int  # tile rows per step
    ob: int  # output channels per step
    bias: bool
    residual: bool
    relu: bool


class Instrs(list):
    """A kernel's instructions, the SRAM bytes its tiles span (`sram`) and where each
    step of its loop starts (`steps`, as far as generated)."""

    sram = 0
    steps: list[int]


class SramAlloc:
    def __init__(self, hw: Hardware) -> None:
        self.hw, self.top = hw, 0

    def __call__(self, rows: int, cols: int) -> Tile:
        addr = -(-self.top // ALIGN) * ALIGN
        t = Tile("sram", addr, rows, cols, "f32")
        self.top = t.end
        return t


def sub_tile(t: Tile, elems: int, rows: int, cols: int, stride: int | None = None) -> Tile:
    """rows x cols from element `elems` of t (row stride `stride`, dense by default)."""
    return Tile("sram", t.addr + elems * ISZ, rows, cols, "f32", stride)


def combine(
    dst: Tile, terms: list[tuple[float, Tile]], tmp: Tile, vector_queue: bool = False
) -> list[Instr]:
    """dst = sum c * src, one instruction per term (see the module doc); with
    `vector_queue` issued to the vector queue (a lone term then as x + 0)."""
    terms = sorted(terms, key=lambda t: (t[0] != 1, t[0] != -1))
    c0, s0 = terms[0]
    assert c0 == 1, "every row of the transforms has a +1 term"
    vq = vector_queue
    if len(terms) == 1:
        if vq:
            return [Binary(op="add", dst=dst, a=s0, imm=0.0, vector_queue=True)]
        return [Unary(op="copy", dst=dst, src=s0)]
    out: list[Instr] = []
    first = True
    for c, s in terms[1:]:
        a = s0 if first else dst
        op = "add" if c > 0 else "sub"
        if abs(c) == 1:
            out.append(Binary(op=op, dst=dst, a=a, b=s, vector_queue=vq))
        else:
            t = Tile("sram", tmp.addr, s.rows, s.cols, "f32")
            out.append(Binary(op="mul", dst=t, a=s, imm=float(abs(c)), vector_queue=vq))
            out.append(Binary(op=op, dst=dst, a=a, b=t, vector_queue=vq))
        first = False
    return out


def term_rows(mat: np.ndarray) -> list[list[tuple[float, int]]]:
    return [[(float(v), j) for j, v in enumerate(row) if v != 0] for row in mat]


class _Tokens:
    """Double-buffered steps: loads of step g wait for compute to be done with step
    g - 2 (`f`), compute waits for the loads (`l`) and for the store of step g - 2
    (`o`), stores wait for compute (`s`)."""

    def __init__(self, prefix: str) -> None:
        self.p = prefix

    def __call__(self, kind: str, g: int) -> str:
        return f"{self.p}{kind}{g % 2}"


def _step(
    tok: _Tokens, g: int, loads: list[Instr], compute: list[Instr], stores: list[Instr]
) -> list[Instr]:
    out: list[Instr] = []
    for j, ld in enumerate(loads):
        wait = (tok("f", g),) if j == 0 and g >= 2 else ()
        out.append(with_tokens(ld, wait, (tok("l", g),)))
    first_wait = (tok("l", g),) * len(loads) + ((tok("o", g),) if g >= 2 else ())
    for j, ins in enumerate(compute):
        wait = first_wait if j == 0 else ()
        signal = (tok("f", g), tok("s", g)) if j == len(compute) - 1 else ()
        out.append(with_tokens(ins, wait, signal))
    for j, st in enumerate(stores):
        wait = (tok("s", g),) if j == 0 else ()
        signal = (tok("o", g),) if j == len(stores) - 1 else ()
        out.append(with_tokens(st, wait, signal))
    return out


def with_tokens(ins: Instr, wait: tuple, signal: tuple) -> Instr:
    if not wait and not signal:
        return ins
    return dataclasses.replace(ins, wait=(*ins.wait, *wait), signal=(*ins.signal, *signal))


# ---------------------------------------------------------------- input transform


def input_instrs(
    p: InputPlan,
    src: str,
    dst: str,
    tag: str = "wi",
    limit: int | None = None,
    max_steps: int | None = None,
) -> Instrs:
    """The input transform's loop: src the padded NHWC image [N, Hp, Wp, C], dst V
    [a*a, N*th*tw, C] (DRAM buffers addressed from element 0)."""
    al = SramAlloc(None)  # type: ignore[arg-type]
    a, m, cb, wp, tw = p.a, p.m, p.cb, p.wp, p.tw
    rows_max = m * p.nb + 2
    imgs = [al(rows_max * wp, cb), al(rows_max * wp, cb)]
    z = al(a * p.nb, wp * cb)  # row pass: a outputs x nb tile rows, whole padded rows
    vs = [al(a * a * p.nb * tw, cb), al(a * a * p.nb * tw, cb)]
    tmp = al(p.nb, wp * cb)
    bt = term_rows(BT[m])
    t_total = p.n * p.th * tw
    tok = _Tokens(tag)
    out = Instrs()
    out.sram, out.steps = al.top, []
    if limit is not None and al.top > limit:  # does not fit: no instructions
        return out
    g = 0
    for n in range(p.n):
        for ty0 in range(0, p.th, p.nb):
            nb = min(p.nb, p.th - ty0)
            rows = m * nb + 2
            for c0 in range(0, p.c, cb):
                cn = min(cb, p.c - c0)
                img, v = imgs[g % 2], vs[g % 2]
                first = ((n * p.hp + m * ty0) * wp) * p.c + c0
                load = Load(
                    dst=Tile("sram", img.addr, rows * wp, cn, "f32", cb),
                    src=DramRef(src, first, rows * wp, cn, p.c),
                )
                comp: list[Instr] = []
                row = wp * cb  # elements of one padded row in the image slot
                for xi, terms in enumerate(bt):
                    dz = sub_tile(z, xi * p.nb * row, nb, row)
                    srcs = [(c, sub_tile(img, i * row, nb, row, m * row)) for c, i in terms]
                    comp += combine(dz, srcs, tmp)
                for xi in range(a):
                    for nu, terms in enumerate(bt):
                        k = xi * a + nu
                        for r in range(nb):
                            zr = (xi * p.nb + r) * row
                            srcs = [(c, sub_tile(z, zr + j * cb, tw, cb, m * cb)) for c, j in terms]
                            dv = sub_tile(v, (k * p.nb + r) * tw * cb, tw, cb)
                            comp += combine(dv, srcs, tmp)
                t0 = (n * p.th + ty0) * tw
                stores = [
                    Store(
                        dst=DramRef(dst, (k * t_total + t0) * p.c + c0, nb * tw, cn, p.c),
                        src=Tile("sram", v.addr + k * p.nb * tw * cb * ISZ, nb * tw, cn, "f32", cb),
                    )
                    for k in range(a * a)
                ]
                out.steps.append(len(out))
                out += _step(tok, g, [load], comp, stores)
                g += 1
                if g == max_steps:
                    return out
    return out


# ---------------------------------------------------------------- output transform


def output_instrs(
    p: OutputPlan,
    src: str,
    dst: str,
    bias: str | None = None,
    residual: str | None = None,
    tag: str = "wo",
    limit: int | None = None,
    max_steps: int | None = None,
    residual_nhwc: bool = False,
) -> Instrs:
    """The output transform's loop: src the product [a*a, N*th*tw, O], dst y
    [N, O, HO, WO] row-major, `bias` O values, `residual` [N, O, HO, WO] row-major, or
    with `residual_nhwc` stored [N, HO, WO, O] (a window kernel's output): loaded
    pixel-major and turned on chip, one transpose per output row (or per block when
    the rows are whole)."""
    al = SramAlloc(None)  # type: ignore[arg-type]
    a, m, ob, tw, th = p.a, p.m, p.ob, p.tw, p.th
    wop = m * tw  # output columns of a tile row, the last tile's beyond WO included
    ms = [al(a * a * p.nb * tw, ob), al(a * a * p.nb * tw, ob)]
    zc = al(a * m * p.nb * tw, ob)
    pix = al(m * m * p.nb * tw, ob)
    tmp = al(p.nb * tw, ob)
    qcols = p.nb * m * wop
    qs = [al(ob, qcols), al(ob, qcols)]
    rs = [al(ob, qcols), al(ob, qcols)] if p.residual else []
    rts = [al(p.nb * m * p.wo, ob), al(p.nb * m * p.wo, ob)] if p.residual and residual_nhwc else []
    bt = al(p.o, 1) if p.bias else None
    at = term_rows(AT[m])
    t_total = p.n * th * tw
    out = Instrs()
    out.sram, out.steps = al.top, []
    if limit is not None and al.top > limit:  # does not fit: no instructions
        return out
    if bt is not None or rs:  # prologue: the bias; zeros in the residual slots
        pro: list[Instr] = []
        if bt is not None:
            pro.append(Load(dst=bt, src=DramRef(bias, 0, p.o, 1, 1)))  # type: ignore[arg-type]
        for r in rs:  # one element loaded: the rest of the slot is zero padding
            pro.append(Load(dst=r, src=DramRef(residual, 0, 1, 1, 1)))  # type: ignore[arg-type]
        out += [with_tokens(ins, (), (f"{tag}pro",)) for ins in pro]
    tok = _Tokens(tag)
    g = 0
    for n in range(p.n):
        for ty0 in range(0, th, p.nb):
            nb = min(p.nb, th - ty0)
            hv = min(nb * m, p.ho - m * ty0)  # output rows of the block inside y
            for o0 in range(0, p.o, ob):
                on = min(ob, p.o - o0)
                mt, q = ms[g % 2], qs[g % 2]
                t0 = (n * th + ty0) * tw
                span = nb * tw
                if on == p.o:
                    loads: list[Instr] = [
                        Load(
                            dst=Tile("sram", mt.addr, a * a, span * ob, "f32", p.nb * tw * ob),
                            src=DramRef(src, t0 * p.o, a * a, span * p.o, t_total * p.o),
                        )
                    ]
                else:
                    loads = [
                        Load(
                            dst=Tile(
                                "sram", mt.addr + k * p.nb * tw * ob * ISZ, span, on, "f32", ob
                            ),
                            src=DramRef(src, (k * t_total + t0) * p.o + o0, span, on, p.o),
                        )
                        for k in range(a * a)
                    ]
                hw_rows = []
                turns: list[Instr] = []  # a pixel-major residual turned into the slot
                if rts:
                    r, rt = rs[g % 2], rts[g % 2]
                    base = ((n * p.ho + m * ty0) * p.wo) * p.o + o0
                    hw_rows.append(
                        Load(
                            dst=Tile("sram", rt.addr, hv * p.wo, on, "f32", ob),
                            src=DramRef(residual, base, hv * p.wo, on, p.o),  # type: ignore[arg-type]
                        )
                    )
                    rows = [(0, hv)] if p.wo == wop else [(h, 1) for h in range(hv)]
                    for h0, hn in rows:
                        turns.append(
                            Transpose(
                                dst=Tile(
                                    "sram", r.addr + h0 * wop * ISZ, on, hn * p.wo, "f32", qcols
                                ),
                                src=Tile(
                                    "sram", rt.addr + h0 * p.wo * ob * ISZ, hn * p.wo, on, "f32", ob
                                ),
                            )
                        )
                elif rs:
                    r = rs[g % 2]
                    base = ((n * p.o + o0) * p.ho + m * ty0) * p.wo
                    if p.wo == wop:
                        hw_rows.append(
                            Load(
                                dst=Tile("sram", r.addr, on, hv * p.wo, "f32", qcols),
                                src=DramRef(residual, base, on, hv * p.wo, p.ho * p.wo),  # type: ignore[arg-type]
                            )
                        )
                    else:
                        for h in range(hv):
                            hw_rows.append(
                                Load(
                                    dst=Tile(
                                        "sram", r.addr + h * wop * ISZ, on, p.wo, "f32", qcols
                                    ),
                                    src=DramRef(residual, base + h * p.wo, on, p.wo, p.ho * p.wo),  # type: ignore[arg-type]
                                )
                            )
                comp: list[Instr] = []
                n_el = span * ob  # a full block's elements per transform point
                for xi in range(a):  # A along the columns: Z[xi][b]
                    for b, terms in enumerate(at):
                        dz = sub_tile(zc, (xi * m + b) * p.nb * tw * ob, 1, span * ob)
                        srcs = [
                            (c, sub_tile(mt, (xi * a + nu) * p.nb * tw * ob, 1, span * ob))
                            for c, nu in terms
                        ]
                        comp += combine(dz, srcs, sub_tile(tmp, 0, 1, n_el))
                for ar, terms in enumerate(at):  # A^T along the rows, pixel-major out
                    for b in range(m):
                        dp = sub_tile(pix, (ar * p.nb * tw * m + b) * ob, span, ob, m * ob)
                        srcs = [
                            (c, sub_tile(zc, (xi * m + b) * p.nb * tw * ob, span, ob))
                            for c, xi in terms
                        ]
                        comp += combine(dp, srcs, sub_tile(tmp, 0, span, ob))
                for ar in range(m):  # pixel-major rows -> NCHW rows of the slot
                    for r in range(nb):
                        h = r * m + ar
                        if h >= hv:
                            continue
                        srcp = sub_tile(pix, ((ar * p.nb + r) * tw * m) * ob, tw * m, ob)
                        comp.append(Transpose(dst=sub_tile(q, h * wop, ob, wop, qcols), src=srcp))
                valid = Tile("sram", q.addr, on, hv * wop, "f32", qcols)
                if bt is not None:
                    col = Tile("sram", bt.addr + o0 * ISZ, on, 1, "f32")
                    comp.append(Binary(op="add", dst=valid, a=valid, b=col, bcast="col"))
                if rs:
                    rv = Tile("sram", rs[g % 2].addr, on, hv * wop, "f32", qcols)
                    comp += turns
                    comp.append(Binary(op="add", dst=valid, a=valid, b=rv))
                if p.relu:
                    comp.append(Unary(op="relu", dst=valid, src=valid))
                if g == 0 and (bt is not None or rs):
                    comp[0] = with_tokens(
                        comp[0], (f"{tag}pro",) * (int(bt is not None) + len(rs)), ()
                    )
                base = ((n * p.o + o0) * p.ho + m * ty0) * p.wo
                if p.wo == wop:
                    stores: list[Instr] = [
                        Store(
                            dst=DramRef(dst, base, on, hv * p.wo, p.ho * p.wo),
                            src=Tile("sram", q.addr, on, hv * p.wo, "f32", qcols),
                        )
                    ]
                else:
                    stores = [
                        Store(
                            dst=DramRef(dst, base + h * p.wo, on, p.wo, p.ho * p.wo),
                            src=Tile("sram", q.addr + h * wop * ISZ, on, p.wo, "f32", qcols),
                        )
                        for h in range(hv)
                    ]
                out.steps.append(len(out))
                out += _step(tok, g, loads + hw_rows, comp, stores)
                g += 1
                if g == max_steps:
                    return out
    return out


# ---------------------------------------------------------------- plans and prices


def plan_cycles(hw: Hardware, instrs: list[Instr]) -> int:
    from hwsim.gemm_queues import run_queues
    from hwsim.gemv_split import queue_program

    return math.ceil(hw.launch_cycles + run_queues(hw, queue_program(hw, instrs)))


def sram_end(instrs: list[Instr]) -> int:
    """One past the last SRAM byte the instructions touch."""
    from hwsim.isa import tile_written, tiles_read

    end = 0
    for ins in instrs:
        for t in (*tiles_read(ins), tile_written(ins)):
            if t is not None:
                end = max(end, t.end)
    return end


def _blocks(total: int) -> list[int]:
    out = sorted({1, 2, 4, 8, total} & set(range(1, total + 1)))
    return out


def _channel_blocks(c: int) -> list[int]:
    out, b = [], c
    while b >= 8 or b == c:
        out.append(b)
        if b % 2:
            break
        b //= 2
    return out


RANK_STEPS = 6  # steps of a candidate plan replayed to rank it


def ranked_cycles(hw: Hardware, instrs: Instrs, steps: int) -> float:
    """A candidate's cycles estimated from its first steps (the loop's steps alike)."""
    from hwsim.gemm_queues import run_queues
    from hwsim.gemv_split import queue_program

    done = len(instrs.steps)
    return run_queues(hw, queue_program(hw, instrs)) * steps / max(1, done)


@functools.cache
def input_plan(
    hw: Hardware, n: int, c: int, m: int, ho: int, wo: int
) -> tuple[InputPlan, int] | None:
    """The input plan that fits SRAM and runs fastest, with its cycles (None: none
    fits). Candidates: per channel block, the most tile rows per step that fit, ranked
    by their first steps; the chosen one is priced whole."""
    th, tw = tiles((ho, wo), m)
    best = None
    for cb in _channel_blocks(c):
        for nb in reversed(_blocks(th)):  # the most tile rows that fit
            p = InputPlan(n, c, m, th, tw, nb, cb)
            instrs = input_instrs(p, "x", "v", limit=hw.sram_bytes, max_steps=RANK_STEPS)
            if instrs.sram > hw.sram_bytes:
                continue
            steps = n * -(-th // nb) * (c // cb)
            rank = ranked_cycles(hw, instrs, steps)
            if best is None or rank < best[1]:
                best = (p, rank)
            break
    if best is None:
        return None
    return best[0], plan_cycles(hw, input_instrs(best[0], "x", "v"))


@functools.cache
def _output_blocks(
    hw: Hardware, n: int, o: int, m: int, ho: int, wo: int
) -> tuple[int, int] | None:
    """(tile rows, output channels) per step of the output transform: the fastest
    candidate (ranked as input_plan's) with the largest epilogue, so that one block
    serves every epilogue."""
    th, _ = tiles((ho, wo), m)
    best = None
    for ob in _channel_blocks(o):
        for nb in reversed(_blocks(th)):  # the most tile rows that fit
            p = OutputPlan(n, o, m, ho, wo, nb, ob, True, True, True)
            instrs = output_instrs(p, "t", "y", "b", "r", limit=hw.sram_bytes, max_steps=RANK_STEPS)
            if instrs.sram > hw.sram_bytes:
                continue
            rank = ranked_cycles(hw, instrs, n * -(-th // nb) * (o // ob))
            if best is None or rank < best[1]:
                best = ((nb, ob), rank)
            break
    return None if best is None else best[0]


@functools.cache
def output_plan(
    hw: Hardware, n: int, o: int, m: int, ho: int, wo: int, epilogue: tuple[bool, bool, bool]
) -> tuple[OutputPlan, int] | None:
    """The output plan of this epilogue and its cycles (None: no block fits SRAM)."""
    blocks = _output_blocks(hw, n, o, m, ho, wo)
    if blocks is None:
        return None
    p = OutputPlan(n, o, m, ho, wo, *blocks, *epilogue)
    bias, res = "b" if p.bias else None, "r" if p.residual else None
    return p, plan_cycles(hw, output_instrs(p, "t", "y", bias, res))


def planned_cost(cycles: int, dram: int, feasible: bool = True) -> KernelCost:
    """A kernel priced by replaying its plan: the cycles are the replay's (all counted as
    compute; nothing reads the split between units), the DRAM bytes what it moves."""
    return KernelCost(
        cycles=cycles,
        compute_cycles=cycles,
        matrix_cycles=0,
        vector_cycles=cycles,
        dma_cycles=0,
        dram_bytes=dram,
        feasible=feasible,
    )


UNFIT = 10**12  # no plan fits SRAM: the backend cannot run it


def input_cost(hw: Hardware, x_shape, m: int, padding, x_channels_last: bool = False) -> KernelCost:
    """The prep (padded NHWC image) and the input transform kernel; x row-major, or
    stored channels-last (the prep then copies it by a strided walk)."""
    from eqsat.spatial_plan import add_costs, image_prep_cost

    n, c, h, w = x_shape
    ho, wo = h + 2 * padding[0] - 2, w + 2 * padding[1] - 2
    th, tw = tiles((ho, wo), m)
    found = input_plan(hw, n, c, m, ho, wo)
    image = (m * th + 2, m * tw + 2)
    pads = (padding[0], padding[1])
    prep = image_prep_cost(hw, tuple(x_shape), ISZ, pads, image, x_channels_last=x_channels_last)
    if found is None:
        return planned_cost(UNFIT, 0, False)
    a = m + 2
    dram = ISZ * (n * (m * th + 2) * (m * tw + 2) * c + a * a * n * th * tw * c)
    return add_costs([prep, planned_cost(found[1], dram)])


def output_cost(hw: Hardware, t_shape, m: int, size, epilogue) -> KernelCost:
    aa, t, o = t_shape
    th, tw = tiles(size, m)
    n = t // (th * tw)
    found = output_plan(hw, n, o, m, int(size[0]), int(size[1]), tuple(epilogue))
    if found is None:
        return planned_cost(UNFIT, 0, False)
    out = n * o * size[0] * size[1]
    dram = ISZ * (aa * t * o + out * (2 if epilogue[1] else 1) + (o if epilogue[0] else 0))
    return planned_cost(found[1], dram)
