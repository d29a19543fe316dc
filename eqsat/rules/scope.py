"""What one direction of a rule knows while it compiles: the variables bound so far
(with their types), the egglog query atoms gathered, fresh names, and how to report
an error at a token."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from eqsat.ops import AttrType
from eqsat.rules import ast
from eqsat.rules.errors import RuleError


class Ty(StrEnum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    INTS = "list"
    DTYPE = "dtype"
    STR = "str"
    TERM = "tensor"


ATTR_TY = {
    AttrType.INT: Ty.INT,
    AttrType.FLOAT: Ty.FLOAT,
    AttrType.BOOL: Ty.BOOL,
    AttrType.INTS: Ty.INTS,
    AttrType.DTYPE: Ty.DTYPE,
    AttrType.STR: Ty.STR,
}

TY_WORDS = {
    Ty.INT: "an integer",
    Ty.FLOAT: "a float",
    Ty.BOOL: "a boolean",
    Ty.INTS: "a list of integers",
    Ty.DTYPE: "a dtype",
    Ty.STR: "a name string",
    Ty.TERM: "a tensor",
}

DTYPE_NAMES = ("f32", "bf16", "i8", "i32")


@dataclass
class Binding:
    ty: Ty
    pos: ast.Pos
    origin: str  # "lhs" (pattern or guard) or "rhs" (a new RHS binding)


def var(name: str) -> str:
    """A rule variable as egglog sees it. The prefix keeps user names clear of
    egglog globals ($n<i>, compared without `$`) and of our own fresh names."""
    return f"v_{name}"


@dataclass
class Scope:
    file: str
    source: str
    reverse: bool = False
    env: dict[str, Binding] = field(default_factory=dict)
    atoms: list[str] = field(default_factory=list)
    hoisted: dict[str, str] = field(default_factory=dict)
    counter: int = 0
    in_rhs: bool = False
    # (query atoms so far, list term): lists a guard needs built before it can match
    seeds: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    def fresh(self) -> str:
        self.counter += 1
        return f"t_{self.counter}"

    def fail(self, cls: type[RuleError], message: str, pos: ast.Pos) -> RuleError:
        if self.reverse:
            message += " (in the reverse direction of '<=>')"
        return cls(message, self.file, pos.line, pos.col, self.source)

    def bind(self, name: str, ty: Ty, pos: ast.Pos, origin: str = "lhs") -> str:
        self.env[name] = Binding(ty, pos, origin)
        return var(name)

    def hoist(self, expr: str) -> str:
        """A query variable equal to `expr` (one per distinct expression)."""
        if expr not in self.hoisted:
            name = self.fresh()
            self.atoms.append(f"(= {name} {expr})")
            self.hoisted[expr] = name
        return self.hoisted[expr]

    def seed(self, term: str) -> str:
        """A query variable equal to the list `term`, which a companion rule builds."""
        if term not in self.hoisted:
            self.seeds.append((tuple(self.atoms), term))
        return self.hoist(term)
