"""Layout ops: tensor.expand_shape / collapse_shape (reshape), linalg.transpose,
broadcasting generics, tensor.concat, tensor.extract_slice, tensor.pad, and gathers
as generics that read with tensor.extract; and the generated leaves (iota, const)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from eqsat.ir.types import DType
from eqsat.ops.spatial import fill_value

from .core import Body, MlirEmitError, Val, broadcast_map, identity_map, is_float, tensor_type

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def _groups(small: Sequence[int], big: Sequence[int]) -> list[list[int]] | None:
    """Reassociation of `big`'s dims into `small`'s: consecutive groups whose products
    are `small`'s dims (trailing 1s join the last group), or None."""
    if not small:
        return [] if all(d == 1 for d in big) else None
    groups: list[list[int]] = []
    j = 0
    for size in small:
        if j >= len(big):
            return None
        group, prod = [j], big[j]
        j += 1
        while prod < size and j < len(big):
            prod *= big[j]
            group.append(j)
            j += 1
        if prod != size:
            return None
        groups.append(group)
    if any(d != 1 for d in big[j:]):
        return None
    groups[-1].extend(range(j, len(big)))
    return groups


def _assoc(groups: list[list[int]]) -> str:
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def collapse_to(em: Emitter, v: Val, shape: Sequence[int], hint: str) -> Val:
    shape = tuple(shape)
    if v.shape == shape:
        return v
    groups = _groups(shape, v.shape)
    if groups is None:
        return reshape_val(em, v, shape, hint)
    t = tensor_type(shape, v.dtype)
    name = em.func.emit(
        f"tensor.collapse_shape {v.name} {_assoc(groups)} : {v.type} into {t}", hint
    )
    return Val(name, shape, v.dtype)


def expand_to(em: Emitter, v: Val, shape: Sequence[int], hint: str) -> Val:
    shape = tuple(shape)
    if v.shape == shape:
        return v
    groups = _groups(v.shape, shape)
    if groups is None:
        return reshape_val(em, v, shape, hint)
    t = tensor_type(shape, v.dtype)
    out = ", ".join(str(d) if isinstance(d, int) else em.func.size(d) for d in shape)
    name = em.func.emit(
        f"tensor.expand_shape {v.name} {_assoc(groups)} output_shape [{out}] : {v.type} into {t}",
        hint,
    )
    return Val(name, shape, v.dtype)


def reshape_val(em: Emitter, v: Val, shape: Sequence[int], hint: str) -> Val:
    """Row-major reshape: one collapse or expand where the dims regroup, else through
    the flat vector."""
    shape = tuple(shape)
    if v.shape == shape:
        return v
    if _groups(shape, v.shape) is not None:
        return collapse_to(em, v, shape, hint)
    if _groups(v.shape, shape) is not None:
        return expand_to(em, v, shape, hint)
    flat = collapse_to(em, v, (math.prod(v.shape),), hint)
    return expand_to(em, flat, shape, hint)


def emit_reshape(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    return reshape_val(em, args[0], ap.shape, ap.hint)


def emit_transpose(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    perm = tuple(ap.attrs["perm"])
    if perm == tuple(range(len(perm))):
        return x
    init = em.func.empty(ap.shape, ap.dtype)
    t = tensor_type(ap.shape, ap.dtype)
    name = em.func.emit(
        f"linalg.transpose ins({x.name} : {x.type}) outs({init} : {t}) "
        f"permutation = [{', '.join(map(str, perm))}]",
        ap.hint,
    )
    return Val(name, tuple(ap.shape), ap.dtype)


def emit_broadcast(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    if x.shape == tuple(ap.shape):
        return x
    return em.func.generic(
        [x],
        [broadcast_map(x.shape, ap.shape)],
        ap.shape,
        ap.dtype,
        ["parallel"] * len(ap.shape),
        lambda b: b.args[0][0],
        ap.hint,
    )


def emit_concat(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    if len(args) == 1:
        return args[0]
    t = tensor_type(ap.shape, ap.dtype)
    names = ", ".join(v.name for v in args)
    types = ", ".join(v.type for v in args)
    name = em.func.emit(
        f"tensor.concat dim({ap.attrs['axis']}) {names} : ({types}) -> {t}", ap.hint
    )
    return Val(name, tuple(ap.shape), ap.dtype)


def slice_val(em: Emitter, x: Val, starts: Sequence[int], sizes: Sequence[int], hint: str) -> Val:
    if tuple(sizes) == x.shape:
        return x
    for start, size, extent in zip(starts, sizes, x.shape, strict=True):
        if not isinstance(size, int) and (start != 0 or size != extent):
            raise MlirEmitError("a slice along a dynamic dim (only whole dynamic axes)")
    t = tensor_type(sizes, x.dtype)
    ones = ", ".join("1" for _ in sizes)
    written = ", ".join(str(d) if isinstance(d, int) else em.func.size(d) for d in sizes)
    name = em.func.emit(
        f"tensor.extract_slice {x.name}[{', '.join(map(str, starts))}] "
        f"[{written}] [{ones}] : {x.type} to {t}",
        hint,
    )
    return Val(name, tuple(sizes), x.dtype)


def emit_slice(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    starts = tuple(ap.attrs["starts"])
    return slice_val(em, args[0], starts, ap.shape, ap.hint)


def pad_value(
    em: Emitter, x: Val, low: Sequence[int], high: Sequence[int], value: float | int, hint: str
) -> Val:
    """tensor.pad with a constant (`value` already in x's element type)."""
    if not any(low) and not any(high):
        return x
    shape = tuple(d + lo + hi for d, lo, hi in zip(x.shape, low, high, strict=True))
    t = tensor_type(shape, x.dtype)
    func = em.func
    fill = func.scalar(value, x.dtype)
    block = ", ".join(f"{func.fresh('p')}: index" for _ in range(x.rank))
    name = func.fresh(hint)
    func.lines.append(
        f"{name} = tensor.pad {x.name} low[{', '.join(map(str, low))}] "
        f"high[{', '.join(map(str, high))}] {{"
    )
    func.lines.append(f"^bb0({block}):")
    func.lines.append(f"  tensor.yield {fill} : {x.dtype}")
    func.lines.append(f"}} : {x.type} to {t}{func.loc}")
    return Val(name, shape, x.dtype)


def emit_pad(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    pads = tuple(ap.attrs["pads"])
    rank = x.rank
    value = fill_value(float(ap.attrs["value"]), DType.parse(x.dtype))
    value = float(value) if is_float(x.dtype) else int(value)
    return pad_value(em, x, pads[:rank], pads[rank:], value, ap.hint)


def emit_gather(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    """out[pre, idx, post] = x[pre, clamp(indices[idx]), post] (negative counts from the end)."""
    x, indices = args
    axis = int(ap.attrs["axis"])
    n = x.shape[axis]
    rank = len(ap.shape)
    k = indices.rank
    idx_map = (
        identity_map(rank).split("->")[0]
        + "-> ("
        + ", ".join(f"d{axis + i}" for i in range(k))
        + ")>"
    )

    def body(b: Body) -> str:
        i, t = b.args[0]
        wide = b.op(f"arith.extsi {i} : {t} to i64") if t != "i64" else i
        neg = b.op(f"arith.cmpi slt, {wide}, {b.const(0, 'i64')} : i64")
        shifted = b.op(f"arith.addi {wide}, {b.const(n, 'i64')} : i64")
        j = b.op(f"arith.select {neg}, {shifted}, {wide} : i64")
        j = b.op(f"arith.maxsi {j}, {b.const(0, 'i64')} : i64")
        j = b.op(f"arith.minsi {j}, {b.const(n - 1, 'i64')} : i64")
        j = b.op(f"arith.index_cast {j} : i64 to index")
        coords = []
        for d in range(x.rank):
            if d < axis:
                coords.append(b.op(f"linalg.index {d} : index"))
            elif d == axis:
                coords.append(j)
            else:
                coords.append(b.op(f"linalg.index {d - 1 + k} : index"))
        return b.op(f"tensor.extract {x.name}[{', '.join(coords)}] : {x.type}")

    return em.func.generic(
        [indices], [idx_map], ap.shape, ap.dtype, ["parallel"] * rank, body, ap.hint
    )


def emit_iota(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    axis = int(ap.attrs["axis"])

    def body(b: Body) -> str:
        i = b.op(f"linalg.index {axis} : index")
        i64 = b.op(f"arith.index_cast {i} : index to i64")
        if is_float(ap.dtype):
            f = b.op(f"arith.sitofp {i64} : i64 to f32")
            return b.from_float(f, ap.dtype)
        return b.op(f"arith.trunci {i64} : i64 to {ap.dtype}")

    return em.func.generic([], [], ap.shape, ap.dtype, ["parallel"] * len(ap.shape), body, ap.hint)


def emit_const(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    """A splat constant (as the interpreter fills it: np.full in the compute type)."""
    value = float(ap.attrs["value"])
    compute = np.float32 if ap.dtype in ("f32", "bf16") else np.dtype(ap.dtype.replace("i", "int"))
    values = np.full(ap.shape, np.full((), value).astype(compute))
    val = em.func.constant(values, ap.dtype, ap.hint)
    em.known[val.name] = values
    return val
