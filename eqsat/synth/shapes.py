"""Symbolic shapes of enumerated terms.

The synthesizer's shape domain: a matrix variable `a` has the shape [a.0, a.1] of two
dim symbols, a scalar variable has the shape []. An op constrains dims by unifying
symbols (matmul's inner dims; the operands of an elementwise op unless one is a
scalar, which broadcasts). A term's typing is the partition of the dim symbols its
ops forced equal (its most general unifier) and its shape in canonical symbols (the
smallest symbol of each class). Which ops the domain covers is read from the
registry: elementwise ops of one operand (shape kept) or two (numpy broadcasting),
`transpose` of a matrix (perm [1, 0]) and 2-D `matmul`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from eqsat.errors import UserError
from eqsat.ops import REGISTRY, OpKind

Dim = str
Shape = tuple[Dim, ...]

UNARY, BINARY, TRANSPOSE, MATMUL = "unary", "binary", "transpose", "matmul"
# The attributes an op gets in enumerated terms (every other attribute takes its default).
FIXED_ATTRS: dict[str, dict[str, object]] = {"transpose": {"perm": (1, 0)}}


class SynthError(UserError):
    """An op the synthesizer cannot enumerate or fingerprint, or a bad configuration."""


def signature(op: str) -> str:
    """How `op` types in the matrix/scalar domain (raises SynthError if it does not)."""
    opdef = REGISTRY.get(op)
    if opdef is None:
        from eqsat.errors import closest_name

        hint = closest_name(op, sorted(REGISTRY))
        raise SynthError(f"unknown op '{op}'" + (f" (did you mean '{hint}'?)" if hint else ""))
    if op == "transpose":
        return TRANSPOSE
    if op == "matmul":
        return MATMUL
    required = [s.name for s in opdef.attrs if s.required]
    if opdef.kind is OpKind.ELEMENTWISE and not opdef.variadic and not required:
        if len(opdef.operands) == 1 and opdef.egg_shape is None:
            return UNARY
        if len(opdef.operands) == 2 and (opdef.egg_shape or "").startswith("(Bcast"):
            return BINARY
    raise SynthError(
        f"op '{op}' cannot be fingerprinted: the synthesizer types elementwise ops "
        "(one operand, or two with broadcasting), transpose and matmul only"
    )


def arity(op: str) -> int:
    return 2 if signature(op) in (BINARY, MATMUL) else 1


def var_shape(name: str, rank: int) -> Shape:
    return tuple(f"{name}.{i}" for i in range(rank))


@dataclass(frozen=True)
class Partition:
    """Classes of dim symbols forced equal (only classes of two or more are stored)."""

    classes: frozenset[frozenset[Dim]] = frozenset()

    def find(self, d: Dim) -> Dim:
        for c in self.classes:
            if d in c:
                return min(c, key=dim_order)
        return d

    def canon(self, shape: Shape) -> Shape:
        return tuple(self.find(d) for d in shape)

    def union(self, pairs: Iterable[tuple[Dim, Dim]]) -> Partition:
        groups = [set(c) for c in self.classes]
        for x, y in pairs:
            gx = next((g for g in groups if x in g), None)
            gy = next((g for g in groups if y in g), None)
            if gx is None:
                gx = {x}
                groups.append(gx)
            if gy is None:
                gy = {y}
                groups.append(gy)
            if gx is not gy:
                gx |= gy
                groups.remove(gy)
        return Partition(frozenset(frozenset(g) for g in groups if len(g) > 1))

    def merge(self, other: Partition) -> Partition:
        if not other.classes:
            return self
        if not self.classes:
            return other
        pairs = [(min(c), d) for c in other.classes for d in c]
        return self.union(pairs)

    def rename(self, names: Mapping[str, str]) -> Partition:
        return Partition(
            frozenset(frozenset(rename_dim(d, names) for d in c) for c in self.classes)
        )


def dim_order(d: Dim) -> tuple[str, int]:
    name, _, index = d.rpartition(".")
    return name, int(index)


def rename_dim(d: Dim, names: Mapping[str, str]) -> Dim:
    name, _, index = d.rpartition(".")
    return f"{names.get(name, name)}.{index}"


def infer(
    op: str, shapes: tuple[Shape, ...], partition: Partition
) -> tuple[Shape, Partition] | None:
    """The shape of `op` applied to operands of `shapes` and the partition it needs,
    or None when the op does not apply (transpose or matmul of a scalar)."""
    kind = signature(op)
    if kind == UNARY:
        return shapes[0], partition
    if kind == TRANSPOSE:
        (s,) = shapes
        if len(s) != 2:
            return None
        return (s[1], s[0]), partition
    a, b = shapes
    if kind == BINARY:
        if not a:
            return b, partition
        if not b:
            return a, partition
        p = partition.union(zip(a, b, strict=True))
        return p.canon(a), p
    if len(a) != 2 or len(b) != 2:
        return None
    p = partition.union([(a[1], b[0])])
    return p.canon((a[0], b[1])), p
