"""MLIR of the Winograd ops (eqsat/ops/winograd.py): each transform is one
linalg.generic contracting the tiles with the constant Kronecker product of its
transform matrix (B^T x B^T for the input, G x G for the weights, A^T x A^T for the
output), the tiles read through affine maps (tile row * m + i); hwsim runs the
separable additions instead (eqsat/winograd_plan.py). Static shapes only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from eqsat.ops.winograd import AT, BT, G, tiles

from .contract import _finish, _mac
from .core import Val, affine_map
from .layout import collapse_to, expand_to, pad_value, slice_val

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def _kron(mat: np.ndarray) -> np.ndarray:
    """K[x, y, i, j] = mat[x, i] * mat[y, j]."""
    return np.einsum("xi,yj->xyij", mat, mat).astype(np.float32)


def _contract(em: Emitter, ins, maps, shape, dims: int, ap: Apply) -> Val:
    init = em.func.filled(0, shape, "f32")
    return em.func.generic(
        ins,
        maps,
        shape,
        "f32",
        ["parallel"] * (dims - 2) + ["reduction"] * 2,
        lambda body: _mac(body, "f32"),
        ap.hint,
        init=init,
        out_map=affine_map(dims, [f"d{k}" for k in range(dims - 2)]),
    )


def emit_winograd_input(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    (x,) = args
    m = int(ap.attrs["m"])
    ph, pw = (int(p) for p in ap.attrs["padding"])
    n, c, h, w = x.shape
    th, tw = tiles((h + 2 * ph - 2, w + 2 * pw - 2), m)
    rows, cols = m * th + 2, m * tw + 2
    xp = pad_value(em, x, (0, 0, ph, pw), (0, 0, rows - h - ph, cols - w - pw), 0.0, ap.hint)
    k = em.func.constant(_kron(BT[m]), "f32", f"{ap.hint}_bt")
    a = m + 2
    # dims: x y n ty tx c | i j
    xmap = affine_map(8, ["d2", "d5", f"d3 * {m} + d6", f"d4 * {m} + d7"])
    kmap = affine_map(8, ["d0", "d1", "d6", "d7"])
    v = _contract(em, [xp, k], [xmap, kmap], (a, a, n, th, tw, c), 8, ap)
    return _finish(em, collapse_to(em, v, ap.shape, ap.hint), ap)


def emit_winograd_weight(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    (w,) = args
    m = int(ap.attrs["m"])
    o, c = w.shape[:2]
    a = m + 2
    k = em.func.constant(_kron(G[m]), "f32", f"{ap.hint}_g")
    # dims: x y c o | i j
    wmap = affine_map(6, ["d3", "d2", "d4", "d5"])
    kmap = affine_map(6, ["d0", "d1", "d4", "d5"])
    u = _contract(em, [w, k], [wmap, kmap], (a, a, c, o), 6, ap)
    return _finish(em, collapse_to(em, u, ap.shape, ap.hint), ap)


def emit_winograd_output(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    (t,) = args
    m = int(ap.attrs["m"])
    ho, wo = (int(s) for s in ap.attrs["size"])
    th, tw = tiles((ho, wo), m)
    a, o = m + 2, t.shape[2]
    n = t.shape[1] // (th * tw)
    t6 = expand_to(em, t, (a, a, n, th, tw, o), ap.hint)
    k = em.func.constant(_kron(AT[m]), "f32", f"{ap.hint}_at")
    # dims: n o ty r tx s | x y
    tmap = affine_map(8, ["d6", "d7", "d0", "d2", "d4", "d1"])
    kmap = affine_map(8, ["d3", "d5", "d6", "d7"])
    y = _contract(em, [t6, k], [tmap, kmap], (n, o, th, m, tw, m), 8, ap)
    y = collapse_to(em, y, (n, o, th * m, tw * m), ap.hint)
    return _finish(em, slice_val(em, y, (0, 0, 0, 0), ap.shape, ap.hint), ap)


WINOGRAD_EMITTERS = {
    "winograd_input": emit_winograd_input,
    "winograd_weight": emit_winograd_weight,
    "winograd_output": emit_winograd_output,
}
