"""Elementwise ops and fused kernels as linalg.generic: operands read through numpy
broadcasting maps, the scalar semantics of scalar.py in the body."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .core import Body, Val, broadcast_map
from .scalar import SCALAR, Scalar, narrow

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def ewise_generic(
    em: Emitter,
    ins: Sequence[Val],
    shape: Sequence[int],
    dtype: str,
    body: Callable[[Body, list[Scalar]], Scalar],
    hint: str,
) -> Val:
    """One parallel generic over `shape`; `body` maps the operands' scalars to the
    result (narrowed to `dtype`)."""

    def write(b: Body) -> str:
        scalars = list(b.args[: len(ins)])
        return narrow(b, body(b, scalars), dtype)

    return em.func.generic(
        ins,
        [broadcast_map(v.shape, shape) for v in ins],
        shape,
        dtype,
        ["parallel"] * len(shape),
        write,
        hint,
    )


def emit_elementwise(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    writer = SCALAR[ap.op]
    return ewise_generic(
        em, args, ap.shape, ap.dtype, lambda b, xs: writer(b, xs, ap.attrs), ap.hint
    )


def convert(em: Emitter, v: Val, dtype: str, hint: str) -> Val:
    """v with another element type (bf16 <-> f32 around fused bodies and matmuls)."""
    if v.dtype == dtype:
        return v
    return ewise_generic(em, [v], v.shape, dtype, lambda b, xs: xs[0], hint)
