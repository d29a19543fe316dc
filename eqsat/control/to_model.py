"""ControlProgram -> model text (`eqsat optimize -o` of a model with regions).

Each stage and body is written by frontend.from_graph; its own names get the graph's
label as a prefix (stages and bodies are separate graphs whose names may repeat), its
constants are declared at the top (regions hold statements only), and the names it
reads or exports are the program's value names, kept as they are.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from eqsat.control.program import ControlProgram, IfRegion, Stage, yield_name
from eqsat.ir.graph import Graph
from frontend import ast
from frontend.from_graph import external_constants, graph_to_model


def _renamed(e: ast.Expr, rename: dict[str, str]) -> ast.Expr:
    if isinstance(e, ast.Ref):
        return ast.Ref(rename.get(e.name, e.name))
    return ast.Call(e.op, tuple(_renamed(a, rename) for a in e.args), e.attrs)


class _Writer:
    def __init__(self, program: ControlProgram):
        self.program = program
        self.decls: list[ast.Item] = []
        self.arrays: dict[str, np.ndarray] = {}

    def graph(self, graph: Graph, label: str, exported: bool) -> tuple[list[ast.Assign], dict]:
        """Statements of `graph` and its outputs' names in them. `exported`: its outputs
        are program values (a stage) and keep their names."""
        m = graph_to_model(graph)
        outputs = {name for name, _ in graph.outputs}
        rename: dict[str, str] = {}
        stmts: list[ast.Assign] = []
        for item in m.items:
            if isinstance(item, ast.ConstDecl):
                rename[item.name] = f"{label}_{item.name}"
                self.decls.append(dataclasses.replace(item, name=rename[item.name]))
            elif isinstance(item, ast.Assign):
                keep = exported and item.name in outputs
                rename[item.name] = item.name if keep else f"{label}_{item.name}"
        for item in m.items:
            if isinstance(item, ast.Assign):
                stmts.append(ast.Assign(rename[item.name], _renamed(item.expr, rename)))
        for name, value in external_constants(graph).items():
            self.arrays[rename[name]] = value
        return stmts, {name: rename.get(name, name) for name in outputs}

    def body(self, graph: Graph, label: str, count: int) -> ast.Body:
        stmts, names = self.graph(graph, label, exported=False)
        return ast.Body(tuple(stmts), tuple(names[yield_name(k)] for k in range(count)))


def control_to_model(program: ControlProgram) -> tuple[ast.Model, dict[str, np.ndarray]]:
    """The model text's syntax tree and the arrays of its `external` constants."""
    w = _Writer(program)
    leaves: list[ast.Item] = [
        ast.LeafDecl(kind, name, ast.TypeSpec(t.dtype.value, t.shape))
        for kind, table in (("input", program.inputs), ("param", program.params))
        for name, t in table.items()
    ]
    for name, value in program.known.items():
        flat = np.asarray(value).reshape(-1)
        spec = ast.TypeSpec(_dtype_name(value), tuple(value.shape))
        numbers = [int(v) if flat.dtype.kind in "iub" else float(v) for v in flat]
        written = numbers[0] if len(set(numbers)) == 1 else tuple(numbers)
        w.decls.append(ast.ConstDecl(name, spec, written))
    body_items: list[ast.Item] = []
    for k, step in enumerate(program.steps):
        if isinstance(step, Stage):
            stmts, _ = w.graph(step.graph, f"s{k}", exported=True)
            body_items += stmts
        elif isinstance(step, IfRegion):
            n = len(step.results)
            region: ast.Region = ast.IfRegion(
                step.cond, w.body(step.then, f"if{k}t", n), w.body(step.orelse, f"if{k}e", n)
            )
            body_items.append(ast.RegionAssign(step.results, region))
        else:
            carried = tuple(ast.Carried(inner, init) for inner, init in step.carried)
            body = w.body(step.body, f"loop{k}", 1 + len(step.carried))
            region = ast.LoopRegion(step.max_trips, step.cond, carried, step.index, body)
            body_items.append(ast.RegionAssign(step.results, region))
    items = [*leaves, *w.decls, *body_items, ast.OutputDecl(tuple(program.outputs))]
    return ast.Model(program.name, tuple(items)), w.arrays


def _dtype_name(value: np.ndarray) -> str:
    from eqsat.ir.types import dtype_of_array

    return dtype_of_array(np.asarray(value)).value
