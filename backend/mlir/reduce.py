"""Reductions and normalizations as linalg.generic: a reduction generic over the
reduced axes (floats accumulate in f32) and elementwise generics reading the reduced
value through a projected map; pooling as linalg.pooling_nchw_max or a window-sum
generic."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.spatial import lowest, window2d

from .core import Body, Val, affine_map, identity_map, is_float, tensor_type
from .ewise import convert
from .layout import expand_to, pad_value, slice_val
from .scalar import WIDE, Scalar, narrow, widen

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def reduce_val(
    em: Emitter,
    x: Val,
    axes: Sequence[int],
    kind: str,
    hint: str,
    term: Callable[[Body, Scalar], Scalar] | None = None,
) -> Val:
    """x reduced over `axes` (dropped from the shape): kind sum or max; floats in f32,
    integer sums exactly in i64 (the caller narrows, saturating).
    `term` maps each element before it is accumulated (x*x for a mean square)."""
    rank = x.rank
    kept = [d for d in range(rank) if d not in axes]
    order = kept + list(axes)  # iteration dims: kept (parallel), then reduced
    acc_type = "f32" if is_float(x.dtype) else (WIDE if kind == "sum" else x.dtype)
    shape = tuple(x.shape[d] for d in kept)
    in_map = affine_map(rank, [f"d{order.index(d)}" for d in range(rank)])
    out_map = affine_map(rank, [f"d{i}" for i in range(len(kept))])
    if kind == "sum":
        start: float | int = 0.0 if acc_type == "f32" else 0
    else:
        start = (
            float(lowest(DType.F32)) if acc_type == "f32" else int(lowest(DType.parse(acc_type)))
        )
    init = em.func.filled(start, shape, acc_type)

    def body(b: Body) -> str:
        v = b.args[0]
        if term is not None:
            v = term(b, v)
        if acc_type == "f32":
            value = b.to_float(v[0], v[1])
        else:
            value = widen(b, v[0], v[1]) if acc_type == WIDE else v[0]
        acc = b.args[-1][0]
        if kind == "sum":
            return b.op(
                f"arith.{'addf' if acc_type == 'f32' else 'addi'} {acc}, {value} : {acc_type}"
            )
        return b.op(
            f"arith.{'maximumf' if acc_type == 'f32' else 'maxsi'} {acc}, {value} : {acc_type}"
        )

    return em.func.generic(
        [x],
        [in_map],
        shape,
        acc_type,
        ["parallel"] * len(kept) + ["reduction"] * len(axes),
        body,
        hint,
        init=init,
        out_map=out_map,
    )


def _kept_map(rank: int, axes: Sequence[int]) -> str:
    return affine_map(rank, [f"d{d}" for d in range(rank) if d not in axes])


def ewise_with_reduced(
    em: Emitter,
    full: Sequence[Val],
    reduced: Sequence[Val],
    axes: Sequence[int],
    dtype: str,
    body: Callable[[Body, list[Scalar]], Scalar],
    hint: str,
    extra: Sequence[tuple[Val, str]] = (),
) -> Val:
    """A parallel generic over full[0]'s shape reading `full` as is, `reduced` (values
    of reduce_val over `axes`) broadcast back, and `extra` (value, map) pairs."""
    shape = full[0].shape
    rank = len(shape)
    ins = [*full, *reduced, *(v for v, _ in extra)]
    maps = (
        [identity_map(rank)] * len(full)
        + [_kept_map(rank, axes)] * len(reduced)
        + [m for _, m in extra]
    )

    def write(b: Body) -> str:
        return narrow(b, body(b, list(b.args[: len(ins)])), dtype)

    return em.func.generic(ins, maps, shape, dtype, ["parallel"] * rank, write, hint)


def emit_reduce(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    axes = tuple(ap.attrs["axes"]) or tuple(range(x.rank))
    kind = "max" if ap.op == "reduce_max" else "sum"
    acc = reduce_val(em, x, axes, kind, ap.hint)
    if ap.op == "reduce_mean":
        count = float(np.prod([x.shape[a] for a in axes]))

        def mean(b: Body) -> str:
            q = b.op(f"arith.divf {b.args[0][0]}, {b.const(count, 'f32')} : f32")
            return narrow(b, (q, "f32"), ap.dtype)

        acc = em.func.generic(
            [acc],
            [identity_map(acc.rank)],
            acc.shape,
            ap.dtype,
            ["parallel"] * acc.rank,
            mean,
            ap.hint,
        )
    elif acc.dtype != ap.dtype:
        acc = convert(em, acc, ap.dtype, ap.hint)
    return expand_to(em, acc, ap.shape, ap.hint)


def emit_softmax(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    axes = (int(ap.attrs["axis"]),)
    peak = reduce_val(em, x, axes, "max", f"{ap.hint}_max")

    def shifted_exp(b: Body, xs: list[Scalar]) -> Scalar:
        d = b.op(f"arith.subf {b.to_float(*xs[0])}, {xs[1][0]} : f32")
        return b.op(f"math.exp {d} : f32"), "f32"

    e = ewise_with_reduced(em, [x], [peak], axes, "f32", shifted_exp, f"{ap.hint}_exp")
    total = reduce_val(em, e, axes, "sum", f"{ap.hint}_sum")

    def divide(b: Body, xs: list[Scalar]) -> Scalar:
        return b.op(f"arith.divf {xs[0][0]}, {xs[1][0]} : f32"), "f32"

    return ewise_with_reduced(em, [e], [total], axes, ap.dtype, divide, ap.hint)


def _mean(b: Body, s: Scalar, n: int) -> str:
    return b.op(f"arith.divf {s[0]}, {b.const(float(n), 'f32')} : f32")


def emit_layernorm(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x, gamma, beta = args
    last = x.rank - 1
    axes, d = (last,), x.shape[-1]
    total = reduce_val(em, x, axes, "sum", f"{ap.hint}_sum")

    def center(b: Body, xs: list[Scalar]) -> Scalar:
        return b.op(f"arith.subf {b.to_float(*xs[0])}, {_mean(b, xs[1], d)} : f32"), "f32"

    centered = ewise_with_reduced(em, [x], [total], axes, "f32", center, f"{ap.hint}_centered")

    def square(b: Body, v: Scalar) -> Scalar:
        return b.op(f"arith.mulf {v[0]}, {v[0]} : f32"), "f32"

    squares = reduce_val(em, centered, axes, "sum", f"{ap.hint}_var", term=square)
    eps = float(np.float32(ap.attrs["eps"]))
    last_map = affine_map(x.rank, [f"d{last}"])

    def normalize(b: Body, xs: list[Scalar]) -> Scalar:
        c, var, g, bb = xs
        v = b.op(f"arith.addf {_mean(b, var, d)}, {b.const(eps, 'f32')} : f32")
        root = b.op(f"math.sqrt {v} : f32")
        y = b.op(f"arith.divf {c[0]}, {root} : f32")
        y = b.op(f"arith.mulf {y}, {b.to_float(*g)} : f32")
        return b.op(f"arith.addf {y}, {b.to_float(*bb)} : f32"), "f32"

    return ewise_with_reduced(
        em,
        [centered],
        [squares],
        axes,
        ap.dtype,
        normalize,
        ap.hint,
        extra=[(gamma, last_map), (beta, last_map)],
    )


def emit_rmsnorm(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x, gamma = args
    last = x.rank - 1
    axes, d = (last,), x.shape[-1]

    def square(b: Body, v: Scalar) -> Scalar:
        f = b.to_float(*v)
        return b.op(f"arith.mulf {f}, {f} : f32"), "f32"

    squares = reduce_val(em, x, axes, "sum", f"{ap.hint}_ms", term=square)
    eps = float(np.float32(ap.attrs["eps"]))

    def normalize(b: Body, xs: list[Scalar]) -> Scalar:
        v, ms, g = xs
        m = b.op(f"arith.addf {_mean(b, ms, d)}, {b.const(eps, 'f32')} : f32")
        root = b.op(f"math.sqrt {m} : f32")
        inv = b.op(f"arith.divf {b.const(1.0, 'f32')}, {root} : f32")
        y = b.op(f"arith.mulf {b.to_float(*v)}, {inv} : f32")
        return b.op(f"arith.mulf {y}, {b.to_float(*g)} : f32"), "f32"

    return ewise_with_reduced(
        em,
        [x],
        [squares],
        axes,
        ap.dtype,
        normalize,
        ap.hint,
        extra=[(gamma, affine_map(x.rank, [f"d{last}"]))],
    )


def _windowed(em: Emitter, x: Val, ap: Apply, fill: float | int) -> tuple[Val, object]:
    """x cut and padded to exactly the rows and columns the windows touch."""
    g = window2d(ap.op, TensorType(DType.parse(x.dtype), x.shape), ap.attrs)
    n, c, h, w = x.shape
    top, left = g.pads[0], g.pads[1]
    hh, ww = min(h, max(0, g.rows - top)), min(w, max(0, g.cols - left))
    x = slice_val(em, x, (0, 0, 0, 0), (n, c, hh, ww), ap.hint)
    x = pad_value(
        em, x, (0, 0, top, left), (0, 0, g.rows - top - hh, g.cols - left - ww), fill, ap.hint
    )
    return x, g


def emit_max_pool(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    low = lowest(DType.parse(x.dtype) if x.dtype != "bf16" else DType.F32)
    fill = float(low) if is_float(x.dtype) else int(low)
    xp, g = _windowed(em, x, ap, fill)
    func = em.func
    shape = tuple(ap.shape)
    init = func.filled(fill, shape, ap.dtype)
    window = func.empty(g.kernel, ap.dtype)
    t = tensor_type(shape, ap.dtype)
    (sh, sw), (dh, dw) = g.stride, g.dilation
    name = func.emit(
        f"linalg.pooling_nchw_max {{dilations = dense<[{dh}, {dw}]> : tensor<2xi64>, "
        f"strides = dense<[{sh}, {sw}]> : tensor<2xi64>}} "
        f"ins({xp.name}, {window} : {xp.type}, {tensor_type(g.kernel, ap.dtype)}) "
        f"outs({init} : {t}) -> {t}",
        ap.hint,
    )
    return Val(name, shape, ap.dtype)


def emit_avg_pool(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    xp, g = _windowed(em, x, ap, 0.0)
    func = em.func
    n, c, ho, wo = ap.shape
    (sh, sw), (dh, dw) = g.stride, g.dilation
    x_map = affine_map(6, ["d0", "d1", f"d2 * {sh} + d4 * {dh}", f"d3 * {sw} + d5 * {dw}"])
    # the window operand only gives the reduced loops their bounds (as linalg's pooling ops do)
    window = Val(func.empty(g.kernel, "f32"), tuple(g.kernel), "f32")
    sums = func.generic(
        [xp, window],
        [x_map, affine_map(6, ["d4", "d5"])],
        (n, c, ho, wo),
        "f32",
        ["parallel"] * 4 + ["reduction"] * 2,
        lambda b: b.op(f"arith.addf {b.args[2][0]}, {b.to_float(*b.args[0])} : f32"),
        f"{ap.hint}_sum",
        init=func.filled(0.0, (n, c, ho, wo), "f32"),
        out_map=affine_map(6, ["d0", "d1", "d2", "d3"]),
    )
    counts = func.constant(
        g.counts(bool(ap.attrs["count_include_pad"])).astype(np.float32), "f32", f"{ap.hint}_taps"
    )

    def divide(b: Body) -> str:
        q = b.op(f"arith.divf {b.args[0][0]}, {b.args[1][0]} : f32")
        return narrow(b, (q, "f32"), ap.dtype)

    return func.generic(
        [sums, counts],
        [identity_map(4), affine_map(4, ["d2", "d3"])],
        ap.shape,
        ap.dtype,
        ["parallel"] * 4,
        divide,
        ap.hint,
    )


def emit_cumsum(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    """out[i] = sum over j of x[j] where j <= i (j < i exclusive; reversed: j >= i)."""
    x = args[0]
    axis, rank = int(ap.attrs["axis"]), x.rank
    exclusive, reverse = bool(ap.attrs["exclusive"]), bool(ap.attrs["reverse"])
    acc_type = "f32" if is_float(x.dtype) else WIDE  # integers: exact, then saturated
    n = rank + 1  # d0..d{rank-1} output, d{rank} the summed position j
    in_map = affine_map(n, [f"d{rank}" if d == axis else f"d{d}" for d in range(rank)])
    out_map = affine_map(n, [f"d{d}" for d in range(rank)])
    pred = {(False, False): "ule", (True, False): "ult", (False, True): "uge", (True, True): "ugt"}[
        (exclusive, reverse)
    ]

    def body(b: Body) -> str:
        (v, t), (acc, _) = b.args
        i = b.op(f"linalg.index {axis} : index")
        j = b.op(f"linalg.index {rank} : index")
        take = b.op(f"arith.cmpi {pred}, {j}, {i} : index")
        if acc_type == "f32":
            value = b.to_float(v, t)
            zero = b.const(0.0, "f32")
            add = "addf"
        else:
            value, zero, add = widen(b, v, t), b.const(0, WIDE), "addi"
        term = b.op(f"arith.select {take}, {value}, {zero} : {acc_type}")
        return b.op(f"arith.{add} {acc}, {term} : {acc_type}")

    init = em.func.filled(0.0 if acc_type == "f32" else 0, x.shape, acc_type)
    acc = em.func.generic(
        [x],
        [in_map],
        x.shape,
        acc_type,
        ["parallel"] * rank + ["reduction"],
        body,
        ap.hint,
        init=init,
        out_map=out_map,
    )
    return convert(em, acc, ap.dtype, ap.hint) if acc.dtype != ap.dtype else acc
