"""--emit mlir-tiled: the GEMM tiles extraction chose (a node's `tile` = [TM, TN, TK])
as loops: scf.for over the rows and the columns of [TM, TN] output tiles
(tensor.extract_slice of the rows of x, the columns of w and the epilogue operands'
matching slices; the tile's result put back with tensor.insert_slice, the output
carried by iter_args), and inside them scf.for over K in steps of TK around a
linalg.matmul per step, then the kernel's epilogue on the tile. (scf.forall would say
the tiles are independent, but IREE 3.13 crashes on an scf.forall outside a
dispatch, so the loops are sequential scf.for.)

A tile that does not divide M, N or K leaves that axis untiled (a comment in the
output says so); other ops are emitted as by --emit mlir."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from eqsat.ops import REGISTRY
from eqsat.ops.fused import contraction_of

from .core import Apply, Val, tensor_type
from .layout import collapse_to, expand_to, reshape_val

if TYPE_CHECKING:
    from .emitter import Emitter


def tileable(ap: Apply, args: list[Val]) -> bool:
    """A float product by a 2-D weight ([..., M, K] @ [K, N], alone or with an epilogue)
    that carries an extracted tile."""
    tile = tuple(ap.attrs.get("tile", ()))
    if len(tile) != 3 or contraction_of(ap.op) != "matmul" or len(args) < 2:
        return False
    names = REGISTRY[ap.op].operands
    x, w = args[0], args[1]
    return (
        names[:2] in (("a", "b"), ("x", "w"))
        and w.rank == 2
        and x.rank >= 2
        and x.dtype == w.dtype == "f32"
        and ap.dtype == "f32"
    )


def emit_tiled(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    from .table import EMITTERS

    func = em.func
    x, w, *epilogue = args
    m, k, n = math.prod(x.shape[:-1]), x.shape[-1], w.shape[1]
    tm, tn, tk = (int(t) for t in ap.attrs["tile"])
    notes = []
    if m % tm:
        notes.append(f"TM={tm} does not divide M={m}: untiled along rows")
        tm = m
    if n % tn:
        notes.append(f"TN={tn} does not divide N={n}: untiled along columns")
        tn = n
    if k % tk:
        notes.append(f"TK={tk} does not divide K={k}: one product over all of K")
    for note in notes:
        func.lines.append(f"// {ap.hint}: {note}")
    if (tm, tn) == (m, n):  # one output tile: only the K loop
        em.tiled, em.k_tile = False, tk
        try:
            return EMITTERS[ap.op](em, ap, args)
        finally:
            em.tiled, em.k_tile = True, 0
    x2 = collapse_to(em, x, (m, k), ap.hint)
    epi2 = [_as_matrix(em, v, ap.shape, ap.hint) for v in epilogue]
    out_t = tensor_type((m, n), ap.dtype)
    init = func.empty((m, n), ap.dtype)
    zero, rows, cols, step_m, step_n = (
        func.emit(f"arith.constant {v} : index", "c") for v in (0, m, n, tm, tn)
    )
    i, j, outer, inner = func.fresh("i"), func.fresh("j"), func.fresh("acc"), func.fresh("acc")
    name, row = func.fresh(ap.hint), func.fresh(f"{ap.hint}.row")
    func.lines.append(
        f"{name} = scf.for {i} = {zero} to {rows} step {step_m} iter_args({outer} = {init}) "
        f"-> ({out_t}) {{"
    )
    with func.indented():
        func.lines.append(
            f"{row} = scf.for {j} = {zero} to {cols} step {step_n} iter_args({inner} = {outer}) "
            f"-> ({out_t}) {{"
        )
    with func.indented(), func.indented():
        x_t = _slice(em, x2, (i, "0"), (tm, k), f"{ap.hint}.rows")
        w_t = _slice(em, w, ("0", j), (k, tn), f"{ap.hint}.cols")
        epi_t = [
            _slice(
                em,
                v,
                (i if v.shape[0] == m else "0", j if v.shape[1] == n else "0"),
                (tm if v.shape[0] == m else 1, tn if v.shape[1] == n else 1),
                f"{ap.hint}.epilogue",
            )
            for v in epi2
        ]
        sub = Apply(ap.op, ap.attrs, (tm, tn), ap.dtype, f"{ap.hint}.tile")
        em.tiled, em.k_tile = False, tk
        try:
            tile = EMITTERS[ap.op](em, sub, [x_t, w_t, *epi_t])
        finally:
            em.tiled, em.k_tile = True, 0
        placed = func.emit(
            f"tensor.insert_slice {tile.name} into {inner}[{i}, {j}] [{tm}, {tn}] [1, 1] : "
            f"{tile.type} into {out_t}",
            f"{ap.hint}.placed",
        )
        func.lines.append(f"scf.yield {placed} : {out_t}")
    with func.indented():
        func.lines.append(f"}}{func.loc}")
        func.lines.append(f"scf.yield {row} : {out_t}")
    func.lines.append(f"}}{func.loc}")
    return expand_to(em, Val(name, (m, n), ap.dtype), ap.shape, ap.hint)


def _slice(em: Emitter, v: Val, offsets, sizes, hint: str) -> Val:
    if tuple(sizes) == v.shape and all(o == "0" for o in offsets):
        return v
    t = tensor_type(sizes, v.dtype)
    name = em.func.emit(
        f"tensor.extract_slice {v.name}[{', '.join(map(str, offsets))}] "
        f"[{', '.join(map(str, sizes))}] [1, 1] : {v.type} to {t}",
        hint,
    )
    return Val(name, tuple(sizes), v.dtype)


def _as_matrix(em: Emitter, v: Val, out_shape, hint: str) -> Val:
    """An epilogue operand (broadcasting to out_shape [..., M, N]) as an [R, C] matrix
    with R in (1, M) and C in (1, N), read the same way by a [M, N] tile."""
    rank = len(out_shape)
    shape = (1,) * (rank - v.rank) + v.shape
    v = reshape_val(em, v, shape, hint) if shape != v.shape else v
    lead, lead_out = shape[:-1], out_shape[:-1]
    if all(d == 1 for d in lead):
        return reshape_val(em, v, (1, shape[-1]), hint)
    if tuple(lead) != tuple(lead_out):  # broadcast over some leading axes: materialize
        from .layout import emit_broadcast

        full = (*lead_out, shape[-1])
        v = emit_broadcast(em, Apply("broadcast", {"shape": full}, full, v.dtype, hint), [v])
    return reshape_val(em, v, (math.prod(lead_out), shape[-1]), hint)
