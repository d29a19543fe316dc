"""Hypothesis generators of the weight-only ops (eqsat/ops/weight_only.py), in the form
of eqsat.verify.opcases' families; merged into QUANT_GENERATORS (eqsat/quant/opcases.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType
from eqsat.verify.cases import Family, OpCase, first_operand


def _groups(k: int) -> list[int]:
    """Even group sizes dividing k."""
    return [g for g in range(2, k + 1, 2) if k % g == 0]


def _weight(t: TensorType) -> bool:
    return t.dtype is DType.F32 and t.rank == 2 and bool(_groups(t.shape[0]))


def _even_k(draw, op, first, space, dtypes, min_rank: int) -> TensorType:
    t = first_operand(draw, op, first, space, dtypes, min_rank=min_rank)
    if first is None and t.shape[-1] % 2:  # an even K (rows of w / columns of x)
        t = t.with_shape((*t.shape[:-1], t.shape[-1] + 1))
    return t


def draw_weight_op(draw, op, first, space) -> OpCase:
    """wobserve / wq_pack / wq_scales of w: f32[K, N], an even group dividing K."""
    w = first_operand(draw, op, first, space, (DType.F32,), min_rank=2)
    if first is None:
        w = TensorType(DType.F32, (2 * draw(space.sides()), w.shape[-1]))
    attrs: dict[str, Any] = {"group": draw(st.sampled_from(_groups(w.shape[0])))}
    bits = (4, 8, 16) if op.name == "wobserve" else (4, 8)
    attrs["bits"] = draw(st.sampled_from(bits))
    if attrs["bits"] == 8 and draw(st.booleans()):
        attrs["fmt"] = "e4m3"
    if attrs["bits"] != 16:
        attrs["sdtype"] = draw(st.sampled_from(["f32", "bf16"]))
    if op.name == "wobserve":
        attrs["act"] = draw(st.sampled_from(["f32", "bf16"]))
    return OpCase(op.name, (w,), attrs)


def draw_matmul_wq(draw, op, first, space) -> OpCase:
    """x: f32/bf16 [..., M, K] (K even); wq: i8[K * bits / 8, N]; s: f32 or bf16
    [K / group, N]."""
    x = _even_k(draw, op, first, space, (DType.F32, DType.BF16), 2)
    k, n = x.shape[-1], draw(space.sides())
    group = draw(st.sampled_from(_groups(k)))
    bits = draw(st.sampled_from([4, 8]))
    wq = TensorType(DType.I8, (k * bits // 8, n))
    s = TensorType(draw(st.sampled_from([DType.F32, DType.BF16])), (k // group, n))
    attrs = {"group": group, "bits": bits, "act": x.dtype.value}
    if bits == 8 and draw(st.booleans()):
        attrs["fmt"] = "e4m3"
    return OpCase(op.name, (x, wq, s), attrs)


WEIGHT_ONLY_GENERATORS: dict[str, Family] = {
    **{
        name: Family(lambda op, t: _weight(t), draw_weight_op)
        for name in ("wobserve", "wq_pack", "wq_scales")
    },
    "matmul_wq": Family(
        lambda op, t: t.dtype.is_float and t.rank >= 2 and t.shape[-1] % 2 == 0, draw_matmul_wq
    ),
}
