"""The table of all ops. Op modules add their entries at import time."""

from __future__ import annotations

from eqsat.ops.base import OpDef

REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op '{op.name}' is defined twice")
    REGISTRY[op.name] = op
    return op


def get_op(name: str) -> OpDef | None:
    return REGISTRY.get(name)
