"""The cost of one op on the hardware: registry op -> hwsim kernel work -> cycles.

Every non-leaf op is one kernel that reads its operands from DRAM and writes its
result back; fused ops read and write only their own operands and result, which is
where fusion saves. A reshape, slice or broadcast is a view the backend's kernels read
in place: it moves no data and costs nothing (so does a transpose that keeps the last
axis last; one that moves it next to last costs the on-chip transposes of its reader).
A matrix kernel with an explicit `tile` attribute is priced at exactly that tile
(eqsat.tiling.tiled_cost); without one, at the best tile the cost model's own search
finds among those the backend can run next to the kernel's epilogue, which is what the
backend then picks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from eqsat.attention_plan import ATTENTION_OPS
from eqsat.attention_price import attention_cost
from eqsat.body_ops import body_ops
from eqsat.custom_instr.price import instruction_cost
from eqsat.ir.strides import (
    Strides,
    broadcast_strides,
    keeps_last_axis,
    nocopy_reshape,
    row_major,
)
from eqsat.ir.types import DType, TensorType
from eqsat.norm_epilogue import NORM_EPILOGUE, norm_epilogue_cost, whole_rows_apply
from eqsat.norm_prologue import NORM_MATMUL, norm_matmul_cost
from eqsat.ops import REGISTRY, AttrValue, OpDef, OpKind
from eqsat.ops.chain import CHAINS
from eqsat.ops.fused import BodyNode, body_nodes
from eqsat.ops.quant_ort import ROW_QUANT_OPS, row_quant_steps
from eqsat.ops.reduce import reduced_axes
from eqsat.row_plan import (
    PARAMS,
    ROW_KINDS,
    RowQuant,
    column_reduce_plan,
    reduce_cost,
    row_cost,
)
from eqsat.scan_plan import scan_cost
from eqsat.spatial_plan import (
    Stream,
    add_costs,
    conv_gemm_work,
    conv_prep_cost,
    conv_transposed_work,
    fill_stream,
    group_share,
    grouped_prep_cost,
    kernel_cost,
    planned_cost,
    plans_cost,
    requantize_ch_stream,
)
from eqsat.tiling import fitting_search_cost, node_tile, tile_sram_bytes, tiled_cost
from eqsat.vector_passes import LANE_OPS, lane_ops, vector_passes
from eqsat.window_plan import window_cost
from eqsat.winograd_cost import WINOGRAD_OPS, winograd_cost
from hwsim import timing
from hwsim.costmodel import KernelCost, KernelWork, kernel_cycles
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware

FREE_OPS = frozenset({"reshape", "slice", "broadcast"})  # views: the backend copies nothing
# Added to the cycles of a kernel the backend cannot emit, so that extraction takes any
# alternative (a row-wise kernel whose row does not fit SRAM: the unfused ops stream).
UNRUNNABLE_CYCLES = 10**12


def _matmul_dims(
    op: str, in_types: Sequence[TensorType], out: TensorType
) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a matmul, or of a conv as an implicit GEMM."""
    if op in ("conv2d", "qconv2d"):  # one GEMM per image, as the backend runs it
        w = in_types[1]
        n, o, ho, wo = out.shape
        return n, ho * wo, o, w.shape[1] * w.shape[2] * w.shape[3]
    a, b = in_types[0], in_types[1]
    if len(b.shape) == 2 and a.shape[:-1] == out.shape[:-1]:
        # one B for every batch index: the batch's rows are one M (backend/gemm_kernel.py
        # fold_batch_rows), so B's panels are loaded once, not once per batch index
        return 1, math.prod(out.shape[:-1]), out.shape[-1], a.shape[-1]
    return math.prod(out.shape[:-2]), out.shape[-2], out.shape[-1], a.shape[-1]


def is_free_transpose(op_name: str, attrs: Mapping[str, AttrValue]) -> bool:
    """Is this transpose a view that costs nothing? It is when the input's last
    (contiguous) axis stays last: every kernel loads such a view row by row, and
    producers write straight into it."""
    if op_name != "transpose":
        return False
    return keeps_last_axis(tuple(attrs["perm"]))  # type: ignore[arg-type]


def _transposed_view_cost(hw: Hardware, out: TensorType, attrs) -> KernelCost | None:
    """A transpose that moves the contiguous axis next to last is a view a matrix
    kernel loads as blocks and turns on chip (backend/contract.py matrix_mode "t"): a
    transpose instruction per block, no kernel and no DRAM traffic of its own. Other
    transposes are copies (None: priced as a kernel). A row kernel reading such a view
    copies it first: the exception, not priced here."""
    perm = tuple(attrs["perm"])  # type: ignore[arg-type]
    if perm[-2] != len(perm) - 1:
        return None
    rows, cols = out.shape[-2], out.shape[-1]
    blocks = out.numel // max(1, rows * cols)
    vector = blocks * timing.vector_cycles(hw, rows * cols, "transpose")
    return KernelCost(vector, vector, 0, vector, 0, 0)


def _patch(op: str, in_types: Sequence[TensorType], out: TensorType) -> tuple[int, int, int]:
    """A convolution's implicit GEMM A loads (hwsim KernelWork.patch): output row width,
    K run of one kernel row, bytes of the input image."""
    if op not in ("conv2d", "qconv2d"):
        return ()  # type: ignore[return-value]
    x, w = in_types[0], in_types[1]
    return out.shape[3], w.shape[1] * w.shape[3], x.nbytes


def kernel_work(
    op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs: Mapping[str, AttrValue]
) -> KernelWork | None:
    """What running this op as one kernel costs, or None for leaves and free ops."""
    op = REGISTRY[op_name]
    if op.kind is OpKind.LEAF or op_name in FREE_OPS or is_free_transpose(op_name, attrs):
        return None
    flops = op.flops(in_types, out, attrs)
    bytes_in = op.bytes_read(in_types, attrs)
    bytes_out = op.bytes_written(out)
    dtype = in_types[0].dtype.value if in_types else out.dtype.value
    contraction = None
    body = []
    gemms = 1  # a gated product's body multiplies one input by two weight matrices
    if op.kind in (OpKind.MATMUL, OpKind.CONV):
        contraction = (op_name, list(in_types), out)
    elif op.kind is OpKind.FUSED and op.composition is not None:
        body = body_nodes(op.composition, op.operands, in_types, attrs)
        products = [b for b in body if b.op.kind in (OpKind.MATMUL, OpKind.CONV)]
        if products:
            inner = products[0]
            contraction = (inner.op.name, list(inner.in_types), inner.out)
            gemms = len(products)
    if op_name == "matmul_wq":  # packed weights, dequantized in the load path
        from eqsat.wq_work import matmul_wq_work

        return matmul_wq_work(in_types, out, attrs, bytes_in, bytes_out)
    if contraction is not None:
        name, c_in, c_out = contraction
        batch, m, n, k = _matmul_dims(name, c_in, c_out)
        macs = batch * m * n * k * gemms
        sums_loads, sums_ops = _zero_point_epilogue(name, attrs, out.numel)
        return KernelWork(
            gemms=gemms,
            kind="conv" if name in ("conv2d", "qconv2d") else "matmul",
            dtype=c_in[0].dtype.value,
            macs=macs,
            m=m,
            n=n,
            k=k,
            batch=batch,
            vector_ops=max(flops - 2 * macs, 0) + sums_ops + _conversion_passes(body),
            bytes_in=bytes_in,
            bytes_out=bytes_out,
            patch=_patch(name, c_in, c_out),
            # matmul_nt turns its B [n, k] on chip tile by tile; priced without it so
            # that it ranks against matmul(a, transpose(b)), whose transposed view is
            # priced once per block (_transposed_view_cost) though its reader turns
            # each B tile again per M tile: pricing only one side truthfully made
            # extraction pick the slower of the two (rules/layout.rules test)
            b_transposed=False,
            channel_axis="n" if _per_channel_requantize(op) else "",
            epilogue_loads=_epilogue_loads(
                op, in_types, out, gemms, name in ("conv2d", "qconv2d"), folded=batch == 1
            )
            + sums_loads,
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


def _conversion_passes(body: Sequence[BodyNode]) -> int:
    """What a fused kernel's quantize and dequantize (of its `body`) cost beyond their
    FLOP count: the lane passes of the instructions they expand into (a quantize
    divides, 4 passes, then rounds and adds the zero point), less the FLOPs the
    kernel's work already counts."""
    extra = 0
    for b in body:
        if b.op.name in ("quantize", "dequantize"):
            lanes = vector_passes(b.op.name, b.in_types, b.out, b.attrs) or 0
            extra += lanes - b.op.flops(b.in_types, b.out, b.attrs)
    return max(extra, 0)


def _zero_point_epilogue(
    name: str, attrs: Mapping[str, AttrValue], outputs: int
) -> tuple[tuple[tuple[bool, bool, int], ...], int]:
    """(epilogue loads, vector ops) a qmatmul adds for its zero points (backend/
    zero_points.py zero_point_epilogue): a_zero subtracts a_zero times the weight sums, an
    i32 row along n loaded with every tile; b_zero the same with the row sums of a, a
    column along m; both, a constant. (A qconv2d's a_zero is left as it was priced:
    measured on cnn.model's int8 convolutions, adding its sums overprices them 11%.)"""
    if name != "qmatmul":
        return (), 0
    za, zb = int(attrs.get("a_zero", 0)), int(attrs.get("b_zero", 0))  # type: ignore[call-overload]
    loads = ((False, True, 4),) * bool(za) + ((True, False, 4),) * bool(zb)
    return loads, outputs * (len(loads) + bool(za and zb))


def _per_channel_requantize(op: OpDef) -> bool:
    """Does this fused matrix kernel's epilogue requantize channel by channel?"""
    if op.kind is not OpKind.FUSED or op.composition is None:
        return False

    def ops(call) -> set[str]:
        if isinstance(call, str):
            return set()
        return {call.op}.union(*(ops(a) for a in call.args))

    return bool(ops(op.composition) & {"requantize_pc", "requantize_ch"})


def _epilogue_loads(
    op: OpDef,
    in_types: Sequence[TensorType],
    out: TensorType,
    gemms: int,
    conv: bool,
    folded: bool = False,
) -> tuple[tuple[bool, bool, int], ...]:
    """The operands a fused matrix kernel's epilogue loads per output tile (those after
    the products' own, scalars aside), as KernelWork.epilogue_loads: along m and n of
    the GEMM (a matmul's output rows and columns, every leading axis of the output
    its rows where the batch is `folded` into one product; a convolution's pixels and
    output channels, its implicit GEMM)."""
    if op.kind is not OpKind.FUSED or not out.rank:
        return ()
    loads = []
    for t in in_types[1 + gemms :]:
        if t.numel <= 1:
            continue
        dims = (1,) * (out.rank - t.rank) + tuple(t.shape)
        if conv:  # [N, O, HO, WO]: m the pixels, n the channels
            on_m, on_n = dims[-1] > 1 or dims[-2] > 1, dims[-3] > 1
        else:
            rows = dims[:-1] if folded else dims[-2:-1]
            on_m, on_n = any(d > 1 for d in rows), dims[-1] > 1
        loads.append((on_m, on_n, t.dtype.itemsize))
    return tuple(loads)


def _working_set(op: OpDef, in_types: Sequence[TensorType], out: TensorType) -> int:
    """Bytes that must be resident at once: a whole row for row-wise normalizations."""
    if op.kind is OpKind.NORMALIZE and out.rank:
        row = out.shape[-1] * max(out.dtype.itemsize, 4)
        return 2 * row + sum(t.nbytes for t in in_types[1:])
    return 0


def _epilogue_bytes(
    op: OpDef, in_types: Sequence[TensorType], out: TensorType, conv: bool, gemms: int = 1
) -> int:
    """SRAM bytes per output element a matrix kernel needs besides its output slot, as
    the backend allocates them: two slots for each epilogue operand of the output's
    size (a residual; broadcast rows are not counted) and the transposed accumulator
    of a convolution."""
    extra = 4 if conv else 0
    if op.kind is OpKind.FUSED:
        first = 1 + gemms  # the operands after the products' own (gated: x, wg, wu)
        extra += sum(2 * t.dtype.itemsize for t in in_types[first:] if t.numel == out.numel)
    return extra


def _row_cost(
    hw: Hardware, op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs
) -> KernelCost:
    """A row kernel (softmax, layernorm, rmsnorm) as eqsat/row_plan.py plans it: whole
    rows of the normalized axis per tile; unrunnable when one row does not fit SRAM."""
    axis = int(attrs.get("axis", -1)) % out.rank if out.rank else 0  # type: ignore[call-overload]
    n = out.shape[axis] if out.rank else 1
    kind, quant = op_name, None
    if op_name in ROW_QUANT_OPS:  # the same row kernel with its int8 edges
        kind, quant = ROW_QUANT_OPS[op_name], RowQuant(*row_quant_steps(op_name, attrs))
    params = dict(zip(PARAMS[kind], (t.dtype.value for t in in_types[1:]), strict=False))
    x_dtype, out_dtype = in_types[0].dtype.value, out.dtype.value
    cost = row_cost(hw, kind, out.numel // max(1, n), n, x_dtype, out_dtype, params, quant)
    if not cost.feasible:
        return replace(cost, cycles=cost.cycles + UNRUNNABLE_CYCLES)
    return cost


REDUCE_OPS = ("reduce_sum", "reduce_max", "reduce_mean")
# Elementwise ops whose kernel is one vector instruction per tile (backend/ewise_ops.py),
# by the instruction that prices it.
ONE_INSTRUCTION = {
    **{op: op for op in ("add", "sub", "mul", "div", "neg", "relu", "sigmoid", "tanh", "exp")},
    **{op: op for op in ("sqrt", "rsqrt", "reciprocal")},
    "maximum": "max",
    "minimum": "min",
}


# One-instruction ops taking an immediate for a scalar operand (backend/ewise_ops.py).
BINARY_IMMEDIATE = frozenset({"add", "sub", "mul", "div", "maximum", "minimum"})


def streamed_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    stored: Sequence[Strides | None] = (),
    out_stored: Strides | None = None,
) -> KernelCost | None:
    """An elementwise op whose instructions are known (stream_ops) as the backend's
    streaming kernel runs it (eqsat/spatial_plan.py stream_plan: its tiles, the
    broadcast operands it loads with every tile, each step through the simulator's
    queues); None for other ops. f32 only, but for the comparisons, logic and selects
    (one ALU pass whatever the dtype: bool masks, their operands). `stored`: per
    operand, the strides it is laid out with where not row-major (a view);
    `out_stored`: the result's, where the kernel writes it transposed
    (backend/layouts.py)."""
    out_strides = row_major(out.shape) if out_stored is None else out_stored
    if op_name == "requantize_ch" and out.rank:  # per-channel instructions (spatial_plan)
        return kernel_cost(hw, [requantize_ch_stream(in_types, out, attrs)])
    layout = list(stored) + [None] * (len(in_types) - len(stored))
    if out.rank and any(t.dtype.value != "f32" for t in (*in_types, out)):
        body = body_ops(op_name, in_types, out, attrs)  # a fused kernel with integer edges
        if body is not None:
            leaves = tuple(
                (_leaf_strides(t.shape, out.shape, st), t.dtype.itemsize)
                for t, st in zip(in_types, layout, strict=True)
                if t.numel > 1
            )
            stream = Stream(
                out.shape, out_strides, out.dtype.itemsize, leaves, body.ops, body.intermediates
            )
            return kernel_cost(hw, [stream])
    ops = stream_ops(op_name, in_types, out, attrs)
    if ops is None or not out.rank:
        return None
    if op_name not in ANY_DTYPE and any(t.dtype.value != "f32" for t in (*in_types, out)):
        return None
    # a scalar operand is taken to be a constant the backend folds into the instruction
    # as an immediate (`binary.mul ..., 0.35`): no leaf of its own
    arrays = [k for k, t in enumerate(in_types) if t.numel > 1]
    if not arrays or (len(arrays) < len(in_types) and not _folds_scalars(op_name, ops)):
        return None
    leaves = tuple(
        (_leaf_strides(in_types[k].shape, out.shape, layout[k]), in_types[k].dtype.itemsize)
        for k in arrays
    )
    stream = Stream(out.shape, out_strides, out.dtype.itemsize, leaves, ops, _off_spine(op_name))
    return kernel_cost(hw, [stream])


def _leaf_strides(shape: tuple[int, ...], out: tuple[int, ...], stored: Strides | None) -> Strides:
    """An operand's strides over the output it is broadcast to (row-major unless
    `stored` lays it out otherwise)."""
    if stored is None:
        return broadcast_strides(shape, out)
    lead = len(out) - len(shape)
    return (0,) * lead + tuple(
        0 if d == 1 and o != 1 else st for d, o, st in zip(shape, out[lead:], stored, strict=True)
    )


def _folds_scalars(op_name: str, ops: Sequence[str]) -> bool:
    """Does the kernel take its scalar operands as instruction immediates: a binary op
    that takes one, or a fused elementwise op whose body's binary instructions all do
    (`mul_add(x, 0.35, b)`: the scale is the multiply's immediate)?"""
    if op_name in BINARY_IMMEDIATE:
        return True
    if REGISTRY[op_name].kind is not OpKind.FUSED:
        return False
    return all(op in _IMMEDIATE_INSTRUCTIONS or op in _UNARY_INSTRUCTIONS for op in ops)


# Vector instructions taking a scalar operand as an immediate, and one-operand ones
_IMMEDIATE_INSTRUCTIONS = frozenset({"add", "sub", "mul", "div", "max", "min"})
_UNARY_INSTRUCTIONS = frozenset(
    {"copy", "neg", "abs", "relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal"}
)


# Ops of one ALU pass on any dtype (eqsat/vector_passes.py LANE_OPS).
ANY_DTYPE = frozenset(
    {"equal", "less", "less_equal", "greater", "greater_equal", "where"}
    | {"logical_and", "logical_or", "logical_xor", "logical_not"}
)


def _off_spine(op_name: str) -> int:
    """Intermediate tiles of an elementwise kernel: the root's first-operand chain is
    computed in the output tile, every other subexpression in a tile of its own
    (backend/tileexpr.py spine); hard_swish's hard_sigmoid is one."""
    if op_name == "hard_swish":
        return 1
    op = REGISTRY[op_name]
    if op.kind is not OpKind.FUSED or op.composition is None:
        return 0

    def count(call) -> int:
        if isinstance(call, str):
            return 0
        rest = sum(1 + count(a) for a in call.args[1:] if not isinstance(a, str))
        return rest + count(call.args[0]) if call.args else rest

    return count(op.composition)


def stream_ops(
    op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs: Mapping[str, AttrValue]
) -> tuple[str, ...] | None:
    """The vector instructions an f32 elementwise kernel runs per tile (backend/ewise_ops.py
    EXPR, ewise_masks.py; a fused elementwise op: those of its body), or None where
    they are not known."""
    if op_name in ONE_INSTRUCTION:
        return (ONE_INSTRUCTION[op_name],)
    if op_name == "gelu":
        return ("gelu_erf" if attrs.get("approximate", "tanh") == "none" else "gelu",)
    if op_name in LANE_OPS or op_name == "clip":
        return lane_ops(op_name, in_types, attrs, out.dtype.value)
    op = REGISTRY[op_name]
    if op.kind is not OpKind.FUSED or op.composition is None:
        return None
    ops: list[str] = []
    for b in body_nodes(op.composition, op.operands, in_types, attrs):
        inner = stream_ops(b.op.name, b.in_types, b.out, b.attrs)
        if inner is None or b.op.kind not in (OpKind.ELEMENTWISE, OpKind.FUSED):
            return None
        ops += inner
    return tuple(ops)


def concat_cost(
    hw: Hardware,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs,
    stored: Sequence[Strides] | None = None,
) -> KernelCost:
    """A concat as backend/lowering.py lower_concat emits it: one kernel copying each
    input into its slice of the output, a streaming pass per piece, fenced one after
    another (a one-element piece, a constant the backend folds, as a fill). `stored`:
    each input's strides as it lies (row-major when None)."""
    axis = int(attrs["axis"]) % out.rank  # type: ignore[call-overload]
    strides = row_major(out.shape)
    isz = out.dtype.itemsize
    layouts = stored or [row_major(t.shape) for t in in_types]
    streams = [
        fill_stream(t.shape, strides, isz)
        if t.numel == 1
        else Stream(t.shape, strides, isz, ((st, t.dtype.itemsize),), ("copy",))
        for t, st in zip(in_types, layouts, strict=True)
        if t.shape[axis]
    ]
    return kernel_cost(hw, streams)


def _reduce_cost(hw: Hardware, op_name: str, x: TensorType, out: TensorType, attrs) -> KernelCost:
    """A reduction as eqsat/row_plan.py plans it, over its axes moved last; when they
    are not already the trailing axes, across rows as stored if the last axis is kept
    (backend/lowering.py lower_reduce), else after a copy of x in that order."""
    axes = reduced_axes(op_name, x, attrs)
    n = math.prod(x.shape[a] for a in axes)
    mean = op_name == "reduce_mean"
    trailing = tuple(sorted(axes)) == tuple(range(x.rank - len(axes), x.rank))
    block = tuple(sorted(axes)) == tuple(range(min(axes), max(axes) + 1)) if axes else False
    if n > 1 and not trailing and block and x.rank - 1 not in axes and x.shape[-1] > 1:
        lead = x.numel // (n * x.shape[-1])
        op = "max" if op_name == "reduce_max" else "sum"
        plan = column_reduce_plan(
            hw, lead, n, x.shape[-1], x.dtype.value, out.dtype.value, op, mean
        )
        return plans_cost(hw, [plan])
    cost = reduce_cost(hw, x.numel // max(1, n), n, x.dtype.value, out.dtype.value, mean)
    if n > 1 and not trailing:
        copy = KernelWork(
            kind="layout",
            dtype=x.dtype.value,
            vector_ops=x.numel,
            bytes_in=x.nbytes,
            bytes_out=x.nbytes,
        )
        return add_costs([kernel_cycles(hw, copy), cost])
    return cost


def op_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    epilogue_runs: tuple[int, ...] = (),
) -> KernelCost | None:
    """The cycles of op_name as one kernel on `hw` (None: no kernel runs), its operands
    row-major (eqsat/program_cost.py knows better where a graph stores them otherwise:
    `epilogue_runs`, a matrix kernel's epilogue operands loaded in runs of rows,
    KernelWork.epilogue_runs)."""
    custom = instruction_cost(hw, op_name, in_types, out)
    if custom is not None:  # a declared instruction of this hardware (eqsat/custom_instr)
        return custom
    if op_name == "hadamard":  # a vector kernel, planned instruction by instruction
        from eqsat.rotation_plan import hadamard_cost

        block = int(attrs["block"])  # type: ignore[call-overload]
        cost = hadamard_cost(hw, out.numel // block, block)
        if not cost.feasible:  # one block row does not fit SRAM: the backend refuses it
            return replace(cost, cycles=cost.cycles + UNRUNNABLE_CYCLES)
        return cost
    if op_name == "cumsum":  # a scan kernel, planned instruction by instruction
        return scan_cost(hw, in_types[0], attrs, UNRUNNABLE_CYCLES)
    if op_name in ATTENTION_OPS:  # flash attention, planned likewise
        return attention_cost(hw, in_types, out, attrs, UNRUNNABLE_CYCLES)
    if op_name == "transpose" and not is_free_transpose(op_name, attrs):
        view = _transposed_view_cost(hw, out, attrs)
        if view is not None:
            return view
    if op_name in WINOGRAD_OPS:  # the transform kernels' own plan, replayed on the queues
        return winograd_cost(hw, op_name, in_types, out, attrs, UNRUNNABLE_CYCLES)
    planned = window_cost(hw, op_name, in_types, out, attrs) or planned_cost(
        hw, op_name, in_types, out, attrs
    )
    if planned is not None:  # gather, pad, pooling, depthwise convolution
        if not planned.feasible:  # no tile fits SRAM: extraction must take another form
            return replace(planned, cycles=planned.cycles + UNRUNNABLE_CYCLES)
        return planned
    if op_name in NORM_MATMUL:  # a norm in its product's prologue (eqsat/norm_prologue.py)
        return _norm_matmul_cost(hw, op_name, in_types, out, attrs)
    if op_name in NORM_EPILOGUE:  # a norm in its product's epilogue (eqsat/norm_epilogue.py)
        return _norm_epilogue_cost(hw, op_name, in_types, out)
    if op_name in CHAINS:  # two products in one kernel (eqsat/chain_plan.py)
        return _chain_cost(hw, op_name, in_types, out, attrs)
    work = kernel_work(op_name, in_types, out, attrs)
    if work is None:
        return None
    groups = int(attrs.get("groups", 1))  # type: ignore[arg-type]
    if work.kind == "conv" and groups > 1:
        # one GEMM per group (N = O/G), after the prep of the group-major image
        gemm = gemm_cost(hw, op_name, in_types, out, attrs, group_share(work, groups))
        return add_costs([grouped_prep_cost(hw, in_types[0], attrs), *[gemm] * groups])
    if work.kind == "conv":
        return min(_conv_forms(hw, op_name, in_types, out, attrs, work).values(), key=_by_cycles)
    if work.kind == "matmul":
        if op_name == "matmul_wq":  # one row: its columns may split between two units
            from eqsat.wq_work import split_cost, wq_split

            plan = wq_split(hw, work)
            if plan is not None:
                return split_cost(hw, work, plan)
        work = replace(work, epilogue_runs=epilogue_runs)
        return gemm_cost(hw, op_name, in_types, out, attrs, work)
    if op_name in ROW_KINDS or op_name in ROW_QUANT_OPS:
        return _row_cost(hw, op_name, in_types, out, attrs)
    if op_name in REDUCE_OPS:
        return _reduce_cost(hw, op_name, in_types[0], out, attrs)
    if op_name == "concat" and out.rank:
        return concat_cost(hw, in_types, out, attrs)
    streamed = streamed_cost(hw, op_name, in_types, out, attrs)
    if streamed is not None:
        return streamed
    return kernel_cycles(hw, work)


def _norm_matmul_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> KernelCost | None:
    """The inner product's price plus the prologue; unrunnable when it cannot run."""
    _, inner, count = NORM_MATMUL[op_name]
    names = {a.name for a in REGISTRY[inner].attrs}
    inner_attrs = {k: v for k, v in attrs.items() if k in names}
    work = kernel_work(inner, in_types[:count], out, inner_attrs)
    inner_cost = None
    if work is not None:  # A's panels land whole: the rows are normalized on the way in
        work = replace(work, a_whole=True)
        inner_cost = gemm_cost(hw, inner, in_types[:count], out, inner_attrs, work)
    cost = norm_matmul_cost(inner_cost, hw, op_name, in_types[0], out)
    if cost is not None and not cost.feasible:
        return replace(cost, cycles=cost.cycles + UNRUNNABLE_CYCLES)
    return cost


def _norm_epilogue_cost(
    hw: Hardware, op_name: str, in_types: Sequence[TensorType], out: TensorType
) -> KernelCost | None:
    """The inner product at a whole-row tile plus the row program of each output
    tile, its parameter rows read besides; unrunnable when no whole-row tile fits."""
    kind, inner, count = NORM_EPILOGUE[op_name]
    if not whole_rows_apply(in_types, out):  # the two kernels (backend/norm_epilogue.py)
        product = op_cost(hw, inner, in_types[:count], out, {})
        norm = op_cost(hw, kind, [out, *in_types[count:]], out, {})
        return add_costs([product, norm]) if product and norm else None
    work = kernel_work(inner, in_types[:count], out, {})
    if work is None:
        return None
    params = sum(t.nbytes for t in in_types[count:])
    work = replace(work, bytes_in=work.bytes_in + params)
    epilogue = _epilogue_bytes(REGISTRY[inner], in_types[:count], out, False)
    isz = tuple(ITEMSIZE[t.dtype.value] for t in in_types[count:])
    cost = norm_epilogue_cost(hw, op_name, work, epilogue, out, isz)
    if cost is None:  # no tile of whole rows fits: the backend cannot run it
        unrun = kernel_cycles(hw, work)
        return replace(unrun, cycles=unrun.cycles + UNRUNNABLE_CYCLES, feasible=False)
    return cost


def _chain_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> KernelCost | None:
    """The planned kernel's price; unrunnable (the two kernels' price plus the
    penalty) when its plan does not fit this machine."""
    from eqsat.chain_plan import chain_plan

    plan = chain_plan(hw, op_name, in_types, out, attrs, kernel_work)
    if plan is not None:
        return plan.cost
    chain = CHAINS[op_name]
    first, second = REGISTRY[chain.first], REGISTRY[chain.second]
    attrs1 = {k: v for k, v in attrs.items() if k in {a.name for a in first.attrs}}
    attrs2 = {k: v for k, v in attrs.items() if k in {a.name for a in second.attrs}}
    ins1 = [in_types[j] for j in chain.first_inputs]
    h = first.type_of(ins1, first.bind_attrs(attrs1))
    a = op_cost(hw, chain.first, ins1, h, attrs1)
    b = op_cost(hw, chain.second, [h, *(in_types[j] for j in chain.second_inputs)], out, attrs2)
    if a is None or b is None:
        return None
    both = add_costs([a, b])
    return replace(both, cycles=both.cycles + UNRUNNABLE_CYCLES, feasible=False)


def _by_cycles(cost: KernelCost) -> tuple[int, int]:
    return cost.cycles, cost.dram_bytes


def _conv_forms(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    work: KernelWork,
) -> dict[str, KernelCost]:
    """The ways the backend can run an ungrouped convolution, priced: `implicit` (the
    padded NHWC image (conv_prep), then patches @ weights), `transposed` (the same
    image, then weights @ patches: backend/conv_transposed.py) and, for a pointwise
    convolution, `matmul` (weights @ x on the NCHW tensors, no prep:
    backend/conv_pointwise.py)."""
    gemm = gemm_cost(hw, op_name, in_types, out, attrs, work)
    prep = conv_prep_cost(hw, op_name, in_types, attrs)
    forms = {"implicit": gemm if prep is None else add_costs([gemm, prep])}
    mm_work = conv_gemm_work(op_name, in_types, attrs, work)
    if mm_work is not work:
        forms["matmul"] = gemm_cost(hw, op_name, in_types, out, attrs, mm_work)
    t_work = conv_transposed_work(op_name, in_types, out, attrs, work)
    if t_work is not None and prep is not None:
        t_gemm = gemm_cost(hw, op_name, in_types, out, attrs, t_work, transposed_b=True)
        forms["transposed"] = add_costs([t_gemm, prep])
    return forms


def conv_form(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> str:
    """How the backend runs this ungrouped convolution: the form (see _conv_forms)
    the model prices cheapest; `implicit` for anything else."""
    work = kernel_work(op_name, in_types, out, attrs)
    if work is None or work.kind != "conv" or int(attrs.get("groups", 1)) > 1:  # type: ignore[call-overload]
        return "implicit"
    forms = _conv_forms(hw, op_name, in_types, out, attrs, work)
    return min(forms, key=lambda f: _by_cycles(forms[f]))


def conv_as_matmul(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
) -> bool:
    """Does the backend run this convolution as a matmul on its NCHW tensors?"""
    return conv_form(hw, op_name, in_types, out, attrs) == "matmul"


def gemm_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    out: TensorType,
    attrs: Mapping[str, AttrValue],
    work: KernelWork,
    transposed_b: bool = False,
) -> KernelCost:
    """A matrix kernel at its explicit tile, else at the model's best tile that leaves
    room for the epilogue (`transposed_b`: B is turned on chip, as matmul_nt's)."""
    cost = kernel_cycles(hw, work)
    epilogue = _epilogue_bytes(REGISTRY[op_name], in_types, out, work.kind == "conv", work.gemms)
    transposed = op_name == "matmul_nt" or transposed_b
    tile = node_tile(attrs)
    if tile is not None:
        return tiled_cost(hw, work, tile, epilogue, transposed)
    if cost.tile and tile_sram_bytes(work, cost.tile, epilogue, transposed) > hw.sram_bytes:
        # The model's tile leaves no room for the epilogue: the backend picks among
        # the tiles it can run, and so does the price.
        cost = fitting_search_cost(hw, work, epilogue, transposed) or cost
    return cost


def _product_operands(op: OpDef) -> tuple[str, int, int] | None:
    """(qmatmul or qconv2d, index of its a, index of its b) among `op`'s operands, for
    an integer product or a fused kernel around one; None for anything else."""
    if op.name in ("qmatmul", "qconv2d"):
        return op.name, 0, 1
    if op.kind is not OpKind.FUSED or op.composition is None:
        return None

    def find(call):
        if isinstance(call, str):
            return None
        if call.op in ("qmatmul", "qconv2d"):
            return call
        return next((f for a in call.args if (f := find(a)) is not None), None)

    call = find(op.composition)
    if call is None or not all(isinstance(a, str) for a in call.args[:2]):
        return None
    return call.op, op.operands.index(call.args[0]), op.operands.index(call.args[1])


def zero_point_sums_cost(
    hw: Hardware,
    op_name: str,
    in_types: Sequence[TensorType],
    attrs: Mapping[str, AttrValue],
    runtime: Sequence[bool],
) -> int:
    """Cycles per inference of the reduction kernels the backend adds to an int8
    product for its zero points when the summed operand is a run-time value
    (`runtime[k]`: operand k is neither a param, a constant nor computed from those):
    a_zero takes the column sums of b (a transposed copy, then a row reduction;
    backend/zero_points.py zero_point_epilogue, conv_gemm_epilogue), b_zero the row sums of
    a. Sums over weights are folded at compile time or prepared at load time: free."""
    found = _product_operands(REGISTRY[op_name])
    if found is None:
        return 0
    name, ia, ib = found
    a, b = in_types[ia], in_types[ib]
    total = 0
    if int(attrs.get("a_zero", 0)) and runtime[ib]:  # type: ignore[call-overload]
        if name == "qconv2d":  # [O, C, KH, KW]: its trailing axes
            sums = TensorType(DType.I32, b.shape[:1])
            total += _reduce_cost(hw, "reduce_sum", b, sums, {"axes": (1, 2, 3)}).cycles
        else:  # b [..., K, N] copied to [..., N, K] by a transposed walk, then its rows
            shape = (*b.shape[:-2], b.shape[-1], b.shape[-2])
            strides = row_major(b.shape)
            walk = (*strides[:-2], strides[-1], strides[-2])
            isz = b.dtype.itemsize
            copy = Stream(shape, row_major(shape), isz, ((walk, isz),), ("copy",))
            sums = TensorType(DType.I32, shape[:-1])
            reduce = _reduce_cost(
                hw, "reduce_sum", TensorType(b.dtype, shape), sums, {"axes": (b.rank - 1,)}
            )
            total += kernel_cost(hw, [copy]).cycles + reduce.cycles
    if int(attrs.get("b_zero", 0)) and runtime[ia]:  # type: ignore[call-overload]
        sums = TensorType(DType.I32, a.shape[:-1])
        total += _reduce_cost(hw, "reduce_sum", a, sums, {"axes": (a.rank - 1,)}).cycles
    return total


def view_kind(op_name: str, out: TensorType, operand: TensorType) -> bool | None:
    """Is a term of op `op_name` a view of its operand (a layout op: True) or a kernel's
    result (False)? None for a reshape to its operand's own type: it is whatever its
    operand is (backend/layouts.py sees through it)."""
    if REGISTRY[op_name].kind is not OpKind.LAYOUT:
        return False
    return None if op_name == "reshape" and out == operand else True


def reshape_copy_cost(
    hw: Hardware,
    view_op: str,
    view_in: TensorType,
    view_attrs: Mapping[str, AttrValue],
    view_out: TensorType,
    shape: Sequence[int],
    operand_is_view: bool,
    operand_strides: Strides | None = None,
) -> KernelCost | None:
    """The copy the backend makes to reshape a strided view to `shape`, or None: a free
    transpose (its contiguous axis kept last) or a broadcast is a view of its operand,
    and a reshape that merges axes such a view walks apart cannot be a view
    (backend/views.py View.reshape); the backend copies the view row-major first
    (ShuffleNet's channel shuffle, grouped-query attention's K/V repeat, the phases
    of a dilated convolution). A transpose of a kernel's result is free: the kernel
    stores its result transposed (backend/layouts.py), so only a transpose of a view
    (`operand_is_view`, see view_kind) is copied, whichever axes it moves. The operand
    is read with `operand_strides` (row-major where not given: extraction sees e-nodes,
    not how their operands are stored)."""
    base = row_major(view_in.shape) if operand_strides is None else operand_strides
    if view_op == "transpose" and operand_is_view:
        strides = tuple(base[p] for p in view_attrs["perm"])  # type: ignore[union-attr]
    elif view_op == "broadcast":
        strides = _leaf_strides(view_in.shape, view_out.shape, base)
    else:
        return None
    if not view_out.rank or nocopy_reshape(view_out.shape, strides, tuple(shape)) is not None:
        return None
    isz = view_out.dtype.itemsize
    copy = Stream(view_out.shape, row_major(view_out.shape), isz, ((strides, isz),), ("copy",))
    return kernel_cost(hw, [copy])


def channels_last_reduce_cost(
    hw: Hardware, op_name: str, x: TensorType, out: TensorType, attrs
) -> KernelCost:
    """A reduction of an [N, C, H, W] value stored as [N, H, W, C]: the same
    reduction over that row-major tensor's axes (a global pool runs across its rows)."""
    where = (0, 3, 1, 2)  # axis a of NCHW is axis where[a] of NHWC
    axes = tuple(sorted(where[a] for a in reduced_axes(op_name, x, attrs)))
    stored = TensorType(x.dtype, (x.shape[0], x.shape[2], x.shape[3], x.shape[1]))
    return _reduce_cost(hw, op_name, stored, out, {**attrs, "axes": axes})
