"""Semantic analysis: syntax tree + dimension bindings -> typed graph.

Every mistake becomes a typed ModelError at the position of the offending token.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping

import ml_dtypes
import numpy as np

from eqsat.errors import closest_name
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.limits import number_text, shape_problem, side_problem
from eqsat.ops import REGISTRY, AttrType, OpKind, OpTypeError
from frontend import ast
from frontend.errors import (
    ArityError,
    AttributeError_,
    DuplicateNameError,
    MissingDataError,
    MissingOutputError,
    ModelError,
    TypeMismatchError,
    UnboundDimError,
    UnboundNameError,
    UnknownOpError,
)


class RegionError(ModelError):
    """A control region used wrongly: nesting, yields that do not match, a condition or
    trip count of the wrong type, or a command that does not take regions."""


CALLABLE_OPS = sorted(name for name, op in REGISTRY.items() if op.kind is not OpKind.LEAF)


class _Checker:
    def __init__(
        self,
        model: ast.Model,
        overrides: Mapping[str, int],
        data: Mapping[str, np.ndarray] | None,
        data_file: str,
    ):
        self.model = model
        self.overrides = dict(overrides)
        self.data = data
        self.data_file = data_file
        self.dims: dict[str, int | None] = {}
        self.env: dict[str, int] = {}
        self.defined_at: dict[str, ast.Pos] = {}

    def error(self, cls: type[ModelError], message: str, pos: ast.Pos) -> ModelError:
        return cls(message, self.model.file, pos.line or 1, pos.col or 1, self.model.source)

    # ------------------------------------------------------------ dimensions
    def declare_dims(self) -> None:
        for item in self.model.items:
            if isinstance(item, ast.DimDecl):
                if item.name in self.dims:
                    raise self.error(
                        DuplicateNameError, f"dimension '{item.name}' is declared twice", item.pos
                    )
                if item.default is not None and item.default < 1:
                    raise self.error(
                        TypeMismatchError, f"dimension '{item.name}' must be positive", item.pos
                    )
                too_big = None if item.default is None else side_problem(item.default)
                if too_big is not None:
                    raise self.error(TypeMismatchError, f"'{item.name}': {too_big}", item.pos)
                self.dims[item.name] = item.default
        for name, value in self.overrides.items():
            self.dims[name] = value

    def dim_value(self, dim: ast.Dim, pos: ast.Pos) -> int:
        if isinstance(dim, int):
            return dim
        factors = []
        for factor in dim.split("*"):
            if factor.isdigit():
                factors.append(int(factor))
                continue
            value = self.dims.get(factor)
            if value is None:
                how = (
                    f"it is declared without a default: pass --dim {factor}=N"
                    if factor in self.dims
                    else f"declare it with `dim {factor} = N` or pass --dim {factor}=N"
                )
                raise self.error(
                    UnboundDimError, f"symbolic dimension '{factor}' has no value; {how}", pos
                )
            factors.append(value)
        return math.prod(factors)

    def type_of(self, spec: ast.TypeSpec) -> TensorType:
        try:
            dtype = DType.parse(spec.dtype)
        except ValueError as err:
            raise self.error(TypeMismatchError, str(err), spec.pos) from None
        positions = spec.dim_pos or (spec.pos,) * len(spec.dims)
        shape = tuple(self.dim_value(d, p) for d, p in zip(spec.dims, positions, strict=True))
        for d, p in zip(shape, positions, strict=True):
            if d < 1:
                raise self.error(
                    TypeMismatchError, f"dimensions must be positive, got {number_text(d)}", p
                )
            if side_problem(d) is not None:
                raise self.error(TypeMismatchError, side_problem(d), p)
        if shape_problem(shape) is not None:
            raise self.error(TypeMismatchError, shape_problem(shape), spec.pos)
        return TensorType(dtype, shape)

    def check_const_value(self, item: ast.ConstDecl, t: TensorType, value: float) -> None:
        """A value must be representable: integral and in range for integer dtypes;
        for floating-point ones inf and nan as written, other values within range (not
        rounded to infinity)."""
        if t.dtype.is_int:
            if isinstance(value, float) and not value.is_integer():
                raise self.error(
                    TypeMismatchError,
                    f"{t.dtype} constant needs integer values, got {value}",
                    item.pos,
                )
            info = np.iinfo(t.dtype.np_dtype)
            if not info.min <= value <= info.max:
                raise self.error(
                    TypeMismatchError,
                    f"{number_text(value)} is outside the range of {t.dtype} "
                    f"({info.min} to {info.max})",
                    item.pos,
                )
            return
        limit = float(ml_dtypes.finfo(t.dtype.np_dtype).max)
        written_special = isinstance(value, float) and not math.isfinite(value)
        if not written_special and not abs(value) <= limit:
            raise self.error(
                TypeMismatchError,
                f"{number_text(value)} is outside the range of {t.dtype}",
                item.pos,
            )

    def const(self, b: GraphBuilder, item: ast.ConstDecl) -> int:
        """A `const` fill, a dimension's value, or a `literal` with values."""
        t = self.type_of(item.type)
        value = item.value
        if isinstance(value, str):
            value = self.dim_value(value, item.pos)
        if isinstance(value, int | float):
            self.check_const_value(item, t, value)
            return b.const(value, t, item.name)
        if isinstance(value, ast.External):
            array = self.external_value(item, t)
        else:
            if len(value) != t.numel:
                raise self.error(
                    TypeMismatchError,
                    f"const '{item.name}' of type {t} needs {t.numel} values, got {len(value)}",
                    item.pos,
                )
            for v in value:
                self.check_const_value(item, t, v)
            array = np.array(value, dtype=np.float64).reshape(t.shape)
        return b.literal(item.name, array, t.dtype)

    def external_value(self, item: ast.ConstDecl, t: TensorType) -> np.ndarray:
        if self.data is None or item.name not in self.data:
            where = (
                f"the params file {self.data_file} has no array '{item.name}'"
                if self.data is not None
                else f"no params file was found for this model (expected {self.data_file})"
            )
            raise self.error(
                MissingDataError, f"const '{item.name}' is external but {where}", item.pos
            )
        array = np.asarray(self.data[item.name])
        if tuple(array.shape) != t.shape:
            raise self.error(
                TypeMismatchError,
                f"const '{item.name}' is {t} but {self.data_file} holds "
                f"[{', '.join(map(str, array.shape))}]",
                item.pos,
            )
        floating = array.dtype.kind == "f" or array.dtype == DType.BF16.np_dtype
        if t.dtype.is_int and floating:
            raise self.error(
                TypeMismatchError,
                f"const '{item.name}' is {t} but {self.data_file} holds {array.dtype} values",
                item.pos,
            )
        if t.dtype.is_int and array.size:
            info = np.iinfo(t.dtype.np_dtype)
            lo, hi = int(array.min()), int(array.max())
            if lo < info.min or hi > info.max:
                raise self.error(
                    TypeMismatchError,
                    f"const '{item.name}': {self.data_file} holds values in [{lo}, {hi}], "
                    f"outside the range of {t.dtype}",
                    item.pos,
                )
        return array

    # ----------------------------------------------------------------- names
    def bind(self, name: str, node: int, pos: ast.Pos) -> None:
        if name in self.env:
            first = self.defined_at[name]
            raise self.error(
                DuplicateNameError, f"'{name}' is already defined (at line {first.line})", pos
            )
        self.env[name] = node
        self.defined_at[name] = pos

    def lookup(self, name: str, pos: ast.Pos) -> int:
        if name not in self.env:
            hint = difflib.get_close_matches(name, list(self.env), n=1)
            more = f"; did you mean '{hint[0]}'?" if hint else "; define it before this line"
            raise self.error(UnboundNameError, f"'{name}' is not defined{more}", pos)
        return self.env[name]

    # ------------------------------------------------------------ expressions
    def attr_value(self, spec_type: AttrType | None, attr: ast.Attr):
        value = attr.value
        if spec_type is AttrType.INTS and isinstance(value, tuple):
            return tuple(v if isinstance(v, int) else self.dim_value(v, attr.pos) for v in value)
        if (
            spec_type is AttrType.INT
            and isinstance(value, str)
            and value.split("*")[0] in self.dims
        ):
            return self.dim_value(value, attr.pos)
        return value

    def expr(self, b: GraphBuilder, e: ast.Expr, name: str | None = None) -> int:
        """The node of expression `e`. Walks the expression with an explicit stack, so a
        call nested as deep as the parser allows never reaches the recursion limit;
        operands are checked and added left to right, as they are written."""
        done: list[int] = []
        stack: list[tuple[ast.Expr, bool]] = [(e, False)]
        while stack:
            part, operands_done = stack.pop()
            if isinstance(part, ast.Ref):
                done.append(self.lookup(part.name, part.pos))
            elif not operands_done:
                self.check_call(part)
                stack.append((part, True))
                stack.extend((a, False) for a in reversed(part.args))
            else:
                first = len(done) - len(part.args)
                inputs = tuple(done[first:])
                del done[first:]
                done.append(self.add_call(b, part, inputs, name if part is e else None))
        return done[0]

    def check_call(self, e: ast.Call) -> None:
        """Mistakes a call shows before its operands are looked at."""
        op = REGISTRY.get(e.op)
        if op is None or op.kind is OpKind.LEAF:
            close = closest_name(e.op, CALLABLE_OPS)
            more = f"; did you mean '{close}'?" if close else "; `eqsat ops` lists the ops"
            what = "is a declaration, not an op" if op is not None else "is not an op"
            raise self.error(UnknownOpError, f"'{e.op}' {what}{more}", e.pos)
        if not op.arity_ok(len(e.args)):
            raise self.error(
                ArityError,
                f"'{e.op}' takes {op.arity_text()} ({', '.join(op.operands)}"
                f"{', ...' if op.variadic else ''}), got {len(e.args)}",
                e.pos,
            )

    def add_call(
        self, b: GraphBuilder, e: ast.Call, inputs: tuple[int, ...], name: str | None
    ) -> int:
        op = REGISTRY[e.op]
        given = {}
        for attr in e.attrs:
            spec = op.attr_spec(attr.name)
            if attr.name in given:
                raise self.error(
                    AttributeError_, f"attribute '{attr.name}' is given twice", attr.pos
                )
            given[attr.name] = self.attr_value(spec.type if spec else None, attr)
        try:
            bound = op.bind_attrs(given)
        except OpTypeError as err:
            bad = next((a for a in e.attrs if f"'{a.name}'" in str(err)), None)
            raise self.error(AttributeError_, str(err), bad.pos if bad else e.pos) from None
        try:
            return b.add(e.op, inputs, bound, name)
        except OpTypeError as err:
            operands = ", ".join(str(b.graph.nodes[i].type) for i in inputs)
            message = str(err)
            if operands and operands not in message:
                message += f" (operands: {operands})"
            raise self.error(TypeMismatchError, message, e.pos) from None

    # ----------------------------------------------------------------- model
    def run(self) -> Graph:
        self.declare_dims()
        b = GraphBuilder(self.model.name, {})
        outputs: list[tuple[str, ast.Pos]] = []
        for item in self.model.items:
            if isinstance(item, ast.LeafDecl):
                self.bind(
                    item.name, b.leaf(item.kind, item.name, self.type_of(item.type)), item.pos
                )
            elif isinstance(item, ast.ConstDecl):
                self.bind(item.name, self.const(b, item), item.pos)
            elif isinstance(item, ast.Assign):
                if item.name in self.env:
                    self.bind(item.name, -1, item.pos)  # raises the duplicate error
                self.bind(item.name, self.expr(b, item.expr, item.name), item.pos)
            elif isinstance(item, ast.OutputDecl):
                positions = item.name_pos or (item.pos,) * len(item.names)
                outputs += list(zip(item.names, positions, strict=True))
            elif isinstance(item, ast.RegionAssign):
                raise self.error(
                    RegionError,
                    "this model has an `if`/`loop` region: optimize, compile, simulate and "
                    "run take it (eqsat.control); this command needs a static graph",
                    item.pos,
                )
        if not outputs:
            raise self.error(
                MissingOutputError,
                f"model '{self.model.name}' has no output; add `output NAME` before the closing brace",
                self.model.end,
            )
        seen: set[str] = set()
        for name, pos in outputs:
            if name in seen:
                raise self.error(DuplicateNameError, f"'{name}' is an output twice", pos)
            seen.add(name)
            b.output(name, self.lookup(name, pos))
        b.graph.dims = {k: v for k, v in self.dims.items() if v is not None}
        return b.graph


def check_model(
    model: ast.Model,
    dims: Mapping[str, int] | None = None,
    data: Mapping[str, np.ndarray] | None = None,
    data_file: str = "MODEL.params.npz",
) -> Graph:
    """Type-check `model` with symbolic dimensions bound by `dims` (over declared
    defaults). `data`: the arrays of the params file next to the model (named
    `data_file` in messages), where `external` consts find their values."""
    return _Checker(model, dims or {}, data, data_file).run()


def model_dims(model: ast.Model) -> set[str]:
    """Every symbolic dimension name the model declares or uses."""
    names = {item.name for item in model.items if isinstance(item, ast.DimDecl)}
    written: list[ast.Dim] = []
    for item in model.items:
        if isinstance(item, ast.LeafDecl | ast.ConstDecl):
            written += item.type.dims
        if isinstance(item, ast.ConstDecl) and isinstance(item.value, str):
            written.append(item.value)
        elif isinstance(item, ast.Assign):
            written += _attr_dims(item.expr)
        elif isinstance(item, ast.RegionAssign):
            written += _region_dims(item)
    for d in written:
        if isinstance(d, str):
            names.update(f for f in d.split("*") if not f.isdigit())
    return names


def _region_dims(item: ast.RegionAssign) -> list[ast.Dim]:
    """The list-attribute entries of every call in a region's bodies."""
    region = item.region
    bodies = [region.then, region.orelse] if isinstance(region, ast.IfRegion) else [region.body]
    out: list[ast.Dim] = []
    for body in bodies:
        for inner in body.items:
            if isinstance(inner, ast.Assign):
                out += _attr_dims(inner.expr)
            else:
                out += _region_dims(inner)
    return out


def _attr_dims(e: ast.Expr) -> list[ast.Dim]:
    """The list-attribute entries of every call in `e`, in source order (an explicit
    stack: expressions may nest up to the parser's limit)."""
    out: list[ast.Dim] = []
    stack = [e]
    while stack:
        part = stack.pop()
        if isinstance(part, ast.Ref):
            continue
        out += [v for a in part.attrs if isinstance(a.value, tuple) for v in a.value]
        stack.extend(reversed(part.args))
    return out
