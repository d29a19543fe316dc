"""Does an identity found on matrices and scalars keep its type on every shape?

Before a rule is tried without guards, both sides are typed (the registry's own type
rules) on every assignment of shapes from a small set to its variables (scalars,
vectors, matrices of several forms, a batch of matrices, size-1 dims that broadcast).
Wherever the left-hand side types, the right-hand side must type to the same shape:
else the unguarded rule would merge e-classes of different shapes, which is wrong
(and makes the e-graph's shape analysis grow without end), so only the guarded form
is tried. verify-rules then checks the values.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.synth.shapes import FIXED_ATTRS
from eqsat.synth.terms import Term, variables

PROBE_SHAPES: tuple[tuple[int, ...], ...] = (
    (),
    (3,),
    (1, 3),
    (2, 1),
    (2, 3),
    (3, 2),
    (3, 3),
    (2, 2, 3),
)


def concrete_type(t: Term, env: dict[str, TensorType]) -> TensorType | None:
    if isinstance(t, str):
        return env[t]
    operands = []
    for c in t[1:]:
        ct = concrete_type(c, env)
        if ct is None:
            return None
        operands.append(ct)
    opdef = REGISTRY[t[0]]
    try:
        return opdef.type_of(operands, opdef.bind_attrs(FIXED_ATTRS.get(t[0], {})))
    except OpTypeError:
        return None


def type_preserving(lhs: Term, rhs: Term, shapes: Sequence[tuple[int, ...]] = PROBE_SHAPES) -> bool:
    """Wherever `lhs` types, `rhs` types to the same type (both directions for `<=>`
    is the caller's business: call it twice)."""
    names = variables(lhs)
    f32 = DType.parse("f32")
    for combo in itertools.product(shapes, repeat=len(names)):
        env = {v: TensorType(f32, s) for v, s in zip(names, combo, strict=True)}
        left = concrete_type(lhs, env)
        if left is not None and concrete_type(rhs, env) != left:
            return False
    return True
