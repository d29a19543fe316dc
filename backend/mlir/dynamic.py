"""Symbolic dimensions as MLIR dynamic dims (`?`).

eqsat's graphs have concrete shapes: a symbolic dimension is bound when the model is
loaded. To emit one function for every value of a dimension, the program is built at
the bound value and again at a probe value (twice it, one dimension at a time); where
the two programs agree node for node, an axis whose extent changed is a monomial of
the dimension (`c * S`, `c * B * S`: exactly what the model's shape arithmetic
produces), and the emitter writes it as `?` with its runtime size computed from the
function's arguments (`tensor.dim`, `arith.muli`). A program whose structure or
attributes change with the dimension, or an axis that is not such a product (S + 1),
cannot be one function and is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from eqsat.ir.graph import Graph

from .core import MlirEmitError

# attributes that may follow a dimension without changing what is emitted: a
# reshape's or broadcast's target is its result type; a slice's ends are its result
# type (its emitter refuses a dynamic axis that is not whole); a GEMM tile is only read
# by --emit mlir-tiled, which is not emitted with dynamic dims
_SHAPE_ATTRS = {"shape", "tile", "ends"}


@dataclass(frozen=True)
class Sym:
    """coef * product of the named dimensions, known at run time only. Larger than any
    constant extent (a reshape's regrouping treats it so); equal only to itself."""

    coef: int
    names: tuple[str, ...]

    def __str__(self) -> str:
        return "?"

    def __format__(self, spec: str) -> str:
        return "?"

    def __mul__(self, other: object) -> Sym:
        if isinstance(other, Sym):
            return Sym(self.coef * other.coef, tuple(sorted(self.names + other.names)))
        if isinstance(other, int):
            return Sym(self.coef * other, self.names)
        return NotImplemented

    __rmul__ = __mul__

    def __add__(self, other: object) -> Sym:
        if other == 0:  # a padding of nothing along a dynamic axis
            return self
        return NotImplemented

    __radd__ = __add__

    def __lt__(self, other: object) -> bool:
        if isinstance(other, Sym):
            return self.names == other.names and self.coef < other.coef
        return False

    def __gt__(self, other: object) -> bool:
        if isinstance(other, Sym):
            return self.names == other.names and self.coef > other.coef
        return True

    def __le__(self, other: object) -> bool:
        return self == other or self < other

    def __ge__(self, other: object) -> bool:
        return self == other or self > other


Shape = tuple  # of int | Sym


def probe_value(value: int) -> int:
    """The second value a dimension is built at: twice the bound one (keeps whatever
    divisibility the model needs of it)."""
    return 2 * value


def symbolic_shapes(
    build: Callable[[Mapping[str, int]], Graph],
    dims: Mapping[str, int],
    dynamic: Sequence[str],
    base: Graph,
) -> list[Shape]:
    """Per node of `base` (the program built at `dims`), its shape with the axes that
    follow a dimension of `dynamic` as Sym. `build(dims)` rebuilds the program."""
    shapes = [tuple(n.type.shape) for n in base.nodes]
    depends: list[list[set[str]]] = [[set() for _ in s] for s in shapes]
    probes: dict[str, Graph] = {}
    for name in dynamic:
        value = dims[name]
        probes[name] = probe = build({**dims, name: probe_value(value)})
        _same_program(base, probe, name, value)
        for i, (a, b) in enumerate(zip(base.nodes, probe.nodes, strict=True)):
            for axis, (x, y) in enumerate(zip(a.type.shape, b.type.shape, strict=True)):
                if x != y:
                    depends[i][axis].add(name)
    out: list[Shape] = []
    for i, shape in enumerate(shapes):
        row = []
        for axis, extent in enumerate(shape):
            names = tuple(sorted(depends[i][axis]))
            if not names:
                row.append(extent)
                continue
            scale = 1
            for n in names:
                scale *= dims[n]
            if extent % scale:
                raise MlirEmitError(
                    f"{_where(base, i)}: axis {axis} has {extent} elements at "
                    f"{_bound(dims, names)}: not a multiple of {' * '.join(names)}, so it "
                    "cannot be a dynamic dim (only products of dimensions can)"
                )
            sym = Sym(extent // scale, names)
            for n in names:  # the monomial must also give the extent at each probe
                at = {**dims, n: probe_value(dims[n])}
                want = sym.coef
                for m in names:
                    want *= at[m]
                got = probes[n].nodes[i].type.shape[axis]
                if got != want:
                    raise MlirEmitError(
                        f"{_where(base, i)}: axis {axis} has {extent} elements at "
                        f"{_bound(dims, names)} and {got} at {n}={at[n]}: not "
                        f"{sym.coef} * {' * '.join(names)}, so it cannot be a dynamic dim "
                        "(only products of dimensions can)"
                    )
            row.append(sym)
        out.append(tuple(row))
    return out


def _same_program(base: Graph, probe: Graph, name: str, value: int) -> None:
    at = f"{name}={value} and {name}={probe_value(value)}"
    if len(base.nodes) != len(probe.nodes) or base.outputs != probe.outputs:
        raise MlirEmitError(
            f"the program differs between {at} (eqsat chose differently for the two "
            f"sizes): it cannot be one function with {name} dynamic; emit it for one "
            f"value (--dim {name}=N) or with --no-optimize"
        )
    for i, (a, b) in enumerate(zip(base.nodes, probe.nodes, strict=True)):
        if a.op != b.op or a.inputs != b.inputs:
            raise MlirEmitError(
                f"the program differs between {at} at {_where(base, i)} ({a.op} vs "
                f"{b.op}): emit it for one value (--dim {name}=N) or with --no-optimize"
            )
        da, db = dict(a.attr_dict), dict(b.attr_dict)
        changed = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
        changed = [k for k in changed if k not in _SHAPE_ATTRS]
        if changed:
            raise MlirEmitError(
                f"{_where(base, i)}: its {', '.join(changed)} depends on {name} "
                f"({a.op} at {at}); such an op cannot take {name} as a dynamic dim yet"
            )
    for key, array in base.constants.items():
        other = probe.constants.get(key)
        if other is None or getattr(other, "shape", None) != getattr(array, "shape", None):
            raise MlirEmitError(
                f"constant '{key}' changes with {name}: a constant cannot have a dynamic dim"
            )


def _where(graph: Graph, i: int) -> str:
    node = graph.nodes[i]
    return f"'{node.name}' ({node.op})" if node.name else f"a {node.op}"


def _bound(dims: Mapping[str, int], names: Sequence[str]) -> str:
    return ", ".join(f"{n}={dims[n]}" for n in names)
