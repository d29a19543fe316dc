"""Semantic analysis of a model with regions: syntax tree -> ControlProgram.

Top-level statements between regions form stages; each region body is a graph of its
own whose free names are outer values (read through `input`/`param` leaves of the same
name; constants are copied in, so rules and folding see their values). Mistakes are
the frontend's typed errors at file:line:col.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from eqsat.control.program import (
    ControlProgram,
    IfRegion,
    LoopRegion,
    Stage,
    Step,
    yield_name,
)
from eqsat.interpreter import evaluate
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from frontend import ast
from frontend.checker import RegionError, _Checker
from frontend.errors import (
    DuplicateNameError,
    MissingOutputError,
    TypeMismatchError,
    UnboundNameError,
)

INDEX_TYPE = TensorType(DType.I32, ())


@dataclass
class _Value:
    """A name visible at some point: a model leaf, a constant or a computed value."""

    kind: str  # input | param | const | value
    type: TensorType
    pos: ast.Pos
    decl: ast.ConstDecl | None = None


class _Scope:
    """One graph under construction and the names materialized in it."""

    def __init__(self, name: str, dims: Mapping[str, int]):
        self.builder = GraphBuilder(name, dims)
        self.nodes: dict[str, int] = {}
        self.defined: dict[str, int] = {}  # computed here (not read from outside)


class RegionChecker(_Checker):
    """The frontend's checker with scopes: each stage and body builds its own graph."""

    def __init__(self, model, overrides, data, data_file):
        super().__init__(model, overrides, data, data_file)
        self.visible: dict[str, _Value] = {}
        self.scope: _Scope | None = None
        self.locals: dict[str, _Value] = {}  # a body's own names while it is checked
        self.in_body = False

    # ------------------------------------------------------------------ names
    def bind(self, name: str, node: int, pos: ast.Pos) -> None:
        known = self.locals.get(name) or self.visible.get(name)
        if known is not None or name in self.scope.defined:
            first = known.pos if known else pos
            raise self.error(
                DuplicateNameError, f"'{name}' is already defined (at line {first.line})", pos
            )
        self.scope.nodes[name] = node
        self.scope.defined[name] = node
        value = _Value("value", self.scope.builder.graph.nodes[node].type, pos)
        if self.in_body:
            self.locals[name] = value
        else:
            self.visible[name] = value

    def lookup(self, name: str, pos: ast.Pos) -> int:
        scope = self.scope
        if name in scope.nodes:
            return scope.nodes[name]
        value = self.locals.get(name) or self.visible.get(name)
        if value is None:
            names = list(self.visible) + list(self.locals)
            hint = difflib.get_close_matches(name, names, n=1)
            more = f"; did you mean '{hint[0]}'?" if hint else "; define it before this line"
            raise self.error(UnboundNameError, f"'{name}' is not defined{more}", pos)
        b = scope.builder
        if value.kind == "const":
            node = self.const(b, value.decl)
        else:
            node = b.leaf("param" if value.kind == "param" else "input", name, value.type)
        scope.nodes[name] = node
        return node

    def type_at(self, name: str, pos: ast.Pos) -> TensorType:
        """The type of a visible name (a region's header: nothing is materialized)."""
        value = self.locals.get(name) or self.visible.get(name)
        if value is None:
            self.lookup(name, pos)  # raises the unbound-name error
        return value.type

    # ----------------------------------------------------------------- bodies
    def body(
        self, label: str, body: ast.Body, inner: dict[str, tuple[TensorType, ast.Pos]]
    ) -> tuple:
        """Check a body in a scope of its own; `inner`: carried values and the index."""
        outer_scope, outer_locals = self.scope, self.locals
        self.scope = _Scope(label, self.dims_bound())
        self.locals = {}
        self.in_body = True
        try:
            for name, (t, pos) in inner.items():
                if name in self.visible:
                    first = self.visible[name].pos
                    raise self.error(
                        DuplicateNameError,
                        f"'{name}' is already defined (at line {first.line})",
                        pos,
                    )
                self.locals[name] = _Value("input", t, pos)
            for item in body.items:
                if isinstance(item, ast.RegionAssign):
                    raise self.error(
                        RegionError,
                        "regions do not nest: a body is a static graph (move the inner "
                        "region out, or compute both sides and pick with `where`)",
                        item.pos,
                    )
                self.bind(item.name, self.expr(self.scope.builder, item.expr, item.name), item.pos)
            positions = body.yield_pos or (body.pos,) * len(body.yields)
            types = []
            for k, (name, pos) in enumerate(zip(body.yields, positions, strict=True)):
                node = self.lookup(name, pos)
                self.scope.builder.output(yield_name(k), node)
                types.append(self.scope.builder.graph.nodes[node].type)
            graph = self.scope.builder.graph
        finally:
            self.scope, self.locals = outer_scope, outer_locals
            self.in_body = False
        return graph, types, positions

    def dims_bound(self) -> dict[str, int]:
        return {k: v for k, v in self.dims.items() if v is not None}

    def one_element(self, what: str, name: str, pos: ast.Pos, integer: bool = False) -> None:
        t = self.type_at(name, pos)
        if t.numel != 1:
            raise self.error(
                TypeMismatchError, f"{what} '{name}' must hold one element, got {t}", pos
            )
        if integer and not t.dtype.is_int:
            raise self.error(
                TypeMismatchError, f"{what} '{name}' must be an integer (i8 or i32), got {t}", pos
            )

    def region(self, item: ast.RegionAssign, k: int) -> Step:
        region = item.region
        names_pos = item.name_pos or (item.pos,) * len(item.names)
        if isinstance(region, ast.IfRegion):
            self.one_element("the condition", region.cond, region.cond_pos)
            then, then_types, _ = self.body(f"{self.model.name}.if{k}_then", region.then, {})
            orelse, else_types, else_pos = self.body(
                f"{self.model.name}.if{k}_else", region.orelse, {}
            )
            if len(then_types) != len(else_types):
                raise self.error(
                    RegionError,
                    f"the branches yield {len(then_types)} and {len(else_types)} values; "
                    "both must yield the same number",
                    region.orelse.yield_pos[0] if region.orelse.yield_pos else item.pos,
                )
            for j, (a, b) in enumerate(zip(then_types, else_types, strict=True)):
                if a != b:
                    raise self.error(
                        TypeMismatchError,
                        f"yield {j + 1}: the then branch yields {a}, the else branch {b}",
                        else_pos[j],
                    )
            self.check_results(item, len(then_types), "the branches yield")
            step: Step = IfRegion(region.cond, then, orelse, item.names)
            types = then_types
        else:
            trips_pos, cond_pos = region.arg_pos or (item.pos, item.pos)
            self.one_element("the trip count", region.max_trips, trips_pos, integer=True)
            self.one_element("the condition", region.cond, cond_pos)
            inner: dict[str, tuple[TensorType, ast.Pos]] = {}
            for c in region.carried:
                if c.name in inner:
                    raise self.error(DuplicateNameError, f"'{c.name}' is carried twice", c.pos)
                inner[c.name] = (self.type_at(c.init, c.pos), c.pos)
            if region.index is not None:
                if region.index in inner:
                    raise self.error(
                        DuplicateNameError, f"'{region.index}' is already carried", region.pos
                    )
                inner[region.index] = (INDEX_TYPE, region.pos)
            body, types_out, positions = self.body(
                f"{self.model.name}.loop{k}_body", region.body, inner
            )
            want = 1 + len(region.carried)
            if len(types_out) != want:
                raise self.error(
                    RegionError,
                    f"the loop body must yield the next condition and {len(region.carried)} "
                    f"carried value(s) ({want} names), got {len(types_out)}",
                    positions[0] if positions else region.pos,
                )
            if types_out[0].numel != 1:
                raise self.error(
                    TypeMismatchError,
                    f"the next condition must hold one element, got {types_out[0]}",
                    positions[0],
                )
            for c, t, pos in zip(region.carried, types_out[1:], positions[1:], strict=True):
                if t != inner[c.name][0]:
                    raise self.error(
                        TypeMismatchError,
                        f"carried '{c.name}' is {inner[c.name][0]} but the body yields {t}",
                        pos,
                    )
            self.check_results(item, len(region.carried), "the loop carries")
            carried = tuple((c.name, c.init) for c in region.carried)
            step = LoopRegion(
                region.max_trips, region.cond, carried, region.index, body, item.names
            )
            types = [inner[c.name][0] for c in region.carried]
        for name, t, pos in zip(item.names, types, names_pos, strict=True):
            if name in self.visible:
                first = self.visible[name].pos
                raise self.error(
                    DuplicateNameError, f"'{name}' is already defined (at line {first.line})", pos
                )
            self.visible[name] = _Value("value", t, pos)
        return step

    def check_results(self, item: ast.RegionAssign, count: int, what: str) -> None:
        if len(item.names) != count:
            raise self.error(
                RegionError,
                f"{len(item.names)} name(s) on the left but {what} {count} value(s)",
                item.pos,
            )

    # ----------------------------------------------------------------- model
    def run_control(self) -> ControlProgram:
        self.declare_dims()
        name = self.model.name
        steps: list[Step] = []
        inputs: dict[str, TensorType] = {}
        params: dict[str, TensorType] = {}
        known: dict[str, np.ndarray] = {}
        outputs: list[tuple[str, ast.Pos]] = []
        stage_defs: dict[int, dict[str, int]] = {}  # stage index -> value name -> node
        self.scope = _Scope(f"{name}.stage0", self.dims_bound())

        def close_stage() -> None:
            if self.scope.builder.graph.nodes:
                stage_defs[len(steps)] = dict(self.scope.defined)
                steps.append(Stage(self.scope.builder.graph))
            self.scope = _Scope(f"{name}.stage{len(steps)}", self.dims_bound())

        for item in self.model.items:
            if isinstance(item, ast.LeafDecl):
                self.declare(item.name, item.pos)
                t = self.type_of(item.type)
                (inputs if item.kind == "input" else params)[item.name] = t
                self.visible[item.name] = _Value(item.kind, t, item.pos)
            elif isinstance(item, ast.ConstDecl):
                self.declare(item.name, item.pos)
                scratch = GraphBuilder("const")
                node = self.const(scratch, item)
                scratch.output(item.name, node)
                known[item.name] = evaluate(scratch.graph, {})[item.name]
                t = scratch.graph.nodes[node].type
                self.visible[item.name] = _Value("const", t, item.pos, item)
            elif isinstance(item, ast.Assign):
                self.bind(item.name, self.expr(self.scope.builder, item.expr, item.name), item.pos)
            elif isinstance(item, ast.RegionAssign):
                close_stage()
                steps.append(self.region(item, len(steps)))
            elif isinstance(item, ast.OutputDecl):
                positions = item.name_pos or (item.pos,) * len(item.names)
                outputs += list(zip(item.names, positions, strict=True))
        if not outputs:
            raise self.error(
                MissingOutputError,
                f"model '{name}' has no output; add `output NAME` before the closing brace",
                self.model.end,
            )
        seen: set[str] = set()
        for out, pos in outputs:
            if out in seen:
                raise self.error(DuplicateNameError, f"'{out}' is an output twice", pos)
            seen.add(out)
            if out not in self.visible:
                self.lookup(out, pos)  # raises the unbound-name error
        # Model outputs that no stage computes (a leaf, a constant): a last stage.
        for out, pos in outputs:
            if self.visible[out].kind != "value" and out not in self.scope.nodes:
                self.scope.builder.output(out, self.lookup(out, pos))
        close_stage()
        program = ControlProgram(
            name, inputs, params, steps, [o for o, _ in outputs], self.dims_bound(), known
        )
        export_stage_values(program, stage_defs)
        return program

    def declare(self, name: str, pos: ast.Pos) -> None:
        if name in self.visible:
            first = self.visible[name].pos
            raise self.error(
                DuplicateNameError, f"'{name}' is already defined (at line {first.line})", pos
            )


def export_stage_values(program: ControlProgram, stage_defs: dict[int, dict[str, int]]) -> None:
    """Each stage outputs the values it defines that a later step or the model reads."""
    read_after: list[set[str]] = [set() for _ in program.steps]
    later: set[str] = set(program.outputs)
    for k in range(len(program.steps) - 1, -1, -1):
        read_after[k] = set(later)
        later |= program.steps[k].reads()
    for k, step in enumerate(program.steps):
        if not isinstance(step, Stage):
            continue
        g = step.graph
        have = {name for name, _ in g.outputs}
        for value, node in stage_defs.get(k, {}).items():
            if value in read_after[k] and value not in have:
                g.outputs.append((value, node))
    program.steps = [s for s in program.steps if not isinstance(s, Stage) or s.graph.outputs]


def check_control_model(
    model: ast.Model,
    dims: Mapping[str, int] | None = None,
    data: Mapping[str, np.ndarray] | None = None,
    data_file: str = "MODEL.params.npz",
) -> ControlProgram:
    """Type-check a model that may hold `if`/`loop` regions."""
    return RegionChecker(model, dims or {}, data, data_file).run_control()


def has_regions(model: ast.Model) -> bool:
    return any(isinstance(item, ast.RegionAssign) for item in model.items)
