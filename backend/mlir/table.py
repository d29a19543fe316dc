"""The one table from registry op to MLIR emitter. An op missing here is refused
with an error naming it (emitter.Emitter.apply), never emitted wrongly."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from eqsat.ops import REGISTRY, OpKind

from .contract import emit_conv2d, emit_matmul
from .ewise import emit_elementwise
from .fused import emit_fused
from .layout import (
    emit_broadcast,
    emit_concat,
    emit_const,
    emit_gather,
    emit_iota,
    emit_pad,
    emit_reshape,
    emit_slice,
    emit_transpose,
)
from .quant import emit_qconv2d, emit_qmatmul, emit_requantize_ch, emit_requantize_pc
from .reduce import (
    emit_avg_pool,
    emit_cumsum,
    emit_layernorm,
    emit_max_pool,
    emit_reduce,
    emit_rmsnorm,
    emit_softmax,
)
from .rotation import emit_hadamard
from .scalar import SCALAR
from .weight_only import emit_folded_weights, emit_matmul_wq, emit_wobserve
from .winograd import WINOGRAD_EMITTERS

if TYPE_CHECKING:
    from .core import Apply, Val
    from .emitter import Emitter

EmitFn = Callable[["Emitter", "Apply", "list[Val]"], "Val"]

EMITTERS: dict[str, EmitFn] = {
    **{name: emit_elementwise for name in SCALAR},
    "iota": emit_iota,
    "const": emit_const,
    "matmul": emit_matmul,
    "matmul_nt": emit_matmul,
    "conv2d": emit_conv2d,
    "reduce_sum": emit_reduce,
    "reduce_max": emit_reduce,
    "reduce_mean": emit_reduce,
    "softmax": emit_softmax,
    "layernorm": emit_layernorm,
    "rmsnorm": emit_rmsnorm,
    "max_pool2d": emit_max_pool,
    "avg_pool2d": emit_avg_pool,
    "cumsum": emit_cumsum,
    "hadamard": emit_hadamard,  # rotation.py
    "reshape": emit_reshape,
    "transpose": emit_transpose,
    "broadcast": emit_broadcast,
    "concat": emit_concat,
    "slice": emit_slice,
    "pad": emit_pad,
    "gather": emit_gather,
    "qmatmul": emit_qmatmul,
    "qconv2d": emit_qconv2d,
    "requantize_pc": emit_requantize_pc,
    "requantize_ch": emit_requantize_ch,
    "matmul_wq": emit_matmul_wq,
    "wq_pack": emit_folded_weights,
    "wq_scales": emit_folded_weights,
    "wobserve": emit_wobserve,
    **WINOGRAD_EMITTERS,  # F(m, 3) transforms (winograd.py)
}
EMITTERS.update({name: emit_fused for name, op in REGISTRY.items() if op.kind is OpKind.FUSED})
