"""Online rotations: hadamard(x, block=B), a block-diagonal normalized Hadamard
transform along the last axis (QuaRot, SpinQuant, QuIP#).

An orthogonal rotation leaves a matmul unchanged, x @ w = (x H) @ (H^T w), while it
spreads each row's outliers over B elements: a sum of B terms has near-Gaussian tails,
so one per-tensor int8 scale fits x H far better than a heavy-tailed x (SwiGLU's gated
product). H is the normalized Sylvester matrix (H = H^T = H^-1), blocked: the last
axis is cut into K / B groups of B, each multiplied by the same B x B matrix, so B is
a power of two dividing K (11008 = 86 x 128). The rotated weights H^T w are compiled
in; the run-time rotation is a fast Walsh-Hadamard transform on the vector unit,
log2(B) butterfly stages and a scale (eqsat/rotation_plan.py, backend/rotation.py).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import Attrs, AttrSpec, AttrType, OpDef, OpKind, OpTypeError
from eqsat.ops.registry import register


@functools.cache
def hadamard_matrix(block: int) -> np.ndarray:
    """The normalized Sylvester Hadamard matrix of order `block` (a power of two), f32:
    symmetric and orthogonal, so it is its own inverse."""
    h = np.ones((1, 1))
    while h.shape[0] < block:
        h = np.block([[h, h], [h, -h]])
    out = (h / np.sqrt(block)).astype(np.float32)
    out.flags.writeable = False
    return out


def hadamard(x: np.ndarray, block: int) -> np.ndarray:
    """x with each group of `block` elements of its last axis multiplied by H, in f32 as
    the kernel computes it (bit for bit): butterfly stages h = 1, 2, ..., block/2 pair
    element i of each 2h group with element i + h into (a + b, a - b), then one scale
    by 1/sqrt(block)."""
    shape = x.shape
    a = np.array(x, dtype=np.float32).reshape(-1, block)
    b = np.empty_like(a)
    h = 1
    while h < block:  # [rows, groups, 2, h]: numpy runs this layout fast for every h
        src = a.reshape(-1, block // (2 * h), 2, h)
        dst = b.reshape(-1, block // (2 * h), 2, h)
        np.add(src[:, :, 0], src[:, :, 1], out=dst[:, :, 0])
        np.subtract(src[:, :, 0], src[:, :, 1], out=dst[:, :, 1])
        a, b = b, a
        h *= 2
    a *= np.float32(1.0 / np.sqrt(block))
    return a.reshape(shape)


def hadamard_rows(w: np.ndarray, block: int) -> np.ndarray:
    """H^T w for a [K, N] weight: the rotation of its rows that undoes hadamard(x)."""
    return np.ascontiguousarray(hadamard(np.ascontiguousarray(w.T), block).T)


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = ts[0]
    block = int(attrs["block"])  # type: ignore[call-overload]
    if x.dtype is not DType.F32 or x.rank < 1:
        raise OpTypeError(f"'hadamard' needs an f32 operand of rank >= 1, got {x}")
    if block < 2 or not is_power_of_two(block):
        raise OpTypeError(f"'hadamard': block must be a power of two >= 2, got {block}")
    if x.shape[-1] % block:
        raise OpTypeError(
            f"'hadamard': block {block} does not divide the last axis of {x} ({x.shape[-1]})"
        )
    return x


register(
    OpDef(
        name="hadamard",
        kind=OpKind.NORMALIZE,  # mixes along the last axis, position-wise elsewhere
        operands=("x",),
        attrs=(AttrSpec("block", AttrType.INT, doc="rotation block: a power of two dividing K"),),
        infer=_infer,
        ref=lambda xs, attrs: hadamard(xs[0], int(attrs["block"])),  # type: ignore[call-overload]
        flops=lambda ts, out, attrs: out.numel * int(attrs["block"]).bit_length(),  # type: ignore[call-overload]
        doc="block-diagonal normalized Hadamard rotation of the last axis (x H, H = H^T = "
        "H^-1 of order block, a power of two dividing it): spreads outliers before int8 "
        "quantization; a fast Walsh-Hadamard transform (log2(block) add/sub stages and a "
        "scale) on the vector unit",
        egg_shape="{x}",
    )
)
