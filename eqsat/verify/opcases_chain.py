"""Generators of the chained-product ops (eqsat/ops/chain.py) for verify-rules and the
property tests: the kernel takes f32 rows x [..., K], weights [K, N1] and [N1, N],
bias vectors, a residual of the output's shape and parameter vectors, which the
generic generator of fused kernels (any operands the body's broadcasting allows)
rarely draws."""

from __future__ import annotations

from eqsat.ir.types import DType, TensorType
from eqsat.norm_prologue import NORM_MATMUL
from eqsat.ops import OpDef
from eqsat.ops.chain import CHAINS
from eqsat.verify.cases import Family, OpCase
from eqsat.verify.space import NoCase, Space, choice, ints

F32 = DType.F32


def _accepts(op: OpDef, t: TensorType) -> bool:
    return t.dtype is F32 and 2 <= t.rank <= 3


def _draw(draw, op: OpDef, first, space: Space) -> OpCase:
    if first is not None and not _accepts(op, first):
        raise NoCase(f"{op.name} takes f32 rows [..., K], not {first}")
    if first is None:
        lead = tuple(draw(space.sides()) for _ in range(draw(ints(1, 2))))
        first = TensorType(F32, (*lead, draw(space.sides())))
    n1, n = draw(space.sides()), draw(space.sides())
    norm = first.shape[-1] if CHAINS[op.name].first in NORM_MATMUL else n  # x's rows or y's
    types = {
        "x": first,
        "w1": TensorType(F32, (first.shape[-1], n1)),
        "b1": TensorType(F32, (n1,)),
        "w2": TensorType(F32, (n1, n)),
        "b2": TensorType(F32, (n,)),
        "r": TensorType(F32, (*first.shape[:-1], n)),
        "gamma": TensorType(F32, (norm,)),
        "beta": TensorType(F32, (norm,)),
    }
    attrs: dict[str, object] = {}
    names = {a.name for a in op.attrs}
    if "approximate" in names:
        attrs["approximate"] = draw(choice(("tanh", "none")))
    if "eps" in names:
        attrs["eps"] = draw(choice((1e-5, 1e-12)))
    return OpCase(op.name, tuple(types[o] for o in op.operands), attrs)


CHAIN_GENERATORS = {name: Family(_accepts, _draw) for name in CHAINS}
