"""Contractions: linalg.matmul where the product is 2-D (batched operands times a
2-D weight fold their batch into M first), linalg.conv_2d_nchw_fchw for ungrouped
convolutions, and contraction generics for broadcast batches, transposed operands
and grouped/depthwise convolutions (named ops for those are not in every MLIR
reader). Floats accumulate in f32."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .core import Body, Val, affine_map, tensor_type
from .ewise import convert
from .layout import collapse_to, expand_to, pad_value, slice_val

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def _mac(b: Body, acc_type: str) -> str:
    (x, tx), (w, tw), (acc, _) = b.args
    if acc_type == "f32":
        x, w = b.to_float(x, tx), b.to_float(w, tw)
        prod = b.op(f"arith.mulf {x}, {w} : f32")
        return b.op(f"arith.addf {acc}, {prod} : f32")
    x = b.op(f"arith.extsi {x} : {tx} to i32") if tx != "i32" else x
    w = b.op(f"arith.extsi {w} : {tw} to i32") if tw != "i32" else w
    prod = b.op(f"arith.muli {x}, {w} : i32")
    return b.op(f"arith.addi {acc}, {prod} : i32")


def _finish(em: Emitter, acc: Val, ap: Apply) -> Val:
    return convert(em, acc, ap.dtype, ap.hint) if acc.dtype != ap.dtype else acc


def emit_matmul(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    a, b = args
    return _finish(
        em, matmul_acc(em, a, b, ap.shape, "f32", ap.hint, transpose_b=ap.op == "matmul_nt"), ap
    )


def matmul_acc(
    em: Emitter,
    a: Val,
    b: Val,
    shape,
    acc_type: str,
    hint: str,
    transpose_b: bool = False,
    zeros: tuple[int, int] | None = None,
) -> Val:
    """[..., M, K] x [..., K, N] (or [..., N, K] with transpose_b) accumulated in
    `acc_type`, result [..., M, N]. Integer products take their operands' zero points
    (`zeros`) into linalg.quantized_matmul, or have them subtracted already."""
    func = em.func
    integer = acc_type == "i32"
    if not transpose_b and b.rank == 2 and a.rank >= 2 and (not integer or zeros is not None):
        m = math.prod(a.shape[:-1])
        flat = collapse_to(em, a, (m, a.shape[-1]), hint) if a.rank > 2 else a
        out_t = tensor_type((m, b.shape[1]), acc_type)
        init = func.filled(0, (m, b.shape[1]), acc_type)
        if integer:  # i8 x i8 -> i32 with the zero points as operands
            za, zb = (func.scalar(z, "i32") for z in zeros)
            op = (
                f"linalg.quantized_matmul ins({flat.name}, {b.name}, {za}, {zb} : "
                f"{flat.type}, {b.type}, i32, i32)"
            )
        else:
            op = f"linalg.matmul ins({flat.name}, {b.name} : {flat.type}, {b.type})"
        k, tk = a.shape[-1], em.k_tile
        if not integer and tk and tk < k and k % tk == 0:
            name = _k_loop(em, flat, b, init, tk, hint)
        else:
            name = func.emit(f"{op} outs({init} : {out_t}) -> {out_t}", hint)
        result = Val(name, (m, b.shape[1]), acc_type)
        return expand_to(em, result, tuple(shape), hint) if a.rank > 2 else result
    n_batch = len(shape) - 2
    n = n_batch + 3  # batch..., m, n, k
    m_d, n_d, k_d = f"d{n_batch}", f"d{n_batch + 1}", f"d{n_batch + 2}"

    def batch(v: Val) -> list[str]:
        dims = v.shape[:-2]
        offset = n_batch - len(dims)
        return [
            "0" if d == 1 and shape[offset + i] != 1 else f"d{offset + i}"
            for i, d in enumerate(dims)
        ]

    a_map = affine_map(n, [*batch(a), m_d, k_d])
    b_map = affine_map(n, [*batch(b), *((n_d, k_d) if transpose_b else (k_d, n_d))])
    out_map = affine_map(n, [*(f"d{i}" for i in range(n_batch)), m_d, n_d])
    init = func.filled(0, shape, acc_type)
    return func.generic(
        [a, b],
        [a_map, b_map],
        shape,
        acc_type,
        ["parallel"] * (n_batch + 2) + ["reduction"],
        lambda body: _mac(body, acc_type),
        hint,
        init=init,
        out_map=out_map,
    )


def emit_conv2d(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x, w = args
    return _finish(em, conv_acc(em, x, w, ap, "f32", 0), ap)


def conv_acc(em: Emitter, x: Val, w: Val, ap: Apply, acc_type: str, x_zero: int) -> Val:
    """NCHW x OIHW convolution accumulated in `acc_type`; padding holds `x_zero` (the
    input's zero point, so that x - x_zero is 0 there)."""
    func = em.func
    (sh, sw), (ph, pw) = tuple(ap.attrs["stride"]), tuple(ap.attrs["padding"])
    groups = int(ap.attrs.get("groups", 1))
    if ph or pw:
        x = pad_value(em, x, (0, 0, ph, pw), (0, 0, ph, pw), x_zero, ap.hint)
    shape = tuple(ap.shape)
    nb, o, ho, wo = shape
    _, cg, kh, kw = w.shape
    # exactly the rows and columns the windows read (IREE's unit-dim folding needs it)
    used = (nb, x.shape[1], (ho - 1) * sh + kh, (wo - 1) * sw + kw)
    x = slice_val(em, x, (0, 0, 0, 0), used, ap.hint)
    if groups == 1 and acc_type == "f32" and x.dtype == w.dtype == "f32":
        out_t = tensor_type(shape, acc_type)
        init = func.filled(0, shape, acc_type)
        name = func.emit(
            f"linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, "
            f"strides = dense<[{sh}, {sw}]> : tensor<2xi64>}} "
            f"ins({x.name}, {w.name} : {x.type}, {w.type}) outs({init} : {out_t}) -> {out_t}",
            ap.hint,
        )
        return Val(name, shape, acc_type)
    # grouped: x [N, G, C/G, H, W], w [G, O/G, C/G, KH, KW], out [N, G, O/G, HO, WO]
    g, og = groups, o // groups
    xg = expand_to(em, x, (nb, g, cg, *x.shape[2:]), ap.hint)
    wg = expand_to(em, w, (g, og, cg, kh, kw), ap.hint)
    # dims: n g o h w | c kh kw
    x_map = affine_map(8, ["d0", "d1", "d5", f"d3 * {sh} + d6", f"d4 * {sw} + d7"])
    w_map = affine_map(8, ["d1", "d2", "d5", "d6", "d7"])
    out_map = affine_map(8, ["d0", "d1", "d2", "d3", "d4"])
    out_shape = (nb, g, og, ho, wo)
    init = func.filled(0, out_shape, acc_type)
    acc = func.generic(
        [xg, wg],
        [x_map, w_map],
        out_shape,
        acc_type,
        ["parallel"] * 5 + ["reduction"] * 3,
        lambda body: _mac(body, acc_type),
        ap.hint,
        init=init,
        out_map=out_map,
    )
    return collapse_to(em, acc, shape, ap.hint)


def _k_loop(em: Emitter, a: Val, b: Val, init: str, tk: int, hint: str) -> str:
    """a @ b as scf.for over K in steps of tk, a linalg.matmul per step accumulating
    into the loop-carried tile (--emit mlir-tiled).

    The first step is peeled: the loop starts from the product of the first K slice.
    Started from the zero fill instead, the loop's initial value depends on nothing,
    and IREE 3.13 may schedule that fill in one execution partition with work that
    comes after the loop ("failed to schedule execution partitions without cyclic
    dependencies"; seen on the datacenter BERT layer)."""
    func = em.func
    (m, k), n = a.shape, b.shape[1]
    out_t = tensor_type((m, n), "f32")
    a_t, b_t = tensor_type((m, tk), a.dtype), tensor_type((tk, n), b.dtype)

    def step(kk: str, acc: str, name_hint: str) -> str:
        a_s = func.emit(
            f"tensor.extract_slice {a.name}[0, {kk}] [{m}, {tk}] [1, 1] : {a.type} to {a_t}",
            "a_k",
        )
        b_s = func.emit(
            f"tensor.extract_slice {b.name}[{kk}, 0] [{tk}, {n}] [1, 1] : {b.type} to {b_t}",
            "b_k",
        )
        return func.emit(
            f"linalg.matmul ins({a_s}, {b_s} : {a_t}, {b_t}) outs({acc} : {out_t}) -> {out_t}",
            name_hint,
        )

    first = step(func.emit("arith.constant 0 : index", "c"), init, f"{hint}.first")
    lo, hi, stride = (func.emit(f"arith.constant {v} : index", "c") for v in (tk, k, tk))
    kk, acc = func.fresh("k"), func.fresh("acc")
    name = func.fresh(hint)
    func.lines.append(
        f"{name} = scf.for {kk} = {lo} to {hi} step {stride} iter_args({acc} = {first}) "
        f"-> ({out_t}) {{"
    )
    with func.indented():
        step_out = step(kk, acc, f"{hint}.step")
        func.lines.append(f"scf.yield {step_out} : {out_t}")
    func.lines.append(f"}}{func.loc}")
    return name
