"""The sizes and element types generators draw from.

Shape constraints of a pattern (`matmul(x, w)` needs x's K to be w's K; a guard
`shape(a) == shape(b)`) hold far more often when every side comes from a small
palette with 1 in it, so a verification attempt draws a palette first. The tests use
the plain space (sides 1..5, no palette).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType

FLOAT_DTYPES = (DType.F32, DType.BF16)
INT_DTYPES = (DType.I8, DType.I32)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES


@cache
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """st.integers, built once per range: hypothesis validates every new strategy
    object, which costs more than the draw itself in the generators' inner loops."""
    return st.integers(lo, hi)


@cache
def choice(values: tuple) -> st.SearchStrategy:
    """st.sampled_from, built once per tuple of choices."""
    return st.sampled_from(values)


@cache
def perms(n: int) -> st.SearchStrategy[list[int]]:
    """st.permutations(range(n)), built once per n."""
    return st.permutations(range(n))


BOOLS = st.booleans()


class NoCase(Exception):
    """A generator cannot build a valid case from what it was given (retry)."""


@dataclass(frozen=True)
class Space:
    """Sides are 1..max_side, ranks 0..max_rank; with a palette, a side is one of the
    palette's values half of the time (shrinking goes to the palette's first)."""

    max_side: int = 5
    max_rank: int = 4
    palette: tuple[int, ...] = ()

    def sides(self, max_side: int | None = None) -> st.SearchStrategy[int]:
        return _sides(self.palette, max_side or self.max_side)

    def shapes(self, min_rank: int = 0, max_rank: int | None = None, max_side: int | None = None):
        top = self.max_rank if max_rank is None else max_rank
        return _shapes(self.palette, max_side or self.max_side, min_rank, top)

    def tensor_types(
        self,
        dtype: DType | Sequence[DType] | None = None,
        min_rank: int = 0,
        max_rank: int | None = None,
        max_side: int | None = None,
    ) -> st.SearchStrategy[TensorType]:
        key = dtype if dtype is None or isinstance(dtype, DType) else tuple(dtype)
        return _tensor_types(self, key, min_rank, max_rank, max_side)


@cache
def _tensor_types(space: Space, dtype, min_rank: int, max_rank, max_side):
    if dtype is None:
        dts: st.SearchStrategy[DType] = choice(ALL_DTYPES)
    elif isinstance(dtype, DType):
        dts = st.just(dtype)
    else:
        dts = choice(dtype)
    return st.builds(TensorType, dts, space.shapes(min_rank, max_rank, max_side))


@cache
def _sides(palette: tuple[int, ...], top: int) -> st.SearchStrategy[int]:
    preferred = tuple(s for s in palette if s <= top)
    if not preferred:
        return st.integers(1, top)
    # one draw: an index into the palette, or past it a plain side
    n = len(preferred)
    return st.integers(0, n + top - 1).map(lambda i: preferred[i] if i < n else i - n + 1)


@cache
def _shapes(palette: tuple[int, ...], top: int, min_rank: int, max_rank: int):
    return st.lists(_sides(palette, top), min_size=min_rank, max_size=max_rank).map(tuple)


PLAIN = Space()


def dtypes(kind: str | None = None) -> st.SearchStrategy[DType]:
    pool = {"float": FLOAT_DTYPES, "int": INT_DTYPES, None: ALL_DTYPES}[kind]
    return st.sampled_from(pool)


@st.composite
def palettes(draw) -> Space:
    """A space whose palette is 1 and two more sides (odd sizes included)."""
    a = draw(ints(1, PLAIN.max_side))
    b = draw(ints(1, PLAIN.max_side))
    return Space(palette=tuple(dict.fromkeys((1, a, b))))
