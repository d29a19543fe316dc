"""MLIR of hadamard(x, block=B): x viewed as [R, B] rows times the constant H_B
(linalg.matmul against an arith.constant), reshaped back. Exact in real arithmetic;
in f32 it rounds like any dot product (hwsim runs the butterflies instead)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from eqsat.ops.rotation import hadamard_matrix

from .contract import matmul_acc
from .core import Val
from .layout import reshape_val

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def emit_hadamard(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x = args[0]
    block = int(ap.attrs["block"])
    rows = math.prod(x.shape) // block
    flat = reshape_val(em, x, (rows, block), ap.hint)
    h = em.func.constant(hadamard_matrix(block), "f32", f"{ap.hint}_h")
    out = matmul_acc(em, flat, h, (rows, block), "f32", ap.hint)
    return reshape_val(em, out, x.shape, ap.hint)
