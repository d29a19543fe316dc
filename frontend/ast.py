"""The model as written: a syntax tree that keeps the user's spelling and positions.

Positions are excluded from equality so that parse(print(m)) == m holds even though
printing changes the layout. A dimension is an int or a product of factors written
as text ("B", "B*S").
"""

from __future__ import annotations

from dataclasses import dataclass, field

Dim = int | str
ListItem = int | str
AttrValue = int | float | bool | str | tuple[ListItem, ...]


@dataclass(frozen=True)
class External:
    """The value of a `const` that lives in the params file next to the model."""


# A const's value: one number filling its shape, its values row-major, `external`,
# or a dimension expression such as "S" (its value once bound).
ConstValue = int | float | tuple[int | float, ...] | External | str


@dataclass(frozen=True)
class Pos:
    line: int = 0
    col: int = 0


def _pos() -> Pos:
    return field(default_factory=Pos, compare=False, repr=False)


@dataclass(frozen=True)
class TypeSpec:
    dtype: str
    dims: tuple[Dim, ...]
    pos: Pos = _pos()
    dim_pos: tuple[Pos, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Ref:
    name: str
    pos: Pos = _pos()


@dataclass(frozen=True)
class Attr:
    name: str
    value: AttrValue
    pos: Pos = _pos()


@dataclass(frozen=True)
class Call:
    op: str
    args: tuple[Expr, ...]
    attrs: tuple[Attr, ...] = ()
    pos: Pos = _pos()


Expr = Call | Ref


@dataclass(frozen=True)
class DimDecl:
    name: str
    default: int | None
    pos: Pos = _pos()


def _comment() -> str:
    return field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class LeafDecl:
    """`input` or `param`."""

    kind: str
    name: str
    type: TypeSpec
    pos: Pos = _pos()
    comment: str = _comment()  # printed after the declaration (an importer's note)


@dataclass(frozen=True)
class ConstDecl:
    name: str
    type: TypeSpec
    value: ConstValue
    pos: Pos = _pos()
    comment: str = _comment()


@dataclass(frozen=True)
class Assign:
    name: str
    expr: Expr
    pos: Pos = _pos()
    comment: str = _comment()


@dataclass(frozen=True)
class OutputDecl:
    names: tuple[str, ...]
    pos: Pos = _pos()
    name_pos: tuple[Pos, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Body:
    """The statements of a region's body and the names it yields, in order."""

    items: tuple[Assign | RegionAssign, ...]
    yields: tuple[str, ...]
    pos: Pos = _pos()
    yield_pos: tuple[Pos, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class IfRegion:
    """`if (cond) { ... yield a } else { ... yield b }`: cond holds one element,
    nonzero picks `then`."""

    cond: str
    then: Body
    orelse: Body
    pos: Pos = _pos()
    cond_pos: Pos = _pos()


@dataclass(frozen=True)
class Carried:
    """`carried NAME = INIT`: a loop-carried value, NAME inside the body."""

    name: str
    init: str
    pos: Pos = _pos()


@dataclass(frozen=True)
class LoopRegion:
    """`loop (max_trips, cond, carried h = h0, index i) { ... yield cond_next, h_next }`:
    runs while the trip number is below max_trips and cond is nonzero (ONNX Loop)."""

    max_trips: str
    cond: str
    carried: tuple[Carried, ...]
    index: str | None
    body: Body
    pos: Pos = _pos()
    arg_pos: tuple[Pos, ...] = field(default=(), compare=False, repr=False)


Region = IfRegion | LoopRegion


@dataclass(frozen=True)
class RegionAssign:
    """`a, b = if ... ` or `h, n = loop ...`: the region's results by name."""

    names: tuple[str, ...]
    region: Region
    pos: Pos = _pos()
    name_pos: tuple[Pos, ...] = field(default=(), compare=False, repr=False)
    comment: str = _comment()


Item = DimDecl | LeafDecl | ConstDecl | Assign | RegionAssign | OutputDecl


@dataclass(frozen=True)
class Model:
    name: str
    items: tuple[Item, ...]
    pos: Pos = _pos()
    end: Pos = _pos()
    file: str = field(default="<model>", compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)
