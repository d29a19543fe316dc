"""Tensor values for rule checks: regimes that reach the edges where rules break.

A rule that holds on standard-normal inputs may still be wrong for zeros, for
negative inputs (`sqrt(x*x) => x`, `relu(x) => x`), for large magnitudes that
overflow one side only, or for tiny ones. Each input draws a regime and a seed; the
array is made with numpy (fast, and reproducible from the two draws). `small-int`
comes first so that a shrunk counterexample prints as small integers.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from eqsat.ir.graph import Graph
from eqsat.ir.types import TensorType
from eqsat.verify.space import choice, ints

REGIMES = ("small-int", "normal", "zeros", "negative", "positive", "large", "tiny", "mixed")
# When the reference (the left-hand side) is not finite on a draw, the example is
# re-drawn from these, in order: the rule is then only checked for that range.
RESTRICTED = ("normal", "small", "unit-positive")
LARGE = 1e4
TINY = 1e-4


def make_array(t: TensorType, regime: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = t.shape
    if t.dtype.is_int:
        info = np.iinfo(t.dtype.np_dtype)
        lo, hi = int(info.min), int(info.max)
        bounds = {
            "small-int": (-3, 3),
            "zeros": (0, 0),
            "negative": (lo, -1),
            "positive": (0, hi),
            "large": (lo, hi),
            "mixed": (lo, hi),
            "unit-positive": (1, 2),
            "small": (-3, 3),
        }.get(regime, (-100, 100))
        return rng.integers(bounds[0], bounds[1], size=shape, endpoint=True).astype(
            t.dtype.np_dtype
        )
    normal = rng.standard_normal(shape)
    if regime == "small-int":
        x = rng.integers(-3, 3, size=shape, endpoint=True).astype(np.float64)
    elif regime == "zeros":
        x = np.zeros(shape)
    elif regime == "negative":
        x = -np.abs(normal)
    elif regime == "positive":
        x = np.abs(normal)
    elif regime == "large":
        x = normal * LARGE
    elif regime == "tiny":
        x = normal * TINY
    elif regime == "mixed":
        pick = rng.integers(0, 4, size=shape)
        x = np.choose(pick, [normal, np.zeros(shape), normal * LARGE, normal * TINY])
    elif regime == "unit-positive":
        x = rng.uniform(0.5, 2.0, size=shape)
    elif regime == "small":
        x = normal * 0.01
    else:  # normal
        x = normal
    return np.asarray(x, dtype=np.float32).astype(t.dtype.np_dtype)


def leaves(graph: Graph) -> list[tuple[str, TensorType]]:
    """The inputs and params a caller binds, by name."""
    return [(str(n.attr("name")), n.type) for _, n in graph if n.op in ("input", "param")]


@st.composite
def input_draws(draw, graph: Graph) -> dict[str, tuple[str, int]]:
    """name -> (regime, seed) for every leaf of `graph`."""
    return {
        name: (draw(choice(tuple(REGIMES))), draw(ints(0, 2**16 - 1))) for name, _ in leaves(graph)
    }


def arrays(graph: Graph, draws: dict[str, tuple[str, int]], regime: str | None = None):
    """The arrays of `draws`; with `regime`, every leaf takes that one instead."""
    return {
        name: make_array(t, regime or draws[name][0], draws[name][1]) for name, t in leaves(graph)
    }
