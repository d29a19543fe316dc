"""How the backend runs attention, decided once for the backend and the cost model.

softmax(scale * q @ kt + mask) @ v for each batch index (the broadcast leading axes:
batch and heads), in blocks of `rq` query rows; per query block the keys are visited
in blocks of `tk` (flash attention): the scores of one block live in the accumulator
and SRAM only, never in DRAM. Per key block (one pipeline step, `step_ops`):

    s   = scale * q @ kt_blk (+ mask_blk)          matmul into the accumulator, then
                                                    one vector pass out to SRAM
    mx  = rowmax(s); m' = max(m, mx)                the running row maximum, floored
                                                    at -FLT_MAX under a mask, so that
                                                    a block whose row is all -inf
                                                    gives exp(-inf) = 0, not nan
    p   = exp(s - m'); alpha = exp(m - m')
    l   = l * alpha + rowsum(p)
    o   = o * alpha + p @ v_blk                     o stays in the accumulator
    out = o / l                                     after the last key block

With a single key block (T <= tk) the corrections vanish and the program is the
reference softmax (max, subtract, exp, sum) with the division moved after the product.
Everything is computed in f32. kt arrives as the exporters write it, a transposed view
of k ([T, d] rows contiguous in d): the key block is loaded as [tk, d] and turned on
the vector unit (`transpose_k`); a kt whose rows are contiguous loads directly.

Narrow heads leave the array half empty (d = 64 on 128 rows): a step may take `heads`
batch indices side by side, q as [rn, g*d], kt and v block-diagonal ([g*d, g*kn],
[g*kn, g*dv], the off-diagonal blocks zeroed once per kernel by the zero padding of a
one-element load), so one matmul instruction pays the array's fill and drain for g
heads; the row reductions and per-row broadcasts then go head by head over strided
parts of the tiles (`part_region`).

The steps are software-pipelined over the two instruction streams of the machine: the
two matmuls of a step go to the compute queue (the array), everything between and
around them to the vector queue (`step_phases`), and the compute queue runs a step
ahead (the scores of step n + 1 while the vector unit does step n's softmax):

    compute: mm1(0) | mm1(1) mm2(0) | mm1(2) mm2(1) | ...
    vector:  pre(0) | pre(1) sm(0)  | pre(2) sm(1) post(0) | ...

so the softmax passes hide behind the matmuls of the neighbouring steps (or the
other way round where the vector unit is the busier: a narrow array). Scores,
probabilities, transposed keys, statistics and the output accumulator have two slots
(steps and streams alternate), and the keys' and values' channels are released by
their last reader (the softmax, the second matmul) so the next loads start early.

The tile program is data (`step_phases`: ops over named tiles) and so is the order of
the pipeline's parts (`attention_steps`, `step_events`): the backend emits them one to
one, eqsat/attention_queues.py replays the same instructions on the simulator's
queues, and eqsat/attention_price.py chooses the tile shape (query rows, keys, heads
per step) among those whose tiles fit SRAM and the accumulator.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eqsat.ir.types import TensorType
from hwsim import timing
from hwsim.costmodel import (
    pow2_multiples,
)
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware

ACC_BYTES = 4  # f32 scores and statistics
TILE_ALIGN = 64  # bytes: every tile starts on this boundary (backend/emit.py)
NEG_FLOOR = -3.4028234663852886e38  # -FLT_MAX: the running maximum's floor under a mask
MASK_NONE, MASK_ROW, MASK_FULL = "none", "row", "full"
ATTENTION_OPS = ("attention", "attention_masked")  # the registry ops this kernel runs


@dataclass(frozen=True)
class AttnShape:
    """One attention kernel: `batch` independent (q, k, v) problems of S queries and T
    keys, d-wide scores and dv-wide values. mask: none, one row of T broadcast over the
    queries, or a full S x T block per batch index."""

    batch: int
    s: int
    t: int
    d: int
    dv: int
    dtype: str = "f32"
    mask: str = MASK_NONE
    scale: float = 1.0
    transpose_k: bool = True


@dataclass(frozen=True)
class AttnPlan:
    rq: int  # query rows per block
    tk: int  # keys per block
    heads: int = 1  # batch indices per step, block-diagonal in one pair of matmuls
    out_t: bool = False  # the second product transposed, head by head (`step_ops`)


@dataclass(frozen=True)
class AttnOp:
    """One instruction of the tile program over named tiles (see `tile_dims`):
    kind matmul (dst += / = a @ b), transpose, move, unary, binary, reduce."""

    kind: str
    op: str
    dst: str
    a: str
    b: str | None = None
    imm: float | None = None
    bcast: str = "none"
    mode: str = "overwrite"
    part: int | None = None  # one head's part of every tile (`part_region`), else whole


def step_ops(
    s: AttnShape, first: bool, last: bool, heads: int = 1, out_t: bool = False
) -> list[AttnOp]:
    """The compute instructions of one key block, in order. With several heads per
    step the two matmuls and the elementwise passes cover all of them at once (kt and
    v are block-diagonal); row reductions and per-row broadcasts go head by head.

    out_t: the second product transposed, o^T = v^T @ p^T head by head (the vector
    unit turns p and v; the statistics' rescale broadcasts a turned alpha along rows;
    the division turns o back). The array then streams dv rows with the keys deep and
    the queries wide, instead of rq rows into dv columns: where dv fills half the
    array's width (d = 64 on 128 columns) that halves the product's streaming."""
    hs = range(heads)
    ops: list[AttnOp] = []
    if s.transpose_k:
        ops += [AttnOp("transpose", "transpose", "kt", "k", part=h) for h in hs]
    ops.append(AttnOp("matmul", "matmul", "sacc", "q", "kt"))
    if s.scale == 1.0:
        ops.append(AttnOp("move", "move", "s", "sacc"))
    else:
        ops.append(AttnOp("binary", "mul", "s", "sacc", imm=s.scale))
    if s.mask != MASK_NONE:
        ops.append(
            AttnOp("binary", "add", "s", "s", "mask", bcast="row" if s.mask == MASK_ROW else "none")
        )
    if first:
        ops += [AttnOp("reduce", "max", "m", "s", part=h) for h in hs]
        if s.mask != MASK_NONE:
            ops.append(AttnOp("binary", "max", "m", "m", imm=NEG_FLOOR))
    else:
        ops += [AttnOp("reduce", "max", "mx", "s", part=h) for h in hs]
        ops += [
            AttnOp("binary", "max", "mx", "m", "mx"),
            AttnOp("binary", "sub", "alpha", "m", "mx"),
            AttnOp("unary", "exp", "alpha", "alpha"),
            AttnOp("unary", "copy", "m", "mx"),
        ]
    ops += [AttnOp("binary", "sub", "s", "s", "m", bcast="col", part=h) for h in hs]
    ops.append(AttnOp("unary", "exp", "s", "s"))
    if first:
        ops += [AttnOp("reduce", "sum", "l", "s", part=h) for h in hs]
    else:
        ops += [AttnOp("reduce", "sum", "rs", "s", part=h) for h in hs]
        ops += [
            AttnOp("binary", "mul", "l", "l", "alpha"),
            AttnOp("binary", "add", "l", "l", "rs"),
        ]
    mode = "overwrite" if first else "accumulate"
    if out_t:
        ops += [AttnOp("transpose", "transpose", t, n, part=h) for n, t in _TURNED for h in hs]
        if not first:
            ops.append(AttnOp("transpose", "transpose", "alphat", "alpha"))
            ops += [
                AttnOp("binary", "mul", "oacc", "oacc", "alphat", bcast="row", part=h) for h in hs
            ]
        ops += [AttnOp("matmul", "matmul", "oacc", "vt", "pt", mode=mode, part=h) for h in hs]
        if last:
            ops += [AttnOp("transpose", "transpose", "out", "oacc", part=h) for h in hs]
            ops += [AttnOp("binary", "div", "out", "out", "l", bcast="col", part=h) for h in hs]
        return ops
    if not first:
        ops += [AttnOp("binary", "mul", "oacc", "oacc", "alpha", bcast="col", part=h) for h in hs]
    ops.append(AttnOp("matmul", "matmul", "oacc", "s", "v", mode=mode))
    if last:
        ops += [AttnOp("binary", "div", "out", "oacc", "l", bcast="col", part=h) for h in hs]
    return ops


def rescales_output(op: AttnOp) -> bool:
    """Does `op` rescale the output accumulator (o * alpha)? The first such op of a step
    waits until the previous step's second product has written it."""
    return op.dst == "oacc" and op.kind != "matmul"


_TURNED = (("s", "pt"), ("v", "vt"))  # out_t: p and v turned for the transposed product


PHASES = ("pre", "mm1", "sm", "mm2", "post")  # of a step, alternately vector and compute


def step_phases(
    s: AttnShape, first: bool, last: bool, heads: int = 1, out_t: bool = False
) -> list[list[AttnOp]]:
    """`step_ops` cut at its matmuls: [pre, mm1, sm, mm2, post] (PHASES), the matmuls
    (the second product: one per head with out_t) on the compute queue, the rest on
    the vector queue."""
    ops = step_ops(s, first, last, heads, out_t)
    idx = [n for n, op in enumerate(ops) if op.kind == "matmul"]
    i, j, k = idx[0], idx[1], idx[-1]
    return [ops[:i], [ops[i]], ops[i + 1 : j], ops[j : k + 1], ops[k + 1 :]]


STATS = ("m", "mx", "alpha", "rs", "l")  # one f32 column per head
F32_TILES = ("s", "pt", "alphat", *STATS)  # in SRAM whatever the operands' dtype


def tile_dims(
    s: AttnShape, rn: int, kn: int, heads: int = 1, out_t: bool = False
) -> dict[str, tuple[int, int]]:
    """rows x cols of every named tile for a block of rn queries and kn keys of `heads`
    heads side by side (kt and v block-diagonal; with out_t v side by side, turned
    head by head into vt, p into pt, the output accumulated turned)."""
    g = heads
    dims = {
        "q": (rn, g * s.d),
        "k": (kn, g * s.d),
        "kt": (g * s.d, g * kn),
        "v": (g * kn, g * s.dv),
        "mask": (1 if s.mask == MASK_ROW else rn, g * kn),
        "sacc": (rn, g * kn),
        "s": (rn, g * kn),
        **{n: (rn, g) for n in STATS},
        "oacc": (rn, g * s.dv),
        "out": (rn, g * s.dv),
    }
    if out_t:
        dims |= {"v": (kn, g * s.dv), "vt": (g * s.dv, kn), "pt": (g * kn, rn)}
        dims |= {"alphat": (g, rn), "oacc": (g * s.dv, rn)}
    return dims


def part_region(
    s: AttnShape, name: str, h: int, rn: int, kn: int, out_t: bool = False
) -> tuple[int, int, int, int]:
    """(row, col, rows, cols) of head h's part of tile `name`."""
    mr = 1 if s.mask == MASK_ROW else rn
    if out_t and name in ("v", "vt", "pt", "alphat", "oacc"):
        return {
            "v": (0, h * s.dv, kn, s.dv),
            "vt": (h * s.dv, 0, s.dv, kn),
            "pt": (h * kn, 0, kn, rn),
            "alphat": (h, 0, 1, rn),
            "oacc": (h * s.dv, 0, s.dv, rn),
        }[name]
    return {
        "q": (0, h * s.d, rn, s.d),
        "k": (0, h * s.d, kn, s.d),
        "kt": (h * s.d, h * kn, s.d, kn),
        "v": (h * kn, h * s.dv, kn, s.dv),
        "mask": (0, h * kn, mr, kn),
        "sacc": (0, h * kn, rn, kn),
        "s": (0, h * kn, rn, kn),
        **{n: (0, h, rn, 1) for n in STATS},
        "oacc": (0, h * s.dv, rn, s.dv),
        "out": (0, h * s.dv, rn, s.dv),
    }[name]


def op_gemv(hw: Hardware, s: AttnShape, op: AttnOp, dims: Mapping[str, tuple[int, int]]) -> bool:
    """Whether a matmul of the tile program runs on the vector unit instead of the array
    (hwsim.timing.gemv_on_vector; backend/gemm.py gemv_step, which overwrites its B
    tile): one query row (a decode step), one head per step (the block-diagonal tiles
    of several keep zero blocks that an in-place GEMV would overwrite)."""
    if op.kind != "matmul" or dims["q"][1] != s.d:
        return False
    (m, k), (_, n) = dims[op.a], dims[op.b]  # type: ignore[index]
    return timing.gemv_on_vector(hw, s.dtype, m, n, k)


def op_cycles(
    hw: Hardware,
    s: AttnShape,
    op: AttnOp,
    dims: Mapping[str, tuple[int, int]],
    rn: int,
    kn: int,
    out_t: bool = False,
) -> int:
    """What one instruction of the tile program costs (hwsim.timing)."""
    if op.part is not None:
        names = (op.dst, op.a, *([op.b] if op.b is not None else []))
        dims = {**dims, **{n: part_region(s, n, op.part, rn, kn, out_t)[2:] for n in names}}
    rows, cols = dims[op.dst]
    if op.kind == "matmul":
        (m, k), (_, n) = dims[op.a], dims[op.b]  # type: ignore[index]
        if op_gemv(hw, s, op, dims):
            return timing.gemv_cycles(hw, n, k)
        return timing.matmul_cycles(hw, s.dtype, m, n, k)
    if op.kind == "reduce":
        return timing.reduce_cycles(hw, *dims[op.a])
    return timing.vector_cycles(hw, rows * cols, op.op)


# ------------------------------------------------------------------ memory


def sram_tiles(s: AttnShape, plan: AttnPlan) -> list[tuple[str, int, int, int]]:
    """(name, rows, cols, slots) of the SRAM tiles the kernel allocates: two of each
    (loads double-buffered; steps and streams of the pipeline alternate)."""
    dims = tile_dims(s, plan.rq, plan.tk, plan.heads, plan.out_t)
    names = ["q", "v", *(["k"] if s.transpose_k else []), "kt"]
    names += [*(["mask"] if s.mask != MASK_NONE else []), "s", *STATS, "out"]
    names += ["vt", "pt", "alphat"] if plan.out_t else []
    return [(n, *dims[n], 2) for n in names]


def _aligned(nbytes: int) -> int:
    return -(-nbytes // TILE_ALIGN) * TILE_ALIGN


def sram_bytes(s: AttnShape, plan: AttnPlan) -> int:
    """SRAM the kernel needs, every tile aligned as the backend's allocator does."""
    isz = ITEMSIZE[s.dtype]
    total = 0
    for name, rows, cols, slots in sram_tiles(s, plan):
        size = ACC_BYTES if name in F32_TILES else isz
        total += slots * _aligned(rows * cols * size)
    return total


def acc_bytes(s: AttnShape, plan: AttnPlan) -> int:
    """Two slots each of the scores and the output accumulators."""
    g = plan.heads
    one = _aligned(plan.rq * g * plan.tk * ACC_BYTES) + _aligned(plan.rq * g * s.dv * ACC_BYTES)
    return 2 * one


def fits(hw: Hardware, s: AttnShape, plan: AttnPlan) -> bool:
    return sram_bytes(s, plan) <= hw.sram_bytes and acc_bytes(s, plan) <= hw.acc_bytes


def key_blocks(t: int, tk: int) -> list[tuple[int, bool, bool]]:
    """(keys, first, last) of each key block of one query block, in order."""
    starts = range(0, t, tk)
    return [(min(tk, t - k0), k0 == 0, k0 + tk >= t) for k0 in starts]


def zero_tiles(s: AttnShape, plan: AttnPlan) -> list[str]:
    """Tiles whose off-diagonal blocks are zeroed once at the start of the kernel (a
    one-element load zero-pads the rest of its tile): both slots of the block-diagonal
    kt and v (v side by side with out_t)."""
    if plan.heads == 1:
        return []
    return ["kt", "kt"] if plan.out_t else ["v", "v", "kt", "kt"]


def pipelined(hw: Hardware, s: AttnShape, plan: AttnPlan) -> bool:
    """Whether the steps overlap on the two queues: not where the matmuls run on the
    vector unit too (one query row, op_gemv), which then takes every step in turn."""
    dims = tile_dims(s, min(plan.rq, s.s), min(plan.tk, s.t), plan.heads)
    return not op_gemv(hw, s, step_phases(s, True, True, plan.heads)[1][0], dims)


# ------------------------------------------------------------------ the loop


@dataclass(frozen=True)
class AttnStep:
    """One key block of one query block of one group of `heads` batch indices: the
    unit of the pipeline. `stream`: the query block of a head group (the steps sharing
    q, the statistics and the output tile)."""

    group: int  # first batch index of the group
    r0: int
    rn: int
    k0: int
    kn: int
    first: bool
    last: bool
    stream: int


def attention_steps(s: AttnShape, plan: AttnPlan, groups: int | None = None) -> list[AttnStep]:
    """The steps in the order the backend runs them: head groups, query blocks, key
    blocks (`groups`: only the first so many head groups)."""
    n = s.batch // plan.heads if groups is None else groups
    steps, stream = [], 0
    for gi in range(n):
        for r0 in range(0, s.s, plan.rq):
            rn, k0 = min(plan.rq, s.s - r0), 0
            for kn, first, last in key_blocks(s.t, plan.tk):
                steps.append(AttnStep(gi * plan.heads, r0, rn, k0, kn, first, last, stream))
                k0 += kn
            stream += 1
    return steps


def step_events(lasts: Sequence[bool], overlap: bool) -> list[tuple[str, int]]:
    """The program order of the pipeline's parts, (part, step): "k" the keys' loads
    (two steps ahead: their slot is free once turned), "rest" q at a stream's first
    step, mask and v (one step ahead), "front" the keys' transpose and the first
    matmul, "back" the softmax and the second matmul, "post" the division and the
    store of a stream's last step. `lasts`: whether each step ends its stream.
    Pipelined (`overlap`), step n + 1's front comes before step n's back; otherwise
    one step after the other."""
    n_steps = len(lasts)
    events = [("k", 0), ("rest", 0), *([("k", 1)] if n_steps > 1 else [])]
    if not overlap:
        for n in range(n_steps):
            events += [("k", n + 2)] if n + 2 < n_steps else []
            events += [("rest", n + 1)] if n + 1 < n_steps else []
            events += [("front", n), ("back", n)] + ([("post", n)] if lasts[n] else [])
        return events
    events.append(("front", 0))
    for n in range(n_steps):
        events += [("k", n + 2)] if n + 2 < n_steps else []
        events += [("rest", n + 1), ("front", n + 1)] if n + 1 < n_steps else []
        events.append(("back", n))
        events += [("post", n - 1)] if n >= 1 and lasts[n - 1] else []
    return [*events, ("post", n_steps - 1)]


def head_groups(hw: Hardware, s: AttnShape, tk: int) -> list[int]:
    """Heads per step: 1, or a power of two dividing the batch whose block-diagonal kt
    and v still fit one array pass in depth and width (g * d <= R, g * dv <= C), with
    whole key blocks only (a block-diagonal tile keeps its layout)."""
    out, g = [1], 2
    if s.t % tk:
        return out
    while s.batch % g == 0 and g * s.d <= hw.array_rows and g * s.dv <= hw.array_cols:
        out.append(g)
        g *= 2
    return out


def candidates(hw: Hardware, s: AttnShape) -> list[AttnPlan]:
    """Tile shapes that fit: powers of two (and the whole extent) of query rows and of
    keys, down to one (wide heads on a small scratchpad), by heads per step, with the
    second product as written or (f32) transposed."""
    turns = (False, True) if s.dtype == "f32" else (False,)
    return [
        p
        for rq in pow2_multiples(1, s.s)
        for tk in pow2_multiples(1, s.t)
        for g in head_groups(hw, s, tk)
        for out_t in turns
        if fits(hw, s, p := AttnPlan(rq, tk, g, out_t))
    ]


def attention_shape(
    in_types: Sequence[TensorType], out: TensorType, scale: float, transpose_k: bool = True
) -> AttnShape:
    """The AttnShape of attention(q, kt, v[, mask]) with result type `out`."""
    q, kt, v = in_types[:3]
    mask = MASK_NONE
    if len(in_types) > 3:
        m = in_types[3]
        mask = MASK_ROW if m.rank < 2 or m.shape[-2] == 1 else MASK_FULL
    return AttnShape(
        batch=math.prod(out.shape[:-2]),
        s=q.shape[-2],
        t=kt.shape[-1],
        d=q.shape[-1],
        dv=v.shape[-1],
        dtype=q.dtype.value,
        mask=mask,
        scale=float(scale),
        transpose_k=transpose_k,
    )
