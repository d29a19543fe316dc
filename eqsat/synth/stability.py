"""Is an identity also one in float32, as verify-rules judges it?

Identities over the reals can lose digits in floats: in `b * (a - (a + c))` a large `a`
cancels and `b` magnifies what is left, so that side no longer matches `-(b * c)`
within verify-rules' tolerance (RTOL_FACTOR * eps * (1 + reduction length) times the
largest value the left-hand side computes). verify-rules' random examples meet such
inputs now and then; this screen tries many for every candidate: both sides in
float32 on every combination of verify-rules' normal, large, tiny and mixed regimes
for the variables, 32 seeds each (mixed draws put large and tiny values side by side,
and only some draws hit the element that magnifies a lost digit), with that
tolerance applied to each direction of the rule. It lowers the chance that a kept
rule fails a later verify-rules run; it does not prove it cannot.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.synth.fingerprint import class_sizes
from eqsat.synth.shapes import FIXED_ATTRS, Partition, var_shape
from eqsat.synth.terms import Term, variables
from eqsat.verify.compare import RTOL_FACTOR
from eqsat.verify.values import make_array

REGIMES = ("normal", "large", "tiny", "mixed")
SEEDS = 32
EPS32 = float(np.finfo(np.float32).eps)


def _evaluate(t: Term, env: Mapping[str, np.ndarray], seen: list[np.ndarray]) -> np.ndarray:
    """float32 value of `t`; every value computed (leaves too) is appended to `seen`."""
    if isinstance(t, str):
        out = env[t]
    else:
        opdef = REGISTRY[t[0]]
        args = [_evaluate(c, env, seen) for c in t[1:]]
        with np.errstate(all="ignore"):
            out = np.asarray(
                opdef.ref(args, opdef.bind_attrs(FIXED_ATTRS.get(t[0], {}))), dtype=np.float32
            )
    seen.append(out)
    return out


def _reduction(t: Term, env: Mapping[str, np.ndarray]) -> int:
    """The longest matmul inner dimension in `t` (1 without a matmul)."""
    if isinstance(t, str):
        return 1
    k = max(_reduction(c, env) for c in t[1:])
    if t[0] == "matmul":
        k = max(k, int(_evaluate(t[1], env, []).shape[-1]))
    return k


def _direction_ok(lhs: Term, rhs: Term, env: Mapping[str, np.ndarray]) -> bool:
    seen: list[np.ndarray] = []
    left = _evaluate(lhs, env, seen)
    right = _evaluate(rhs, env, [])
    finite = [np.abs(v[np.isfinite(v)]).max(initial=0.0) for v in seen]
    k = max(_reduction(lhs, env), _reduction(rhs, env))
    tol = RTOL_FACTOR * EPS32 * (1 + k) * float(max(finite)) + float(np.finfo(np.float32).tiny)
    l64, r64 = left.astype(np.float64), right.astype(np.float64)
    both = np.isfinite(l64) & np.isfinite(r64)
    if not both.any():
        return True  # verify-rules re-draws such inputs in a smaller range
    return float(np.abs(l64 - r64)[both].max()) <= tol


def float_stable(
    lhs: Term, rhs: Term, ranks: Mapping[str, int], partition: Partition, both_ways: bool
) -> bool:
    names = variables(lhs) + [v for v in variables(rhs) if v not in variables(lhs)]
    symbols = [d for v in names for d in var_shape(v, ranks[v])]
    sizes = class_sizes(partition, symbols, 0)
    f32 = DType.parse("f32")
    types = {
        v: TensorType(f32, tuple(sizes[partition.find(d)] for d in var_shape(v, ranks[v])))
        for v in names
    }
    for seed in range(SEEDS):
        for combo in itertools.product(REGIMES, repeat=len(names)):
            env = {
                v: make_array(types[v], regime, 1000 * seed + i)
                for i, (v, regime) in enumerate(zip(names, combo, strict=True))
            }
            if not _direction_ok(lhs, rhs, env):
                return False
            if both_ways and not _direction_ok(rhs, lhs, env):
                return False
    return True
