"""Attention as one fused kernel: softmax(scale * q @ kt [+ mask]) @ v.

Declared by its body like every fused op (eqsat/ops/fused.py), so type inference,
reference semantics and FLOPs come from the composition. `kt` is the keys already
transposed ([..., d, T]), as the exporters feed the score matmul; `mask` is additive
(0 where a key is visible, a large negative number or -inf where it is not) and
broadcasts to the scores [..., S, T]. The backend runs it as one kernel that keeps the
scores on chip (backend/attention.py, planned by eqsat/attention_plan.py).
"""

from __future__ import annotations

from eqsat.ops.base import AttrSpec, AttrType
from eqsat.ops.fused import AttrRef, call, fused

SCALE_ATTR = AttrSpec("scale", AttrType.FLOAT, 1.0, "multiplies the scores q @ kt")

_SCORES = call(
    "mul",
    call("matmul", "q", "kt"),
    call("const", value=AttrRef("scale"), shape=(), dtype="f32"),
)


def _attend(scores):
    return call("matmul", call("softmax", scores, axis=-1), "v")


fused("attention", ("q", "kt", "v"), _attend(_SCORES), (SCALE_ATTR,))
fused(
    "attention_masked",
    ("q", "kt", "v", "mask"),
    _attend(call("add", _SCORES, "mask")),
    (SCALE_ATTR,),
)

ATTENTION_OPS = ("attention", "attention_masked")
