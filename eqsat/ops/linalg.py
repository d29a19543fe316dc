"""Matrix products and convolution."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    GROUPS_ATTR,
    TILE_ATTR,
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    broadcast_shapes,
    check_tile,
    require_float,
    same_dtype,
)
from eqsat.ops.registry import register


def matmul_shape(op: str, a: TensorType, b: TensorType) -> tuple[int, ...]:
    """[..., M, K] @ [..., K, N] -> [..., M, N], batch dimensions broadcast."""
    if a.rank < 2 or b.rank < 2:
        raise OpTypeError(f"'{op}' needs operands of rank >= 2, got {a} and {b}")
    if a.shape[-1] != b.shape[-2]:
        raise OpTypeError(
            f"'{op}': inner dimensions differ: {a} has K={a.shape[-1]}, {b} has K={b.shape[-2]}"
        )
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (*batch, a.shape[-2], b.shape[-1])


def _matmul_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    a, b = in_types
    dtype = same_dtype("matmul", in_types)
    require_float("matmul", a)
    check_tile("matmul", attrs)
    return TensorType(dtype, matmul_shape("matmul", a, b))


def matmul_flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return 2 * out.numel * in_types[0].shape[-1]


register(
    OpDef(
        name="matmul",
        kind=OpKind.MATMUL,
        operands=("a", "b"),
        attrs=(TILE_ATTR,),
        infer=_matmul_infer,
        ref=lambda xs, attrs: np.matmul(xs[0], xs[1]),
        flops=matmul_flops,
        doc="matrix product [..., M, K] @ [..., K, N]; batch dimensions broadcast",
        egg_shape="(MatmulShape {a} {b})",
    )
)


def _swap_last2(t: TensorType) -> TensorType:
    if t.rank < 2:
        raise OpTypeError(f"'matmul_nt' needs operands of rank >= 2, got {t}")
    return t.with_shape((*t.shape[:-2], t.shape[-1], t.shape[-2]))


def _matmul_nt_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    a, b = in_types
    dtype = same_dtype("matmul_nt", in_types)
    require_float("matmul_nt", a)
    check_tile("matmul_nt", attrs)
    return TensorType(dtype, matmul_shape("matmul_nt", a, _swap_last2(b)))


register(
    OpDef(
        name="matmul_nt",
        kind=OpKind.MATMUL,
        operands=("a", "b"),
        attrs=(TILE_ATTR,),
        infer=_matmul_nt_infer,
        ref=lambda xs, attrs: np.matmul(xs[0], np.swapaxes(xs[1], -1, -2)),
        flops=matmul_flops,
        doc="a @ b^T: [..., M, K] x [..., N, K] -> [..., M, N]; the kernel reads b transposed",
        egg_shape="(MatmulShape {a} (SwapLast2 {b}))",
    )
)


def _qmatmul_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    a, b = in_types
    if a.dtype is not DType.I8 or b.dtype is not DType.I8:
        raise OpTypeError(f"'qmatmul' needs i8 operands, got {a} and {b}")
    check_tile("qmatmul", attrs)
    return TensorType(DType.I32, matmul_shape("qmatmul", a, b))


def exact_in_float64(a: np.ndarray, b: np.ndarray, terms: int) -> bool:
    """Whether every sum of `terms` products of a's and b's integers is exact in float64
    (below 2^53), so that BLAS can compute an integer contraction: numpy's int64
    matmul has no BLAS and is ~300x slower on large operands."""
    amax = max(abs(int(a.max(initial=0))), abs(int(a.min(initial=0))))
    bmax = max(abs(int(b.max(initial=0))), abs(int(b.min(initial=0))))
    return terms * amax * bmax < 2**53


def _centered(x: np.ndarray, zero: int) -> np.ndarray:
    """x - zero in float64, exact for 8/32-bit integers (one copy of a large weight)."""
    out = x.astype(np.float64)
    if zero:
        out -= zero
    return out


def _qmatmul_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a = _centered(xs[0], int(attrs["a_zero"]))
    b = _centered(xs[1], int(attrs["b_zero"]))
    # exact int64 accumulation (through float64 BLAS where that is exact), then wrap
    # to int32 as a 32-bit accumulator would.
    if exact_in_float64(a, b, a.shape[-1]):
        acc = np.matmul(a, b).astype(np.int64)
    else:
        acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
    return acc.astype(np.int32)


register(
    OpDef(
        name="qmatmul",
        kind=OpKind.MATMUL,
        operands=("a", "b"),
        attrs=(
            AttrSpec("a_zero", AttrType.INT, 0, "zero point subtracted from a"),
            AttrSpec("b_zero", AttrType.INT, 0, "zero point subtracted from b"),
            TILE_ATTR,
        ),
        infer=_qmatmul_infer,
        ref=_qmatmul_ref,
        flops=matmul_flops,
        doc="integer matrix product (a - a_zero) @ (b - b_zero), i8 x i8 -> i32",
        egg_shape="(MatmulShape {a} {b})",
        egg_dtype="i32",
    )
)


def _pair(op: str, name: str, value: Sequence[int], minimum: int) -> tuple[int, int]:
    if len(value) != 2 or any(v < minimum for v in value):
        raise OpTypeError(
            f"'{op}': {name} must be two integers >= {minimum}, got [{', '.join(map(str, value))}]"
        )
    return int(value[0]), int(value[1])


def _conv_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, w = in_types
    dtype = same_dtype("conv2d", in_types)
    require_float("conv2d", x)
    if x.rank != 4 or w.rank != 4:
        raise OpTypeError(
            f"'conv2d' needs x: [N, C, H, W] and w: [O, C/groups, KH, KW], got {x} and {w}"
        )
    groups = int(attrs.get("groups", 1))
    if groups < 1:
        raise OpTypeError(f"'conv2d': groups must be a positive integer, got {groups}")
    if x.shape[1] % groups or w.shape[0] % groups:
        raise OpTypeError(
            f"'conv2d': groups={groups} must divide the input channels (C={x.shape[1]} of "
            f"{x}) and the output channels (O={w.shape[0]} of {w})"
        )
    if x.shape[1] != w.shape[1] * groups:
        raise OpTypeError(
            f"'conv2d': channels differ: x {x} has C={x.shape[1]}, w {w} has "
            f"C/groups={w.shape[1]}" + (f" with groups={groups}" if groups > 1 else "")
        )
    sh, sw = _pair("conv2d", "stride", attrs["stride"], 1)
    ph, pw = _pair("conv2d", "padding", attrs["padding"], 0)
    check_tile("conv2d", attrs)
    ho = (x.shape[2] + 2 * ph - w.shape[2]) // sh + 1
    wo = (x.shape[3] + 2 * pw - w.shape[3]) // sw + 1
    if ho < 1 or wo < 1:
        raise OpTypeError(f"'conv2d': kernel {w} is larger than the padded input {x}")
    return TensorType(dtype, (x.shape[0], w.shape[0], ho, wo))


def conv2d_ref(
    x: np.ndarray,
    w: np.ndarray,
    stride: Sequence[int],
    padding: Sequence[int],
    groups: int = 1,
) -> np.ndarray:
    """NCHW x OIHW convolution via a strided window view and one tensordot (one
    einsum over the groups when there are several: channel slice g of x meets output
    channels [g*O/G, (g+1)*O/G) of w)."""
    ph, pw = padding
    sh, sw = stride
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    kh, kw = w.shape[2], w.shape[3]
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw]  # [N, C, Ho, Wo, KH, KW]
    if groups > 1:
        n, c, ho, wo = windows.shape[:4]
        o = w.shape[0]
        xg = windows.reshape(n, groups, c // groups, ho, wo, kh, kw)
        wg = w.reshape(groups, o // groups, c // groups, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", xg, wg, optimize=True)
        return np.ascontiguousarray(out.reshape(n, o, ho, wo))
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # [N, Ho, Wo, O]
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _conv_flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    w = in_types[1]
    return 2 * out.numel * w.shape[1] * w.shape[2] * w.shape[3]


register(
    OpDef(
        name="conv2d",
        kind=OpKind.CONV,
        operands=("x", "w"),
        attrs=(
            AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
            AttrSpec("padding", AttrType.INTS, (0, 0), "zero padding [PH, PW] on each side"),
            GROUPS_ATTR,
            TILE_ATTR,
        ),
        infer=_conv_infer,
        ref=lambda xs, attrs: conv2d_ref(
            xs[0], xs[1], attrs["stride"], attrs["padding"], int(attrs["groups"])
        ),
        flops=_conv_flops,
        doc="2-D convolution, x: [N, C, H, W], w: [O, C/groups, KH, KW] -> [N, O, HO, WO] "
        "(dilation 1); groups > 1 convolves channel slices separately (groups = C: depthwise)",
        egg_shape="(ConvShape {x} (GroupedWeight {w} {groups}) {stride} {padding})",
    )
)


def _qconv_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x, w = in_types
    if x.dtype is not DType.I8 or w.dtype is not DType.I8:
        raise OpTypeError(f"'qconv2d' needs i8 operands, got {x} and {w}")
    f32 = [TensorType(DType.F32, t.shape) for t in in_types]
    return TensorType(DType.I32, _conv_infer(f32, attrs).shape)


def _qconv_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    # padding in the zero-shifted domain (padded positions contribute 0); int64
    # accumulation, then wrap to int32 as a 32-bit accumulator would.
    x = xs[0].astype(np.int64) - np.int64(attrs["a_zero"])
    w = xs[1].astype(np.int64)
    groups = int(attrs.get("groups", 1))
    if exact_in_float64(x, w, int(np.prod(w.shape[1:]))):
        x, w = x.astype(np.float64), w.astype(np.float64)
        out = conv2d_ref(x, w, attrs["stride"], attrs["padding"], groups)
        return np.rint(out).astype(np.int64).astype(np.int32)
    return conv2d_ref(x, w, attrs["stride"], attrs["padding"], groups).astype(np.int32)


register(
    OpDef(
        name="qconv2d",
        kind=OpKind.CONV,
        operands=("x", "w"),
        attrs=(
            AttrSpec("a_zero", AttrType.INT, 0, "zero point subtracted from x"),
            AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
            AttrSpec("padding", AttrType.INTS, (0, 0), "padding [PH, PW] of x - a_zero with 0"),
            GROUPS_ATTR,
            TILE_ATTR,
        ),
        infer=_qconv_infer,
        ref=_qconv_ref,
        flops=_conv_flops,
        doc="integer convolution of (x - a_zero) and w, i8 x i8 -> i32 (NCHW x OIHW); "
        "groups as conv2d's (groups = C: depthwise)",
        egg_shape="(ConvShape {x} (GroupedWeight {w} {groups}) {stride} {padding})",
        egg_dtype="i32",
    )
)
