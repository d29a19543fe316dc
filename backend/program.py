"""What the backend returns: the program, its assembly, and how to feed and read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from eqsat.interpreter import evaluate_selected
from eqsat.ir.graph import Graph
from hwsim.dtypes import ITEMSIZE
from hwsim.hardware import Hardware
from hwsim.isa import Program

from .planner import Footprint


@dataclass(frozen=True)
class KernelInfo:
    """One `kernel` marker: its name, the graph node it implements (-1: none) and role
    (main: the node's kernel; prep/copy: layout work for it; output: copy to an output)."""

    name: str
    node: int
    role: str


@dataclass
class CompiledProgram:
    program: Program
    asm: str
    graph: Graph
    hw: Hardware
    inputs: dict[str, tuple[str | None, tuple[int, ...] | None]]  # buffer -> (binding, perm)
    outputs: dict[str, str]  # graph output name -> buffer name
    kernels: list[KernelInfo]
    footprint: Footprint
    # Contents of the input buffers the program itself defines: the model's literals
    # and compile-time tables, by binding name.
    data: Mapping[str, np.ndarray] = field(default_factory=dict)
    # Weights prepared at load time (eqsat/weights.py): input binding -> the graph node
    # whose value the host computes from the params when it feeds the program.
    prepared: Mapping[str, int] = field(default_factory=dict)
    # Integer sums of weights (zero-point corrections) the host computes at load time:
    # input binding -> (the weight's graph node, the axes summed).
    prepared_sums: Mapping[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)

    def feeds(self, bindings: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Input buffers from graph bindings (by input/param name) and the program's
        own data, in buffer layout."""
        buffers = self.program.buffer_map
        out = {}
        prepared = self.prepare(bindings)
        for buf, (name, perm) in self.inputs.items():
            b = buffers[buf]
            if name is None:
                out[buf] = np.zeros(b.shape, dtype=np.int8)
                continue
            if name in prepared:
                value = prepared[name]
            else:
                value = np.asarray(self.data[name] if name in self.data else bindings[name])
            if value.dtype.kind in "fV" or value.dtype.name == "bfloat16":
                value = value.astype(np.float32)
            if perm:
                value = np.transpose(value, perm)
            out[buf] = np.ascontiguousarray(value).reshape(b.shape)
        return out

    def prepare(self, bindings: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The weights prepared at load time, computed from the params in `bindings`
        (what the host does once when it loads the model), by input binding."""
        if not self.prepared and not self.prepared_sums:
            return {}
        nodes = {*self.prepared.values(), *(j for j, _ in self.prepared_sums.values())}
        values = evaluate_selected(self.graph, bindings, nodes)
        out = {name: values[i] for name, i in self.prepared.items()}
        for name, (j, axes) in self.prepared_sums.items():
            sums = np.asarray(values[j], dtype=np.int64).sum(axis=axes)
            out[name] = np.clip(sums, -(2**31), 2**31 - 1).astype(np.int32)
        return out

    def prepared_weights(self) -> list[tuple[str, int]]:
        """(input buffer, bytes) of each weight prepared at load time."""
        sizes = {b.name: b.size * ITEMSIZE[b.dtype] for b in self.program.inputs()}
        return [
            (buf, sizes[buf])
            for buf, (name, _) in self.inputs.items()
            if name in self.prepared or name in self.prepared_sums
        ]

    def results(self, outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Graph outputs (by name, in the graph's shapes and dtypes) from simulator outputs."""
        res = {}
        for name, i in self.graph.outputs:
            t = self.graph.nodes[i].type
            res[name] = (
                np.asarray(outputs[self.outputs[name]]).reshape(t.shape).astype(t.dtype.np_dtype)
            )
        return res
