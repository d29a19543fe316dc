"""The driver: graph -> values and a kernel schedule -> DRAM plan -> hwsim program.

Stages (each a method; `compile_graph` runs them in order):
1. lower   every live node through the lowering table (lowering.py): a node becomes a
           view of an existing buffer (layout ops), an immediate (constants and
           constant-folded ops), or a new buffer plus the kernel(s) that write it.
           Kernels are recorded as closures with the buffers they read and write.
2. outputs each graph output gets its own output buffer: the buffer of its value when
           that is a whole row-major scratch buffer, else a copy kernel.
3. plan    liveness over the kernel schedule places scratch buffers in per-dtype
           arenas (planner.py).
4. emit    every kernel closure runs with a fresh KernelBuilder; the program is the
           concatenation, printed as assembly too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from eqsat.concat_placement import concat_regions
from eqsat.custom_instr.derive import InstructionOp
from eqsat.interpreter import BindingError, evaluate_selected
from eqsat.ir.graph import Graph, Node
from eqsat.ir.strides import inverse_perm
from eqsat.weights import WEIGHT, graph_value_classes, prepared_nodes
from hwsim.asm import format_program
from hwsim.hardware import Hardware
from hwsim.isa import Buffer, Program

from .emit import KernelBuilder
from .errors import BackendError
from .ewise import emit_ewise
from .expr import Leaf
from .layouts import layout_prefs
from .lowering import LOWER, lower_node
from .planner import plan
from .program import CompiledProgram, KernelInfo
from .space import Operand
from .views import Imm, LogicalBuffer, Value, View, row_major


@dataclass
class KernelPlan:
    name: str
    node: int  # graph node (-1: an output copy)
    role: str  # main | prep | copy | output
    emit: Callable[[KernelBuilder], None]
    reads: set
    writes: set


class Compiler:
    def __init__(
        self, graph: Graph, hw: Hardware, consts: Mapping[str, np.ndarray] | None = None
    ) -> None:
        self.graph, self.hw = graph, hw
        self.consts = dict(consts or {})  # param values known at compile time, by name
        self.data: dict[str, np.ndarray] = {}  # constant buffers' contents, by binding
        self.values: list[Value | None] = [None] * len(graph.nodes)
        self.buffers: list[LogicalBuffer] = []
        self.kernels: list[KernelPlan] = []
        self.bindings: dict[str, tuple[str | None, tuple[int, ...] | None]] = {}
        self.prepared = prepared_nodes(graph)  # computed at load time (eqsat/weights.py)
        self.weights = {i for i, c in enumerate(graph_value_classes(graph)) if c == WEIGHT}
        self.prepared_inputs: dict[str, int] = {}  # binding -> node, fed by the host
        # binding -> (weight node, axes): its integer sums, computed by the host at load
        # time (a zero-point correction of an int8 product: backend/zero_points.py)
        self.prepared_sum_inputs: dict[str, tuple[int, tuple[int, ...]]] = {}
        self._known: dict[int, np.ndarray | None] = {}  # prepared values known now
        self.prefs = layout_prefs(graph, hw, self.prepared)
        # values written into their block of a concat's buffer (eqsat/concat_placement.py)
        self.placement = concat_regions(graph)
        self._groups: dict[int, View] = {}  # root concat -> its buffer
        self.names: set[str] = set()
        self._zero: Operand | None = None
        self._knames: set[str] = set()

    # ------------------------------------------------------------ buffers and values

    def unique(self, name: str) -> str:
        out, n = name, 1
        while out in self.names:
            out, n = f"{name}.{n}", n + 1
        self.names.add(out)
        return out

    def new_buffer(self, dtype: str, shape: tuple[int, ...], label: str) -> View:
        buf = LogicalBuffer(dtype, max(1, _prod(shape)), label=label)
        self.buffers.append(buf)
        return View(buf, 0, shape, row_major(shape))

    def input_buffer(self, name: str, dtype: str, shape: tuple[int, ...], perm=None) -> View:
        """A program input (read-only), optionally stored permuted (packed weights)."""
        stored = tuple(shape[p] for p in perm) if perm else shape
        buf = LogicalBuffer(
            dtype,
            max(1, _prod(shape)),
            "input",
            self.unique(name),
            shape=stored or (1,),
            label=name,
        )
        buf.phys = buf.name
        self.buffers.append(buf)
        self.bindings[buf.name] = (name, perm)  # type: ignore[index]
        view = View(buf, 0, stored, row_major(stored))
        return view.permute(inverse_perm(perm)) if perm else view

    def constant_buffer(self, label: str, dtype: str, value: np.ndarray) -> View:
        """A read-only input buffer whose contents the compiler knows (iota tables):
        the program's data, fed with the program like the model's literals."""
        binding = self.unique(f"data.{label}")
        self.data[binding] = np.asarray(value)
        view = self.input_buffer(binding, dtype, tuple(np.shape(value)))
        return view

    def alloc_value(self, i: int, node: Node, keep_last: bool = True) -> View:
        """The buffer a kernel writes node i into, in the node's preferred layout (its
        block of a concat's buffer where it is placed in one)."""
        placed = self.placed(i)
        if placed is not None:
            return placed
        shape, dtype = node.type.shape, node.type.dtype.value
        perm = self.prefs.get(i)
        if perm and (not keep_last or perm[-1] == len(shape) - 1):
            stored = tuple(shape[p] for p in perm)
            return self.new_buffer(dtype, stored, self.label(i)).permute(inverse_perm(perm))
        return self.new_buffer(dtype, shape, self.label(i))

    def placed(self, i: int) -> View | None:
        """Node i's block of its concat group's buffer (row-major), or None."""
        region = self.placement.regions.get(i)
        if region is None:
            return None
        if region.root not in self._groups:
            root = self.graph.nodes[region.root]
            shape = root.type.shape
            self._groups[region.root] = self.new_buffer(
                root.type.dtype.value, shape, self.label(region.root)
            )
        buf = self._groups[region.root].buf
        shape = self.graph.nodes[i].type.shape
        return View(buf, region.offset, shape, row_major(shape))

    def compile_time_value(self, j: int) -> np.ndarray | None:
        """The value of node j if known at compile time (a const, a param in consts, or a
        prepared weight or any other node computed from those only)."""
        node = self.graph.nodes[j]
        if j in self.prepared or node.inputs:
            if j not in self._known:
                try:
                    self._known[j] = evaluate_selected(self.graph, self.consts, [j])[j]
                except BindingError:  # a param it reads is fed only at run time
                    self._known[j] = None
            return self._known[j]
        if node.op == "const":
            return np.asarray(node.opdef.ref([], node.attr_dict))
        if node.op == "param":
            return self.consts.get(str(node.attr("name")))
        if node.op == "literal":
            return self.graph.constants[str(node.attr("name"))]
        return None

    def value(self, j: int) -> Value:
        v = self.values[j]
        assert v is not None, f"node {j} used before it was lowered"
        return v

    def as_view(self, v: Value, shape: tuple[int, ...], label: str) -> View:
        """A DRAM view of a value (immediates are materialized by a fill kernel)."""
        if isinstance(v, View):
            return v
        out = self.new_buffer(v.dtype, shape, f"{label}.const")
        self.add_kernel(
            f"fill.{label}",
            -1,
            "copy",
            lambda kb: emit_ewise(kb, out, v, [], self.zero()),
            [],
            [out],
        )
        return out

    def materialize(self, v: View, label: str, node: int = -1) -> View:
        """A dense row-major copy of a view (for kernels whose loads cannot walk it)."""
        out = self.new_buffer(v.dtype, v.shape, f"{label}.copy")
        self.add_kernel(
            f"copy.{label}",
            node,
            "copy",
            lambda kb: emit_ewise(kb, out, Leaf(0), [v], self.zero()),
            [v],
            [out],
        )
        return out

    def zero(self) -> Operand:
        """Any DRAM element: loading it into a larger tile yields zeros (the padding)."""
        assert self._zero is not None
        return self._zero

    # ------------------------------------------------------------ kernels

    def label(self, i: int) -> str:
        node = self.graph.nodes[i]
        return node.name or f"n{i}"

    def kernel_name(self, i: int, suffix: str = "") -> str:
        node = self.graph.nodes[i]
        return f"{node.op}.{self.label(i)}{suffix}"

    def add_kernel(self, name: str, node: int, role: str, emit, reads, writes) -> None:
        base, n = name, 1
        while name in self._knames:
            name, n = f"{base}.{n}", n + 1
        self._knames.add(name)
        rb = {v.buf for v in reads if isinstance(v, View)}
        wb = {v.buf for v in writes}
        self.kernels.append(KernelPlan(name, node, role, emit, rb, wb))

    # ------------------------------------------------------------ stages

    def lower(self) -> None:
        # what the program computes or reads: a node only prepared weights use is the
        # host's business
        needed = self.graph.live(stop=[i in self.prepared for i in range(len(self.graph.nodes))])
        for i, node in self.graph:
            if node.op not in LOWER and not isinstance(node.opdef, InstructionOp):
                raise BackendError(f"no lowering for op '{node.op}'")
            if not needed[i]:
                continue
            if i in self.prepared:
                self.values[i] = self.prepared_input(i, node)
            else:
                self.values[i] = lower_node(self, i, node)

    def prepared_input(self, i: int, node: Node) -> View:
        """A weight computed at load time: an input buffer the host fills
        (CompiledProgram.feeds), stored in the node's preferred layout."""
        binding = f"prep.{self.label(i)}"
        self.prepared_inputs[binding] = i
        return self.input_buffer(binding, node.type.dtype.value, node.type.shape, self.prefs.get(i))

    def prepared_sums(self, j: int, axes, label: str) -> View:
        """An i32 input buffer of the sums of weight node j's values over `axes`, which
        the host computes when it loads the weights (CompiledProgram.feeds)."""
        axes = tuple(a % self.graph.nodes[j].type.rank for a in np.atleast_1d(axes))
        shape = tuple(d for a, d in enumerate(self.graph.nodes[j].type.shape) if a not in axes)
        binding = self.unique(f"prep.{label}")
        self.prepared_sum_inputs[binding] = (j, axes)
        return self.input_buffer(binding, "i32", shape)

    def outputs(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, i in self.graph.outputs:
            v, node = self.value(i), self.graph.nodes[i]
            shape = node.type.shape
            if isinstance(v, View) and v.is_whole() and v.buf.role == "scratch":
                v.buf.role, v.buf.name = "output", self.unique(name)
                v.buf.phys, v.buf.shape = v.buf.name, shape or (1,)
                out[name] = v.buf.name
                continue
            buf = LogicalBuffer(
                node.type.dtype.value,
                max(1, _prod(shape)),
                "output",
                self.unique(name),
                shape=shape or (1,),
                label=name,
            )
            buf.phys = buf.name
            self.buffers.append(buf)
            dst = View(buf, 0, shape, row_major(shape))
            expr = v if isinstance(v, Imm) else Leaf(0)
            leaves = [] if isinstance(v, Imm) else [v]
            self.add_kernel(
                f"output.{name}",
                i,
                "output",
                _copy_emit(dst, expr, leaves, self.zero),
                leaves,
                [dst],
            )
            out[name] = buf.name
        return out

    def setup_zero(self) -> None:
        inputs = [b for b in self.buffers if b.role == "input"]
        if not inputs:
            buf = LogicalBuffer("i8", 1, "input", self.unique("zero"), shape=(1,), label="zero")
            buf.phys = buf.name
            self.buffers.append(buf)
            self.bindings[buf.name] = (None, None)
            inputs = [buf]
        self._zero = Operand(inputs[0], 0, ())

    def emit(self, out_names: dict[str, str]) -> CompiledProgram:
        uses = [(k.reads, k.writes) for k in self.kernels]
        arena_names: dict[str, str] = {}

        def arena(dtype: str) -> str:
            if dtype not in arena_names:
                arena_names[dtype] = self.unique(f"scratch.{dtype}")
            return arena_names[dtype]

        sizes, footprint = plan(self.buffers, uses, arena)
        instrs = []
        infos = []
        for idx, k in enumerate(self.kernels):
            kb = KernelBuilder(self.hw, k.name, f"k{idx}.")
            k.emit(kb)
            instrs += kb.instrs
            infos.append(KernelInfo(k.name, k.node, k.role))
        bufs = [
            Buffer(b.name, b.dtype, b.shape, b.role)
            for b in self.buffers  # type: ignore[arg-type]
            if b.role == "input"
        ]
        bufs += [
            Buffer(b.name, b.dtype, b.shape, b.role)
            for b in self.buffers  # type: ignore[arg-type]
            if b.role == "output"
        ]
        bufs += [Buffer(arena_names[d], d, (n,), "scratch") for d, n in sorted(sizes.items())]
        program = Program(tuple(bufs), tuple(instrs))
        return CompiledProgram(
            program=program,
            asm=format_program(program),
            graph=self.graph,
            hw=self.hw,
            inputs=dict(self.bindings),
            outputs=out_names,
            kernels=infos,
            footprint=footprint,
            data={**self.graph.used_constants(), **self.data},
            prepared=dict(self.prepared_inputs),
            prepared_sums=dict(self.prepared_sum_inputs),
        )


def _copy_emit(dst: View, expr, leaves: list[View], zero):
    return lambda kb: emit_ewise(kb, dst, expr, leaves, zero())


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def compile_graph(
    graph: Graph, hw: Hardware, consts: Mapping[str, np.ndarray] | None = None
) -> CompiledProgram:
    """Lower an (extracted) graph to a hwsim program for `hw`. `consts`: values of
    params known at compile time (by name), for instructions that take them as
    immediates (per-channel requantize multipliers); params stay program inputs."""
    c = Compiler(graph, hw, consts)
    c.lower()
    c.setup_zero()
    names = c.outputs()
    return c.emit(names)
