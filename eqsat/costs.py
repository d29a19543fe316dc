"""The cost of one op on the hardware: registry op -> hwsim kernel work -> cycles.

Every non-leaf op is one kernel that reads its operands from DRAM and writes its
result back; fused ops read and write only their own operands and result, which is
where fusion saves. A reshape of a row-major tensor moves no data and costs nothing.
A matrix kernel with an explicit `tile` attribute is priced at exactly that tile
(eqsat.tiling.tiled_cost); without one, at the best tile the cost model's own search
finds among those the backend can run next to the kernel's epilogue, which is what the
backend then picks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY, AttrValue, OpDef, OpKind
from eqsat.ops.fused import body_nodes
from eqsat.scan_plan import scan_cost
from eqsat.spatial_plan import add_costs, group_share, grouped_prep_cost, planned_cost
from eqsat.tiling import fitting_search_cost, node_tile, tile_sram_bytes, tiled_cost
from eqsat.vector_passes import vector_passes
from hwsim.costmodel import KernelCost, KernelWork, kernel_cycles
from hwsim.hardware import Hardware

FREE_OPS = frozenset({"reshape"})
# Added to the cycles of a kernel the backend cannot emit, so that extraction takes any
# alternative (a row-wise kernel whose row does not fit SRAM: the unfused ops stream).
UNRUNNABLE_CYCLES = 10**12


def _matmul_dims(
    op: str, in_types: Sequence[TensorType], out: TensorType
) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a matmul, or of a conv as an implicit GEMM."""
    if op in ("conv2d", "qconv2d"):
        w = in_types[1]
        n, o, ho, wo = out.shape
        return 1, n * ho * wo, o, w.shape[1] * w.shape[2] * w.shape[3]
    a = in_types[0]
    return math.prod(out.shape[:-2]), out.shape[-2], out.shape[-1], a.shape[-1]


def kernel_work(
    op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs: Mapping[str, AttrValue]
) -> KernelWork | None:
    """What running this op as one kernel costs, or None for leaves and free ops."""
    op = REGISTRY[op_name]
    if op.kind is OpKind.LEAF or op_name in FREE_OPS:
        return None
    flops = op.flops(in_types, out, attrs)
    bytes_in = op.bytes_read(in_types, attrs)
    bytes_out = op.bytes_written(out)
    dtype = in_types[0].dtype.value if in_types else out.dtype.value
    contraction = None
    if op.kind in (OpKind.MATMUL, OpKind.CONV):
        contraction = (op_name, list(in_types), out)
    elif op.kind is OpKind.FUSED and op.composition is not None:
        for inner in body_nodes(op.composition, op.operands, in_types, attrs):
            if inner.op.kind in (OpKind.MATMUL, OpKind.CONV):
                contraction = (inner.op.name, list(inner.in_types), inner.out)
                break
    if contraction is not None:
        name, c_in, c_out = contraction
        batch, m, n, k = _matmul_dims(name, c_in, c_out)
        macs = batch * m * n * k
        return KernelWork(
            kind="conv" if name in ("conv2d", "qconv2d") else "matmul",
            dtype=c_in[0].dtype.value,
            macs=macs,
            m=m,
            n=n,
            k=k,
            batch=batch,
            vector_ops=max(flops - 2 * macs, 0),
            bytes_in=bytes_in,
            bytes_out=bytes_out,
        )
    kind = "layout" if op.kind is OpKind.LAYOUT else "vector"
    # the lane passes of the kernel's instructions where they are known, else FLOPs
    lanes = vector_passes(op_name, in_types, out, attrs)
    return KernelWork(
        kind=kind,
        dtype=dtype,
        vector_ops=(flops if lanes is None else lanes) if kind == "vector" else out.numel,
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        working_set_bytes=_working_set(op, in_types, out),
    )


def _working_set(op: OpDef, in_types: Sequence[TensorType], out: TensorType) -> int:
    """Bytes that must be resident at once: a whole row for row-wise normalizations."""
    if op.kind is OpKind.NORMALIZE and out.rank:
        row = out.shape[-1] * max(out.dtype.itemsize, 4)
        return 2 * row + sum(t.nbytes for t in in_types[1:])
    return 0


def _epilogue_bytes(op: OpDef, in_types: Sequence[TensorType], out: TensorType, conv: bool) -> int:
    """SRAM bytes per output element a matrix kernel needs besides its output slot, as
    the backend allocates them: two slots for each epilogue operand of the output's
    size (a residual; broadcast rows are not counted) and the transposed accumulator
    of a convolution."""
    extra = 4 if conv else 0
    if op.kind is OpKind.FUSED:
        extra += sum(2 * t.dtype.itemsize for t in in_types[2:] if t.numel == out.numel)
    return extra


def row_kernel_bytes(op: OpDef, in_types: Sequence[TensorType], out: TensorType) -> int:
    """SRAM the backend's row kernel (softmax, layernorm) needs for one row
    (backend/rowwise.py: input and output double buffered, 8 bytes of scratch per
    element, the layernorm parameters resident, 1 KiB of slack); 0 for other ops."""
    if op.kind is not OpKind.NORMALIZE or not out.rank:
        return 0
    n = out.shape[-1]
    per_row = n * (2 * in_types[0].dtype.itemsize + 2 * out.dtype.itemsize + 8) + 16
    resident = sum(2 * n * t.dtype.itemsize for t in in_types[1:])
    return per_row + resident + 1024


def op_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> KernelCost | None:
    if op_name == "cumsum":  # a scan kernel, planned instruction by instruction
        return scan_cost(hw, in_types[0], attrs, UNRUNNABLE_CYCLES)
    planned = planned_cost(hw, op_name, in_types, out, attrs)
    if planned is not None:  # gather, pad, pooling, depthwise convolution
        if not planned.feasible:  # no tile fits SRAM: extraction must take another form
            return replace(planned, cycles=planned.cycles + UNRUNNABLE_CYCLES)
        return planned
    work = kernel_work(op_name, in_types, out, attrs)
    if work is None:
        return None
    groups = int(attrs.get("groups", 1))  # type: ignore[arg-type]
    if work.kind == "conv" and groups > 1:
        # one GEMM per group (N = O/G), after the prep of the group-major image
        gemm = _gemm_cost(hw, op_name, in_types, out, attrs, group_share(work, groups))
        return add_costs([grouped_prep_cost(hw, in_types[0], attrs), *[gemm] * groups])
    cost = kernel_cycles(hw, work)
    if work.kind in ("matmul", "conv"):
        return _gemm_cost(hw, op_name, in_types, out, attrs, work)
    if row_kernel_bytes(REGISTRY[op_name], in_types, out) > hw.sram_bytes:
        cost = replace(cost, cycles=cost.cycles + UNRUNNABLE_CYCLES, feasible=False)
    return cost


def _gemm_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    work: KernelWork,
) -> KernelCost:
    """A matrix kernel at its explicit tile, else at the model's best tile that leaves
    room for the epilogue."""
    cost = kernel_cycles(hw, work)
    epilogue = _epilogue_bytes(REGISTRY[op_name], in_types, out, work.kind == "conv")
    transposed = op_name == "matmul_nt"
    tile = node_tile(attrs)
    if tile is not None:
        return tiled_cost(hw, work, tile, epilogue, transposed)
    if cost.tile and tile_sram_bytes(work, cost.tile, epilogue, transposed) > hw.sram_bytes:
        # The model's tile leaves no room for the epilogue: the backend picks among
        # the tiles it can run, and so does the price.
        cost = fitting_search_cost(hw, work, epilogue, transposed) or cost
    return cost


@dataclass(frozen=True)
class ProgramCost:
    cycles: int
    dram_bytes: int
    kernels: int
    infeasible: int  # kernels whose working set does not fit SRAM


def program_cost(graph, hw: Hardware) -> ProgramCost:
    """Kernels run one after another: the program costs the sum of its live kernels."""
    live = graph.live()
    cycles = dram = kernels = infeasible = 0
    for i, node in graph:
        if not live[i]:
            continue
        in_types = [graph.nodes[j].type for j in node.inputs]
        cost = op_cost(hw, node.op, in_types, node.type, node.attr_dict)
        if cost is None:
            continue
        cycles += cost.cycles
        dram += cost.dram_bytes
        kernels += 1
        infeasible += not cost.feasible
    return ProgramCost(cycles, dram, kernels, infeasible)
