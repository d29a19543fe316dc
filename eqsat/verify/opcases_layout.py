"""Op-case generators for layout ops, normalizations, reductions and number formats
(see opcases.py for the contract: draw(draw, op, first, space) -> OpCase)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from eqsat.ir.types import DType
from eqsat.ops import OpDef
from eqsat.verify.cases import OpCase, first_operand, maybe
from eqsat.verify.space import BOOLS, FLOAT_DTYPES, Space, choice, dtypes, ints, perms


def _case(op: str, in_types, attrs=None) -> OpCase:
    return OpCase(op, tuple(in_types), attrs or {})


def _first(draw, op: OpDef, first, space: Space, dtypes_=None, min_rank=0):
    return first_operand(draw, op, first, space, dtypes_, min_rank)


def negate_some(draw, values: Sequence[int], rank: int) -> tuple[int, ...]:
    """Write some axes counted from the end (negative), as users do."""
    return tuple(v - rank if draw(BOOLS) else v for v in values)


def draw_transpose(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    perm = draw(perms(x.rank))
    attrs: dict[str, Any] = {}
    if x.rank == 0 or draw(ints(0, 3)):
        attrs["perm"] = negate_some(draw, perm, x.rank)
    return _case(op.name, (x,), attrs)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def draw_reshape(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    n = x.numel
    rank = draw(ints(0 if n == 1 else 1, space.max_rank))
    target, rest = [], n
    for _ in range(rank - 1):
        d = draw(choice(tuple(_divisors(rest))))
        target.append(d)
        rest //= d
    if rank:
        target.append(rest)
    target = draw(st.permutations(target))
    if target and draw(BOOLS):
        target[draw(ints(0, len(target) - 1))] = -1
    return _case(op.name, (x,), {"shape": tuple(target)})


def draw_concat(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space, min_rank=1)
    axis = draw(ints(0, x.rank - 1))
    types = [x]
    for _ in range(draw(ints(0, 2))):
        shape = list(x.shape)
        shape[axis] = draw(space.sides())
        types.append(x.with_shape(tuple(shape)))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "axis", negate_some(draw, [axis], x.rank)[0], 0)
    return _case(op.name, types, attrs)


def draw_slice(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    axes = draw(perms(x.rank))[: draw(ints(0, x.rank))]
    starts, ends = [], []
    for a in axes:
        n = x.shape[a]
        lo = draw(ints(0, n - 1))
        hi = draw(ints(lo + 1, n))
        starts.append(
            draw(
                choice(
                    (
                        lo,
                        lo - n,
                    )
                )
            )
        )
        end_forms = [hi] + ([hi - n] if hi < n else [n + draw(ints(0, 5))])
        ends.append(draw(choice(tuple(end_forms))))
    attrs: dict[str, Any] = {"starts": tuple(starts), "ends": tuple(ends)}
    if list(axes) != list(range(len(axes))) or draw(BOOLS):
        attrs["axes"] = negate_some(draw, axes, x.rank)
    return _case(op.name, (x,), attrs)


def draw_broadcast(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    extra = draw(ints(0, space.max_rank - x.rank)) if x.rank < space.max_rank else 0
    shape = [draw(space.sides()) for _ in range(extra)]
    shape += [draw(space.sides()) if d == 1 else d for d in x.shape]
    return _case(op.name, (x,), {"shape": tuple(shape)})


def draw_softmax(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space, min_rank=1)
    attrs: dict[str, Any] = {}
    axis = draw(ints(-x.rank, x.rank - 1))
    maybe(draw, attrs, "axis", axis, -1)
    return _case(op.name, (x,), attrs)


def draw_layernorm(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space, FLOAT_DTYPES, min_rank=1)
    v = x.with_shape((x.shape[-1],))
    attrs: dict[str, Any] = {}
    if draw(BOOLS):
        attrs["eps"] = draw(
            choice(
                (
                    1e-12,
                    1e-5,
                    0.001,
                    0.5,
                    1,
                )
            )
        )
    return _case(op.name, (x, v, v), attrs)


def draw_reduce(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    attrs: dict[str, Any] = {}
    if x.rank and draw(BOOLS):
        axes = draw(perms(x.rank))[: draw(ints(1, x.rank))]
        attrs["axes"] = negate_some(draw, axes, x.rank)
    maybe(draw, attrs, "keepdims", draw(BOOLS), False)
    return _case(op.name, (x,), attrs)


def draw_cast(draw, op: OpDef, first, space: Space):
    return _case(op.name, (_first(draw, op, first, space),), {"dtype": draw(dtypes()).value})


_SCALES = st.sampled_from([0.001, 0.02, 0.1, 0.5, 1.0, 3, 17.25])


def _scale_attrs(draw, out: DType | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"scale": draw(_SCALES)}
    if out is not None:
        maybe(draw, attrs, "dtype", out.value, "i8")
    if draw(BOOLS):
        info = np.iinfo((out or DType.I8).np_dtype)
        attrs["zero_point"] = draw(ints(max(int(info.min), -1000), min(int(info.max), 1000)))
    return attrs


def draw_quant(draw, op: OpDef, first, space: Space):
    x = _first(draw, op, first, space)
    out = None if op.name == "dequantize" else draw(dtypes("int"))
    return _case(op.name, (x,), _scale_attrs(draw, out))
