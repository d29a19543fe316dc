"""What the modules of quantized ops share: the scale and rounding attributes' checks,
and how a fused int8 kernel around an integer product registers.

Below quant.py, quant_conv.py and quant_ort.py, so that none of them imports another
for these (quant.py imports quant_conv to register its ops, not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from eqsat.ir.types import TensorType
from eqsat.ops.base import TILE_ATTR, Attrs, AttrSpec, AttrType, OpTypeError
from eqsat.ops.fused import _make
from eqsat.ops.registry import register

ROUNDING_ATTR = AttrSpec(
    "rounding", AttrType.STR, "even", "ties: even (to the even neighbour) or away (from zero)"
)


def check_scale(op: str, attrs: Attrs) -> None:
    if not attrs["scale"] > 0:
        raise OpTypeError(f"'{op}': scale must be positive, got {attrs['scale']}")


def check_rounding(op: str, attrs: Attrs) -> None:
    from eqsat.quant.fixedpoint import ROUNDINGS

    if attrs["rounding"] not in ROUNDINGS:
        raise OpTypeError(
            f"'{op}': rounding must be one of {', '.join(ROUNDINGS)}, got '{attrs['rounding']}'"
        )


def fused(
    name: str,
    operands: tuple[str, ...],
    body,
    attrs: tuple[AttrSpec, ...],
    dtype: str,
    check: Callable[[Sequence[TensorType], TensorType], None] | None = None,
):
    """A fused kernel around a qmatmul (with its GEMM `tile`, as every contraction
    kernel has). The result dtype is given: the e-graph template of a body whose
    dtype comes from a literal attribute (cast to f32) is not derived. `check` as
    eqsat.ops.fused's."""
    op = _make(name, operands, body, (*attrs, TILE_ATTR), check=check)
    return register(replace(op, egg_dtype=dtype))
