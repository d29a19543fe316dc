"""The op registry. Importing this package registers every op."""

from eqsat.ops import elementwise, fused, layout, leaves, linalg, nn, quant, reduce  # noqa: F401
from eqsat.ops.base import (
    REQUIRED,
    Attrs,
    AttrSpec,
    AttrType,
    AttrValue,
    OpDef,
    OpKind,
    OpTypeError,
)
from eqsat.ops.registry import REGISTRY, get_op

__all__ = [
    "REGISTRY",
    "REQUIRED",
    "AttrSpec",
    "AttrType",
    "AttrValue",
    "Attrs",
    "OpDef",
    "OpKind",
    "OpTypeError",
    "get_op",
]
