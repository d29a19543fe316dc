"""The price of a declared instruction's op: the backend's streaming kernel (tiles,
loads, stores through the simulator's queues: eqsat/spatial_plan.py) with one
`custom.NAME` instruction per tile, timed by the declared cost."""

from __future__ import annotations

from collections.abc import Sequence

from eqsat.custom_instr.derive import InstructionOp
from eqsat.ir.strides import broadcast_strides, row_major
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY
from eqsat.spatial_plan import CUSTOM_PREFIX, Stream, kernel_cost
from hwsim.costmodel import KernelCost
from hwsim.hardware import Hardware


def instruction_cost(
    hw: Hardware, op_name: str, in_types: Sequence[TensorType], out: TensorType
) -> KernelCost | None:
    """The kernel cost of an instruction op on `hw`; None for any other op."""
    op = REGISTRY.get(op_name)
    if not isinstance(op, InstructionOp) or hw.instruction(op_name) is None:
        return None
    leaves = tuple((broadcast_strides(t.shape, out.shape), t.dtype.itemsize) for t in in_types)
    stream = Stream(
        out.shape, row_major(out.shape), out.dtype.itemsize, leaves, (CUSTOM_PREFIX + op_name,)
    )
    return kernel_cost(hw, [stream])
