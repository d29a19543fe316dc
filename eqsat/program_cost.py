"""The price of a whole program: its kernels one after another, each priced with
what the graph tells of how its operands are stored and read (eqsat/costs.py prices
one op on row-major operands, as extraction sees an e-node): a window kernel's
channels-last result, a transposed, sliced or reshaped view, a concatenation whose
parts were written in place (eqsat/concat_placement.py), a weight prepared at load
time (free per inference)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from eqsat.attention_plan import ATTENTION_OPS
from eqsat.attention_price import attention_cost
from eqsat.concat_placement import Placement, concat_regions
from eqsat.costs import (
    REDUCE_OPS,
    UNRUNNABLE_CYCLES,
    channels_last_reduce_cost,
    concat_cost,
    conv_form,
    gemm_cost,
    is_free_transpose,
    kernel_work,
    op_cost,
    reshape_copy_cost,
    stream_ops,
    streamed_cost,
    view_kind,
    zero_point_sums_cost,
)
from eqsat.ir.strides import (
    Strides,
    broadcast_strides,
    inverse_perm,
    is_row_major,
    nocopy_reshape,
    row_major,
    row_runs,
    same_layout,
)
from eqsat.ir.types import TensorType
from eqsat.ops import OpKind
from eqsat.ops.winograd import CONV_EPILOGUES
from eqsat.spatial_plan import (
    add_costs,
    conv_gemm_work,
    conv_prep_cost,
    conv_transposed_work,
    nhwc_strides,
    view_copy_cost,
)
from eqsat.weights import (
    RUNTIME,
    VIEW_OPS,
    graph_value_classes,
    prepared_nodes,
    stored_transposed,
)
from eqsat.window_plan import is_window_op, stores_channels_last, window_cost
from eqsat.winograd_cost import winograd_cost
from hwsim.costmodel import KernelCost
from hwsim.hardware import Hardware


@dataclass(frozen=True)
class ProgramCost:
    cycles: int
    dram_bytes: int
    kernels: int
    infeasible: int  # kernels whose working set does not fit SRAM


def program_cost(graph, hw: Hardware) -> ProgramCost:
    """Kernels run one after another: the program costs the sum of its live kernels
    (weights prepared at load time cost nothing per inference: eqsat/weights.py)."""
    facts = GraphFacts.of(graph)
    prepared = prepared_nodes(graph)
    classes = graph_value_classes(graph)
    cycles = dram = kernels = infeasible = 0
    for i, node in graph:
        if not _runs_per_inference(graph, i, facts, prepared, classes):
            continue
        in_types = [graph.nodes[j].type for j in node.inputs]
        if node.op == "reshape":
            view = graph.nodes[node.inputs[0]]
            if view.inputs and classes[view.inputs[0]] == RUNTIME:  # weights: load time
                operand = graph.nodes[view.inputs[0]]
                is_view = view_kind(operand.op, operand.type, _operand_type(graph, operand))
                while is_view is None:  # an identity reshape: as its operand
                    operand = graph.nodes[operand.inputs[0]]
                    is_view = view_kind(operand.op, operand.type, _operand_type(graph, operand))
                stored = _stored(graph, view.inputs[0], facts)
                copy = reshape_copy_cost(
                    hw,
                    view.op,
                    operand.type,
                    view.attr_dict,
                    view.type,
                    node.type.shape,
                    is_view,
                    None if is_row_major(operand.type.shape, stored) else stored,
                )
                if copy is not None:
                    cycles, dram, kernels = (
                        cycles + copy.cycles,
                        dram + copy.dram_bytes,
                        kernels + 1,
                    )
        cost = graph_op_cost(graph, i, hw, facts)
        if cost is None:
            continue
        runtime = [classes[j] == RUNTIME for j in node.inputs]
        cycles += cost.cycles + zero_point_sums_cost(hw, node.op, in_types, node.attr_dict, runtime)
        dram += cost.dram_bytes
        kernels += 1
        infeasible += not cost.feasible
    for copy in _output_copies(graph, hw, facts, prepared):
        cycles, dram, kernels = cycles + copy.cycles, dram + copy.dram_bytes, kernels + 1
    return ProgramCost(cycles, dram, kernels, infeasible)


def _output_copies(graph, hw: Hardware, facts: GraphFacts, prepared) -> list[KernelCost]:
    """The copy kernels backend/compiler.py `outputs` adds: a graph output takes the
    buffer of its value only where that is the whole row-major buffer a kernel wrote,
    and a buffer goes to one output. A leaf (an input, a param, a constant), a weight
    prepared at load time, a view (a slice, a broadcast, a transpose no kernel stored
    transposed) and a buffer another output took are copied. (A window kernel's
    channels-last result is copied out too, priced with the kernel: graph_op_cost.)"""
    copies, taken = [], set()
    for _, i in graph.outputs:
        node = graph.nodes[i]
        if i not in taken and _channels_last(graph, i, facts, views=False):
            taken.add(i)
            continue
        stored = _stored(graph, i, facts)
        buffer = _kernel_buffer(graph, i, prepared)
        if buffer is None or buffer in taken or not is_row_major(node.type.shape, stored):
            copies.append(view_copy_cost(hw, node.type, stored))
        else:
            taken.add(buffer)
    return copies


def _kernel_buffer(graph, i: int, prepared) -> int | None:
    """The kernel result whose whole buffer value i is, through reshapes, transposes
    and slices and broadcasts that keep the shape (None: a leaf, a prepared weight, a
    part or a broadcast of a value)."""
    node = graph.nodes[i]
    while node.op in VIEW_OPS:
        operand = graph.nodes[node.inputs[0]]
        if node.op in ("slice", "broadcast") and operand.type.shape != node.type.shape:
            return None
        i, node = node.inputs[0], operand
    return None if node.is_leaf or i in prepared else i


def kernel_nodes(graph, hw: Hardware) -> list[int]:
    """The nodes program_cost prices as kernels, in program order (not counted: the
    copies it adds for reshapes of views and for graph outputs)."""
    facts = GraphFacts.of(graph)
    prepared = prepared_nodes(graph)
    classes = graph_value_classes(graph)
    return [
        i
        for i, _ in graph
        if _runs_per_inference(graph, i, facts, prepared, classes)
        and graph_op_cost(graph, i, hw, facts) is not None
    ]


def _runs_per_inference(graph, i: int, facts: GraphFacts, prepared, classes) -> bool:
    """Is node i work of each inference: live, not a weight prepared at load time, not
    the transpose of a weight the host stores transposed?"""
    node = graph.nodes[i]
    if not facts.live[i] or i in prepared:
        return False
    return not (
        stored_transposed(node.op, [classes[j] for j in node.inputs])
        and _read_alike(graph, node.inputs[0], prepared, facts)
    )


@dataclass(frozen=True)
class GraphFacts:
    """What pricing a node of a program needs of the whole graph (computed once)."""

    users: list[list[int]]
    live: list[bool]
    placement: Placement
    outputs: frozenset[int]

    @staticmethod
    def of(graph) -> GraphFacts:
        outputs = frozenset(i for _, i in graph.outputs)
        return GraphFacts(graph.users(), graph.live(), concat_regions(graph), outputs)

    def readers(self, i: int) -> list[int]:
        return [u for u in self.users[i] if self.live[u]]


def graph_op_cost(
    graph, i: int, hw: Hardware, facts: GraphFacts | None = None
) -> KernelCost | None:
    """op_cost of node i, with what the graph tells of how its operands are stored and
    read (None: no kernel runs for it):
    - a reduction of a channels-last value (a window kernel's result, or an NCHW view
      of an NHWC tensor) runs across its rows; a pooling or depthwise convolution
      reading one preps the padded image by a strided walk (no direct read);
    - a transpose that window or elementwise kernels read is their view (no kernel);
      one a norm (ROW_COPIERS) reads across its last axis is copied, in the norm's
      kernel;
    - a concat copies only the parts no producer wrote into its buffer
      (eqsat/concat_placement.py);
    - a graph output a window kernel stores channels-last is copied out row-major."""
    facts = GraphFacts.of(graph) if facts is None else facts
    cost = _node_cost(graph, i, hw, facts)
    if cost is None or i not in facts.outputs or not _channels_last(graph, i, facts, views=False):
        return cost
    node = graph.nodes[i]
    return add_costs([cost, view_copy_cost(hw, node.type, _stored(graph, i, facts))])


def _node_cost(graph, i: int, hw: Hardware, facts: GraphFacts) -> KernelCost | None:
    node = graph.nodes[i]
    in_types = [graph.nodes[j].type for j in node.inputs]
    if node.op == "concat":
        copied = facts.placement.copied_parts(graph, i)
        if not copied:
            return None
        parts = [(in_types[k], _stored(graph, node.inputs[k], facts)) for k in copied]
        return concat_cost(
            hw, [t for t, _ in parts], node.type, node.attr_dict, [st for _, st in parts]
        )
    if node.op == "transpose" and not is_free_transpose(node.op, node.attr_dict):
        if is_row_major(node.type.shape, _stored(graph, i, facts)):
            return None  # its operand is stored transposed: the view is row-major
        readers = [
            (u, j)
            for u, j in _view_readers(graph, i, facts)
            if not _copies_row_operand(graph, u, j, facts)
        ]
        if not readers:
            return None  # each reader copies it, in a kernel of its own (priced there)
        if all(_reads_through(graph, u, j, facts) for u, j in readers):
            return None  # read through the view
    if node.op in ROW_COPIERS and _copies_row_operand(graph, i, node.inputs[0], facts):
        cost = op_cost(hw, node.op, in_types, node.type, node.attr_dict)
        view = node.inputs[0]
        copy = view_copy_cost(hw, graph.nodes[view].type, _stored(graph, view, facts))
        return None if cost is None else add_costs([copy, cost])
    if node.op in ATTENTION_OPS:  # kt turned on chip where it is a transposed view
        kt = node.inputs[1]
        turned = not _unit(graph, kt, facts, -1) and _unit(graph, kt, facts, -2)
        attrs = node.attr_dict
        return attention_cost(hw, in_types, node.type, attrs, UNRUNNABLE_CYCLES, turned)
    runs = _epilogue_runs(graph, i, facts)
    if any(runs):
        return op_cost(hw, node.op, in_types, node.type, node.attr_dict, runs)
    stored = [_stored(graph, j, facts) for j in node.inputs]
    written = _written_transposed(graph, i, facts)
    if written or any(
        not is_row_major(t.shape, st) for st, t in zip(stored, in_types, strict=True)
    ):
        layout = [
            None if is_row_major(t.shape, st) else st
            for st, t in zip(stored, in_types, strict=True)
        ]
        attrs = node.attr_dict
        streamed = streamed_cost(hw, node.op, in_types, node.type, attrs, layout, written)
        if streamed is not None:  # an elementwise kernel streams views as they lie
            return streamed
    if node.op in REDUCE_OPS and _channels_last(graph, node.inputs[0], facts, views=False):
        return channels_last_reduce_cost(hw, node.op, in_types[0], node.type, node.attr_dict)
    if not node.inputs or not _channels_last(graph, node.inputs[0], facts):
        return op_cost(hw, node.op, in_types, node.type, node.attr_dict)
    if node.op == "winograd_input" or node.op in CONV_EPILOGUES:  # Winograd reading x
        attrs = node.attr_dict
        return winograd_cost(hw, node.op, in_types, node.type, attrs, UNRUNNABLE_CYCLES, True)
    planned = window_cost(hw, node.op, in_types, node.type, node.attr_dict, True)
    if planned is None:
        turned = _conv_on_channels_last(hw, node.op, in_types, node.type, node.attr_dict)
        return turned or op_cost(hw, node.op, in_types, node.type, node.attr_dict)
    if not planned.feasible:
        return replace(planned, cycles=planned.cycles + UNRUNNABLE_CYCLES)
    return planned


def _stored(graph, j: int, facts: GraphFacts) -> Strides:
    """The strides value j is read with: row-major, channels-last for a window
    kernel's result, a slice's operand's, a reshape's where it is a view, a
    transpose's operand's permuted (unless
    backend/layouts.py stores that operand already transposed: a weight, or an
    elementwise result, that every reader transposes alike)."""
    node = graph.nodes[j]
    if node.op == "transpose":
        k = node.inputs[0]
        if _transposed_alike(graph, k, facts) and (
            graph.nodes[k].op in ("param", "literal")
            or graph.nodes[k].opdef.kind in (OpKind.ELEMENTWISE, OpKind.QUANT)
        ):
            return row_major(node.type.shape)
        inner = _stored(graph, k, facts)
        return tuple(inner[p] for p in node.attr("perm"))  # type: ignore[union-attr]
    if node.op == "slice":  # a view: the same strides, from another offset
        return _stored(graph, node.inputs[0], facts)
    if node.op == "reshape":  # a view where the strides allow it, else a row-major copy
        operand = graph.nodes[node.inputs[0]].type.shape
        inner = _stored(graph, node.inputs[0], facts)
        if not is_row_major(operand, inner):
            viewed = nocopy_reshape(operand, inner, node.type.shape)
            return row_major(node.type.shape) if viewed is None else viewed
    if _channels_last(graph, j, facts, views=False):
        return nhwc_strides(node.type.shape)
    return row_major(node.type.shape)


def _written_transposed(graph, k: int, facts: GraphFacts) -> Strides | None:
    """The strides an elementwise kernel writes value k with where backend/layouts.py
    stores it transposed (every reader transposes it alike), else None."""
    node = graph.nodes[k]
    if node.is_leaf or node.opdef.kind not in (OpKind.ELEMENTWISE, OpKind.QUANT):
        return None
    if k in facts.outputs or not _transposed_alike(graph, k, facts):
        return None
    perm = tuple(graph.nodes[facts.readers(k)[0]].attr("perm"))  # type: ignore[arg-type]
    stored = row_major(tuple(node.type.shape[p] for p in perm))  # the transpose, row-major
    return tuple(stored[q] for q in inverse_perm(perm))


def _transposed_alike(graph, k: int, facts: GraphFacts) -> bool:
    """Does every reader of k transpose it the same way?"""
    perms = {
        tuple(graph.nodes[u].attr("perm")) if graph.nodes[u].op == "transpose" else None
        for u in facts.readers(k)
    }
    return len(perms) == 1 and None not in perms


def _conv_on_channels_last(
    hw: Hardware, op_name: str, in_types: Sequence[TensorType], out: TensorType, attrs
) -> KernelCost | None:
    """An ungrouped convolution whose x is stored channels-last, in the form the
    backend runs it (conv_form): as weights @ x, x's [C, HW] is a transposed view whose
    B tiles are loaded as [HW, C] blocks and turned on chip; in the other forms the
    prep copies x into the padded image by a strided walk (None for other ops)."""
    work = kernel_work(op_name, in_types, out, attrs)
    if work is None or work.kind != "conv" or int(attrs.get("groups", 1)) > 1:  # type: ignore[call-overload]
        return None
    form = conv_form(hw, op_name, in_types, out, attrs)
    if form == "matmul":
        mm_work = replace(conv_gemm_work(op_name, in_types, attrs, work), b_transposed=True)
        return gemm_cost(hw, op_name, in_types, out, attrs, mm_work)
    prep = conv_prep_cost(hw, op_name, in_types, attrs, x_channels_last=True)
    if form == "transposed":
        t_work = conv_transposed_work(op_name, in_types, out, attrs, work)
        gemm = gemm_cost(hw, op_name, in_types, out, attrs, t_work, transposed_b=True)  # type: ignore[arg-type]
    else:
        gemm = gemm_cost(hw, op_name, in_types, out, attrs, work)
    return gemm if prep is None else add_costs([gemm, prep])


# Row kernels that copy an operand whose last axis is not contiguous before reading it
ROW_COPIERS = frozenset({"layernorm", "rmsnorm"})


def _copies_row_operand(graph, u: int, j: int, facts: GraphFacts) -> bool:
    """Does row kernel u copy its operand j first, a transpose whose last axis is not
    contiguous as stored (backend/operands.py row_operand)?"""
    node, view = graph.nodes[u], graph.nodes[j]
    if node.op not in ROW_COPIERS or node.inputs[:1] != (j,) or view.op != "transpose":
        return False
    return bool(view.type.rank) and view.type.shape[-1] > 1 and _stored(graph, j, facts)[-1] != 1


def _view_readers(graph, i: int, facts: GraphFacts) -> list[tuple[int, int]]:
    """The readers of view i as (reader, the value it reads), seeing through reshapes
    of it that are views too (Segformer's reshape of the tokens' transpose into NCHW)."""
    shape, inner = graph.nodes[i].type.shape, _stored(graph, i, facts)
    out = []
    for u in facts.readers(i):
        node = graph.nodes[u]
        viewed = node.op == "reshape" and u not in facts.outputs
        if viewed and nocopy_reshape(shape, inner, node.type.shape) is not None:
            out += _view_readers(graph, u, facts)
        else:
            out.append((u, i))
    return out


def _reads_through(graph, u: int, j: int, facts: GraphFacts) -> bool:
    """Does node u read the transposed view j where it lies, at no cost beyond its
    own price: an elementwise kernel (it streams any strides), or a pooling or
    depthwise convolution reading a channels-last view as its image (its prep walks
    it: priced by graph_op_cost)?"""
    node = graph.nodes[u]
    in_types = [graph.nodes[k].type for k in node.inputs]
    if node.opdef.kind is OpKind.ELEMENTWISE or (
        node.opdef.kind is OpKind.FUSED
        and stream_ops(node.op, in_types, node.type, node.attr_dict) is not None
    ):
        return True
    if node.op in ATTENTION_OPS and node.inputs[1:2] == (j,):  # kt: loaded as it lies
        return _kt_in_place(graph, j, facts)  # where its rows or columns are contiguous
    if node.inputs[:1] != (j,) or j in node.inputs[1:] or not _channels_last(graph, j, facts):
        return False
    return _reads_channels_last(node.op, in_types, node.type, node.attr_dict)


def _reads_channels_last(op_name: str, in_types, out: TensorType, attrs) -> bool:
    """Does a kernel of this op read a channels-last x where it lies (graph_op_cost
    prices it so): a window kernel or a Winograd input transform by its prep's strided
    walk, an ungrouped convolution by its prep or as a transposed B operand?"""
    if op_name == "winograd_input" or op_name in CONV_EPILOGUES:
        return True
    if is_window_op(op_name, in_types, attrs):
        return True
    work = kernel_work(op_name, in_types, out, attrs)
    return work is not None and work.kind == "conv" and int(attrs.get("groups", 1)) == 1


def _epilogue_runs(graph, i: int, facts: GraphFacts) -> tuple[int, ...]:
    """KernelWork.epilogue_runs of matrix kernel i whose batch rows fold into one
    product: for each epilogue operand it loads (costs._epilogue_loads' order), the
    rows of a run where, as stored, its rows do not merge into one stride (the backend
    loads it run by run: backend/gemm_kernel.py fold_batch_rows), else 0."""
    node = graph.nodes[i]
    op = node.opdef
    if op.kind is not OpKind.FUSED or node.type.rank <= 2:
        return ()
    in_types = [graph.nodes[j].type for j in node.inputs]
    work = kernel_work(node.op, in_types, node.type, node.attr_dict)
    if work is None or work.kind != "matmul" or work.batch != 1:
        return ()
    runs = []
    for j, t in zip(node.inputs[1 + work.gemms :], in_types[1 + work.gemms :], strict=True):
        if t.numel <= 1:
            continue
        strides = broadcast_strides(t.shape, node.type.shape, _stored(graph, j, facts))
        rows = row_runs(node.type.shape, strides)
        runs.append(rows[0][-1] if rows is not None and len(rows[0]) > 1 else 0)
    return tuple(runs)


def _unit(graph, j: int, facts: GraphFacts, axis: int) -> bool:
    """Is value j contiguous along `axis` as stored (or one long)?"""
    return graph.nodes[j].type.shape[axis] == 1 or _stored(graph, j, facts)[axis] == 1


def _kt_in_place(graph, j: int, facts: GraphFacts) -> bool:
    """Does the attention kernel load its kt operand j where it lies (backend/attention.py:
    rows or columns contiguous), rather than a row-major copy of it?"""
    return _unit(graph, j, facts, -1) or _unit(graph, j, facts, -2)


def _read_alike(graph, j: int, prepared, facts: GraphFacts) -> bool:
    """Is weight j stored by the host (a param, a literal, or prepared at load time)
    and does every reader transpose it the same way, so that it is stored in that
    order (backend/layouts.py)?"""
    if graph.nodes[j].op not in ("param", "literal") and j not in prepared:
        return False  # a view of a weight: read through the view
    return _transposed_alike(graph, j, facts)


def _channels_last(graph, j: int, facts: GraphFacts, views: bool = True) -> bool:
    """Is value j, [N, C, H, W], stored channels-last: a window kernel's result, or
    (`views`) an NCHW view of a kernel's row-major [N, H, W, C] result (a transpose
    [0, 3, 1, 2] of it, or a reshape of the tokens' transpose [N, C, H * W] as
    Segformer's and PVT's Mix-FFN write it)?"""
    node = graph.nodes[j]
    if node.is_leaf or node.type.rank != 4:
        return False
    if node.op in ("transpose", "reshape"):
        if not views:
            return False
        base = j
        while graph.nodes[base].op in VIEW_OPS:
            base = graph.nodes[base].inputs[0]
        if graph.nodes[base].is_leaf:
            return False  # a weight the host may store in any order
        shape = node.type.shape
        return same_layout(shape, _stored(graph, j, facts), nhwc_strides(shape))
    in_types = [graph.nodes[k].type for k in node.inputs]
    return stores_channels_last(node.op, in_types, node.type, node.attr_dict)


def _operand_type(graph, node) -> TensorType | None:
    return graph.nodes[node.inputs[0]].type if node.inputs else None
