"""Symbolic dimensions as the model text can write them: products of names and an
integer (`B*S`, `12*S`, `64`).

Exported graphs compute reshape targets from `Shape` of tensors whose batch and
sequence axes are dynamic. The importer carries those computations out on `SymDim`s
held in numpy object arrays, so that `Concat(Gather(Shape(x), 0), 12, 64)` becomes the
attribute `shape=[B, 12, 64]`. What leaves the monomials (`S + 1`, or `S == 1`, which
holds for some sizes and not others) raises `NotRepresentable` with the names
involved; the importer then binds those dimensions to a number and tries again.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass


class NotRepresentable(Exception):
    """A value of symbolic dimensions that is not a product (or a decision that
    depends on their values)."""

    def __init__(self, names: frozenset[str], what: str):
        super().__init__(what)
        self.names = names
        self.what = what


@dataclass(frozen=True)
class SymDim:
    """coef * product of names (with repetition), all names positive integers."""

    coef: int
    names: tuple[str, ...] = ()  # sorted

    @staticmethod
    def of(value: int | str | SymDim) -> SymDim:
        if isinstance(value, SymDim):
            return value
        if isinstance(value, str):
            return SymDim(1, (value,))
        return SymDim(int(value))

    @property
    def is_int(self) -> bool:
        return not self.names

    def text(self) -> str:
        """As the model format writes a dimension: `12*B*S`, `S`, `64`."""
        parts = [*([str(self.coef)] if self.coef != 1 or not self.names else []), *self.names]
        return "*".join(parts)

    def value(self, binding: dict[str, int]) -> int:
        return self.coef * math.prod(binding[n] for n in self.names)

    def __str__(self) -> str:
        return self.text()

    # -- arithmetic on int64 shape values (numpy object arrays call these)

    def _other(self, other) -> SymDim | None:
        if isinstance(other, SymDim):
            return other
        if isinstance(other, int | bool) or (hasattr(other, "dtype") and other.dtype.kind in "iu"):
            return SymDim(int(other))
        return None

    def __mul__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        return SymDim(self.coef * o.coef, tuple(sorted(self.names + o.names))).norm()

    __rmul__ = __mul__

    def __add__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        if o.coef == 0:
            return self.norm()
        if self.coef == 0:
            return o.norm()
        if o.names == self.names:
            return SymDim(self.coef + o.coef, self.names).norm()
        raise NotRepresentable(
            frozenset(self.names + o.names), f"{self.text()} + {o.text()} is not a product"
        )

    __radd__ = __add__

    def __neg__(self):
        return SymDim(-self.coef, self.names).norm()

    def __sub__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        return self + (-o)

    def __rsub__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        return o + (-self)

    def __floordiv__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        return self.divide(o)

    def __rfloordiv__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        return o.divide(self)

    __truediv__ = __floordiv__
    __rtruediv__ = __rfloordiv__

    def divide(self, o: SymDim) -> SymDim | int:
        """Exact division (C truncation for two integers)."""
        if self.is_int and o.is_int:
            if o.coef == 0:
                return SymDim(0)
            q = abs(self.coef) // abs(o.coef)
            return SymDim(q if (self.coef < 0) == (o.coef < 0) else -q)
        rest = Counter(self.names)
        rest.subtract(o.names)
        if o.coef and self.coef % o.coef == 0 and all(v >= 0 for v in rest.values()):
            return SymDim(self.coef // o.coef, tuple(sorted(rest.elements()))).norm()
        raise NotRepresentable(
            frozenset(self.names + o.names), f"{self.text()} / {o.text()} is not exact"
        )

    def __mod__(self, other):
        o = self._other(other)
        if o is None:
            return NotImplemented
        if self.is_int and o.is_int:
            return SymDim(self.coef % o.coef) if o.coef else SymDim(0)
        if o.is_int and o.coef and self.coef % o.coef == 0:
            return SymDim(0)
        raise NotRepresentable(frozenset(self.names + o.names), f"{self.text()} mod {o.text()}")

    def norm(self) -> SymDim:
        return SymDim(0) if self.coef == 0 else self

    # -- comparisons: decided when they hold for every binding of the names

    def compare(self, op: str, other) -> bool:
        o = self._other(other)
        if o is None:
            raise TypeError(other)
        if self.is_int and o.is_int:
            a, b = self.coef, o.coef
            return {"eq": a == b, "lt": a < b, "le": a <= b}[op]
        if self.names == o.names and self.coef == o.coef:
            return op in ("eq", "le")
        # Names are positive integers: a product with a positive coefficient is at least
        # its coefficient, and that bound decides some comparisons with a number.
        if o.is_int and self.coef > 0:
            if op == "lt" and self.coef >= o.coef:
                return False
            if op in ("le", "eq") and self.coef > o.coef:
                return False
        if self.is_int and o.coef > 0:
            if op == "lt" and self.coef < o.coef:
                return True
            if op == "le" and self.coef <= o.coef:
                return True
            if op == "eq" and self.coef < o.coef:
                return False
        raise NotRepresentable(
            frozenset(self.names + o.names), f"whether {self.text()} {op} {o.text()}"
        )

    def __eq__(self, other) -> bool:  # type: ignore[override]
        o = self._other(other)
        if o is None:
            return NotImplemented
        return self.compare("eq", o)

    def __ne__(self, other) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __lt__(self, other) -> bool:
        return self.compare("lt", other)

    def __le__(self, other) -> bool:
        return self.compare("le", other)

    def __gt__(self, other) -> bool:
        return not self.compare("le", other)

    def __ge__(self, other) -> bool:
        return not self.compare("lt", other)

    def __hash__(self) -> int:
        return hash((self.coef, self.names))

    def __int__(self) -> int:
        if not self.is_int:
            raise NotRepresentable(frozenset(self.names), f"the number {self.text()}")
        return self.coef

    __index__ = __int__


def same(a: SymDim | int, b: SymDim | int) -> bool:
    """Structural identity (never raises): the same product."""
    sa, sb = SymDim.of(a), SymDim.of(b)
    return sa.coef == sb.coef and sa.names == sb.names


# Probe values: each symbolic name gets a distinct prime in two bindings; a dimension
# the registry computes from them is read back as a product by factoring (`decode`)
# and checked against the second binding. The primes are small so that no size a
# model clamps to (a position table of 512 rows) is exceeded, and odd enough not to
# divide the constants of real models often (a wrong reading fails the check).
_PROBES = ((11, 13, 17, 19, 23, 29, 31, 37), (41, 43, 47, 53, 59, 61, 67, 71))
MAX_SYMBOLIC = len(_PROBES[0])


def probe_bindings(names: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    if len(names) > MAX_SYMBOLIC:
        raise ValueError(f"at most {MAX_SYMBOLIC} symbolic dimensions are supported")
    return (
        {n: _PROBES[0][k] for k, n in enumerate(names)},
        {n: _PROBES[1][k] for k, n in enumerate(names)},
    )


def decode(values: tuple[int, ...], probes: tuple[dict[str, int], ...]) -> SymDim | None:
    """The product that gives `values` at every probe binding, or None. Exponents are
    searched up to what the first binding's value allows, so a coefficient that shares
    a factor with a probe prime still reads back (the other binding decides)."""
    if len(set(values)) == 1:
        return SymDim(values[0])
    first, binding = values[0], probes[0]
    names = list(binding)
    limits = []
    for name in names:
        e, rest = 0, first
        while rest and rest % binding[name] == 0:
            rest //= binding[name]
            e += 1
        limits.append(e)
    for exponents in itertools.product(*(range(e + 1) for e in limits)):
        power = math.prod(binding[n] ** e for n, e in zip(names, exponents, strict=True))
        coef = first // power
        dim = SymDim(
            coef, tuple(sorted(n for n, e in zip(names, exponents, strict=True) for _ in range(e)))
        )
        if all(dim.value(b) == v for v, b in zip(values, probes, strict=True)):
            return dim.norm()
    return None
