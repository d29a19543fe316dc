"""Lowering of a ControlProgram: one hwsim program per graph (a stage or a region
body) and a host control program (hwsim/host.py) that sequences them.

Host values are named as the control IR names them; a body's yields are
`LABEL.yield_K`; the data a program carries (literals, weights prepared at load time)
are `LABEL:NAME`, put in DRAM when the model is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from eqsat.control.graphs import compile_time_value
from eqsat.control.passes import known_value
from eqsat.control.program import ControlProgram, IfRegion, LoopRegion, Stage, yield_name
from eqsat.ir.graph import Graph
from eqsat.ir.types import TensorType, dtype_of_array
from hwsim.hardware import Hardware
from hwsim.host import (
    Branch,
    Feed,
    HostProgram,
    HostReport,
    Repeat,
    Result,
    Run,
    run_host,
)
from hwsim.host_asm import format_host_program

from .compiler import compile_graph
from .program import CompiledProgram


@dataclass
class CompiledControl:
    program: ControlProgram
    host: HostProgram
    compiled: dict[str, CompiledProgram]  # by label
    hw: Hardware
    asm: str

    def values(self, bindings: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The host's DRAM when the model is loaded: inputs, params, constants and each
        program's own data (literals, prepared weights)."""
        out = {name: np.asarray(v) for name, v in bindings.items()}
        out.update(self.program.known)
        for label, c in self.compiled.items():
            for name, value in c.data.items():
                out[f"{label}:{name}"] = np.asarray(value)
            for name, value in c.prepare(bindings).items():
                out[f"{label}:{name}"] = np.asarray(value)
        return out

    def run(
        self, bindings: Mapping[str, np.ndarray], check_races: bool = True
    ) -> tuple[dict[str, np.ndarray], HostReport]:
        """Simulate: the outputs by name (in the model's types) and the host report."""
        outputs, report = run_host(
            self.host, self.hw, self.values(bindings), check_races=check_races
        )
        types = value_types(self.program)
        return {
            name: np.asarray(v).reshape(types[name].shape).astype(types[name].dtype.np_dtype)
            for name, v in outputs.items()
        }, report

    def instructions(self) -> int:
        return sum(len(c.program.instrs) for c in self.compiled.values())


def value_types(program: ControlProgram) -> dict[str, TensorType]:
    """The type of every named value of the program."""
    types = dict(program.bound_names())
    for name, value in program.known.items():
        types[name] = TensorType(dtype_of_array(value), tuple(value.shape))
    for step in program.steps:
        if isinstance(step, Stage):
            types.update({n: step.graph.nodes[i].type for n, i in step.graph.outputs})
        else:
            body = step.then if isinstance(step, IfRegion) else step.body
            outs = dict(body.outputs)
            offset = 0 if isinstance(step, IfRegion) else 1
            for j, r in enumerate(step.results):
                types[r] = body.nodes[outs[yield_name(j + offset)]].type
    return types


def _run(label: str, c: CompiledProgram, graph: Graph, prefix: str | None) -> Run:
    feeds = []
    for buf, (name, perm) in c.inputs.items():
        if name is None:
            feeds.append(Feed(buf, None))
        elif name in c.data or name in c.prepared or name in c.prepared_sums:
            feeds.append(Feed(buf, f"{label}:{name}", perm))
        else:
            feeds.append(Feed(buf, name, perm))
    results = tuple(
        Result(f"{prefix}.{name}" if prefix else name, c.outputs[name], graph.nodes[i].type.shape)
        for name, i in graph.outputs
    )
    return Run(label, tuple(feeds), results)


def compile_control(program: ControlProgram, hw: Hardware) -> CompiledControl:
    """Lower every graph and build the host program."""
    compiled: dict[str, CompiledProgram] = {}
    steps = []

    def lower(label: str, graph: Graph, body: bool) -> Run:
        c = compile_graph(graph, hw)
        compiled[label] = c
        return _run(label, c, graph, label if body else None)

    for k, step in enumerate(program.steps):
        if isinstance(step, Stage):
            steps.append(lower(f"stage{k}", step.graph, False))
        elif isinstance(step, IfRegion):
            sides = []
            for side, graph in (("then", step.then), ("else", step.orelse)):
                label = f"if{k}_{side}"
                passed = forwarded(graph)
                if passed is not None:  # the branch only forwards values: no program
                    sides.append(((), [passed[yield_name(j)] for j in range(len(step.results))]))
                else:
                    run = lower(label, graph, True)
                    names = [f"{label}.{yield_name(j)}" for j in range(len(step.results))]
                    sides.append(((run,), names))
            results = tuple((r, sides[0][1][j], sides[1][1][j]) for j, r in enumerate(step.results))
            cond = known_value(program, step.cond, k)
            flag = step.cond if cond is None else bool(np.asarray(cond).reshape(-1)[0] != 0)
            steps.append(Branch(flag, sides[0][0], sides[1][0], results))
        else:
            steps.append(_repeat(program, k, step, lower(f"loop{k}_body", step.body, True)))
    host = HostProgram(
        program.name,
        dict((k, c.program) for k, c in compiled.items()),
        tuple(steps),
        tuple(program.outputs),
        _host_constants(program, compiled, steps),
    )
    return CompiledControl(program, host, compiled, hw, format_host_program(host))


# Program tables larger than this stay out of the listing (the loader provides them).
LISTED_TABLE_ELEMENTS = 1 << 16


def _host_constants(
    program: ControlProgram, compiled: dict[str, CompiledProgram], steps: list
) -> dict[str, np.ndarray]:
    """What the host holds from the start, so that the listing runs by itself: the
    model's constants the host reads and the programs' own tables (literals)."""
    read: set[str] = set()

    def walk(items) -> None:
        for step in items:
            if isinstance(step, Run):
                read.update(f.value for f in step.feeds if f.value)
            elif isinstance(step, Branch):
                read.update(v for _, a, b in step.results for v in (a, b))
                read.update([step.cond] if isinstance(step.cond, str) else [])
                walk(step.then)
                walk(step.orelse)
            else:
                read.update(init for _, init in step.carried)
                read.update(f for f in (step.trips, step.cond) if isinstance(f, str))
                walk(step.body)

    walk(steps)
    out = {name: np.asarray(v) for name, v in program.known.items() if name in read}
    for label, c in compiled.items():
        for name, value in c.data.items():
            if np.size(value) <= LISTED_TABLE_ELEMENTS:
                out[f"{label}:{name}"] = np.asarray(value)
    return out


def forwarded(graph: Graph) -> dict[str, str] | None:
    """Output -> input name when every output of `graph` is one of its input leaves."""
    out = {}
    for name, i in graph.outputs:
        node = graph.nodes[i]
        if node.op != "input":
            return None
        out[name] = str(node.attr("name"))
    return out


def _repeat(program: ControlProgram, k: int, loop: LoopRegion, body: Run) -> Repeat:
    label = body.program
    trips = known_value(program, loop.max_trips, k)
    cond = known_value(program, loop.cond, k)
    nxt = compile_time_value(loop.body, yield_name(0))
    return Repeat(
        trips=loop.max_trips if trips is None else int(np.asarray(trips).reshape(-1)[0]),
        cond=loop.cond if cond is None else bool(np.asarray(cond).reshape(-1)[0] != 0),
        carried=loop.carried,
        index=loop.index,
        body=(body,),
        next_cond=f"{label}.{yield_name(0)}"
        if nxt is None
        else bool(np.asarray(nxt).reshape(-1)[0] != 0),
        next_values=tuple(f"{label}.{yield_name(j + 1)}" for j in range(len(loop.carried))),
        results=tuple((r, inner) for r, (inner, _) in zip(loop.results, loop.carried, strict=True)),
    )
