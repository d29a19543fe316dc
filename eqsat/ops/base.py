"""The op definition record and the helpers op entries share.

An `OpDef` is the single source of truth for an op: operands, attributes, type
inference, numpy reference semantics, FLOP count and bytes moved. The parser, the
rule compiler, the e-graph encoding, the cost model, the interpreter, the backend and
the test strategies all read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.limits import int64_problem, number_text

AttrValue = int | float | bool | str | tuple[int, ...]
Attrs = Mapping[str, AttrValue]


class OpTypeError(Exception):
    """An op was applied to operands or attributes it does not accept.

    Raised without a source position; the frontend and the rule compiler add one.
    """


class AttrType(StrEnum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    INTS = "ints"
    DTYPE = "dtype"
    STR = "str"


class OpKind(StrEnum):
    """Coarse classes the cost model and the backend dispatch on."""

    LEAF = "leaf"
    ELEMENTWISE = "elementwise"
    MATMUL = "matmul"
    CONV = "conv"
    REDUCE = "reduce"
    NORMALIZE = "normalize"
    LAYOUT = "layout"
    QUANT = "quant"
    FUSED = "fused"


REQUIRED = object()


@dataclass(frozen=True)
class AttrSpec:
    name: str
    type: AttrType
    default: Any = REQUIRED
    doc: str = ""
    # An implementation choice (a matmul's `tile`): the op's meaning does not depend
    # on it, and a rule pattern that leaves it out matches only its default.
    choice: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def check(self, value: Any) -> AttrValue:
        """Return `value` coerced to this attribute's type or raise OpTypeError."""
        t = self.type
        if t is AttrType.INT and isinstance(value, int) and not isinstance(value, bool):
            return self._int64(value)
        if t is AttrType.FLOAT and isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise OpTypeError(
                    f"attribute '{self.name}': {number_text(value)} is too large"
                ) from None
        if t is AttrType.BOOL and isinstance(value, bool):
            return value
        if (
            t is AttrType.INTS
            and isinstance(value, list | tuple)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            return tuple(self._int64(v) for v in value)
        if t is AttrType.DTYPE and isinstance(value, str | DType):
            try:
                return DType.parse(str(value)).value
            except ValueError as err:
                raise OpTypeError(f"attribute '{self.name}': {err}") from None
        if t is AttrType.STR and isinstance(value, str):
            return value
        raise OpTypeError(
            f"attribute '{self.name}' must be {_ATTR_TYPE_WORDS[t]}, got {describe_value(value)}"
        )

    def _int64(self, value: int) -> int:
        """Integer attributes are egglog i64s: one beyond int64 is refused here."""
        problem = int64_problem(value)
        if problem is not None:
            raise OpTypeError(f"attribute '{self.name}': {problem}")
        return value


_ATTR_TYPE_WORDS = {
    AttrType.INT: "an integer",
    AttrType.FLOAT: "a number",
    AttrType.BOOL: "true or false",
    AttrType.INTS: "a list of integers",
    AttrType.DTYPE: "a dtype (f32, bf16, i8, i32)",
    AttrType.STR: "a name",
}


def describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, list | tuple):
        return f"the list [{', '.join(str(v) for v in value)}]"
    return f"'{value}'"


InferFn = Callable[[Sequence[TensorType], Attrs], TensorType]
RefFn = Callable[[Sequence[np.ndarray], Attrs], np.ndarray]
FlopsFn = Callable[[Sequence[TensorType], TensorType, Attrs], int]
NormalizeFn = Callable[[Sequence[TensorType], Attrs], dict[str, AttrValue]]
ReadBytesFn = Callable[[Sequence[TensorType], Attrs], int]


def no_flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return 0


@dataclass(frozen=True)
class OpDef:
    """One op. `ref` computes on arrays already widened to the op's compute dtype
    (f32 for floating point, the stored integer type otherwise); the interpreter
    narrows the result to the inferred dtype."""

    name: str
    kind: OpKind
    operands: tuple[str, ...]
    infer: InferFn
    ref: RefFn
    attrs: tuple[AttrSpec, ...] = ()
    variadic: bool = False
    flops: FlopsFn = no_flops
    normalize: NormalizeFn | None = None
    doc: str = ""
    composition: Any = field(default=None, compare=False)
    # The e-graph's shape analysis: an egglog IntList expression in which {operand}
    # stands for that operand's shape and {attr} for an attribute's value. None means
    # "the shape of the first operand". Likewise egg_dtype: a dtype name, "{attr}", or
    # None for "the dtype of the first operand".
    egg_shape: str | None = None
    egg_dtype: str | None = None
    # DRAM bytes the op reads when that is not all of every operand (a gather reads
    # only the rows its indices select); None: every operand once.
    read_bytes: ReadBytesFn | None = None

    def attr_spec(self, name: str) -> AttrSpec | None:
        for spec in self.attrs:
            if spec.name == name:
                return spec
        return None

    def arity_ok(self, n: int) -> bool:
        if self.variadic:
            return n >= len(self.operands)
        return n == len(self.operands)

    def arity_text(self) -> str:
        n = len(self.operands)
        if self.variadic:
            return f"at least {n} operand{'s' if n != 1 else ''}"
        return f"{n} operand{'s' if n != 1 else ''}"

    def bind_attrs(self, given: Mapping[str, Any]) -> dict[str, AttrValue]:
        """Check `given` against the specs and fill in defaults."""
        out: dict[str, AttrValue] = {}
        for key in given:
            if self.attr_spec(key) is None:
                known = ", ".join(s.name for s in self.attrs) or "none"
                raise OpTypeError(
                    f"'{self.name}' has no attribute '{key}' (its attributes: {known})"
                )
        for spec in self.attrs:
            if spec.name in given:
                out[spec.name] = spec.check(given[spec.name])
            elif spec.required:
                raise OpTypeError(f"'{self.name}' needs the attribute '{spec.name}'")
            else:
                out[spec.name] = spec.default
        return out

    def type_of(self, in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        if not self.arity_ok(len(in_types)):
            raise OpTypeError(f"'{self.name}' takes {self.arity_text()}, got {len(in_types)}")
        return self.infer(in_types, attrs)

    def canonical_attrs(self, in_types: Sequence[TensorType], attrs: Attrs) -> dict[str, AttrValue]:
        """Attributes in canonical form (axes made non-negative, -1 resolved...)."""
        if self.normalize is None:
            return dict(attrs)
        return self.normalize(in_types, attrs)

    def bytes_read(self, in_types: Sequence[TensorType], attrs: Attrs | None = None) -> int:
        """DRAM bytes one run reads (`attrs`: the node's; defaults when left out)."""
        if self.read_bytes is not None:
            return self.read_bytes(in_types, self.bind_attrs(attrs or {}))
        return sum(t.nbytes for t in in_types)

    def bytes_written(self, out: TensorType) -> int:
        return 0 if self.kind is OpKind.LEAF else out.nbytes


# ---------------------------------------------------------------- shared helpers


TILE_ATTR = AttrSpec(
    "tile",
    AttrType.INTS,
    (),
    "[TM, TN, TK] of the GEMM loop (rows, columns, depth per step); [] lets the backend choose",
    choice=True,
)


GROUPS_ATTR = AttrSpec(
    "groups", AttrType.INT, 1, "channel groups: w is [O, C/groups, KH, KW], O divisible by it"
)


def check_tile(op: str, attrs: Attrs) -> None:
    """A `tile` is [] or three positive integers."""
    tile = attrs.get("tile", ())
    if tile and (len(tile) != 3 or any(v < 1 for v in tile)):
        raise OpTypeError(
            f"'{op}': tile must be [] or three positive integers [TM, TN, TK], "
            f"got [{', '.join(map(str, tile))}]"
        )


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcasting rule, with an error that names the shapes."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            text = " and ".join("[" + ", ".join(map(str, s)) + "]" for s in shapes)
            raise OpTypeError(f"shapes {text} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def same_dtype(op: str, in_types: Sequence[TensorType]) -> DType:
    dtypes = {t.dtype for t in in_types}
    if len(dtypes) > 1:
        text = ", ".join(str(t) for t in in_types)
        raise OpTypeError(f"'{op}' needs operands of one dtype, got {text}")
    return in_types[0].dtype


def require_float(op: str, t: TensorType) -> None:
    if not t.dtype.is_float:
        raise OpTypeError(f"'{op}' needs a floating-point operand (f32 or bf16), got {t}")


def normalize_axis(op: str, axis: int, rank: int) -> int:
    if rank == 0:
        raise OpTypeError(f"'{op}': a scalar (rank 0) has no axis {axis}")
    if not -rank <= axis < rank:
        raise OpTypeError(f"'{op}': axis {axis} is out of range for rank {rank}")
    return axis % rank


def normalize_axes(op: str, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    out = tuple(sorted(normalize_axis(op, a, rank) for a in axes))
    if len(set(out)) != len(out):
        raise OpTypeError(f"'{op}': axes {list(axes)} repeat an axis")
    return out
