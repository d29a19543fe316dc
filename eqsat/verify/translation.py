"""Translation validation: the compiled program against the model it came from.

Rules are checked one at a time (verify-rules); this checks a whole result, so that
a rule that slipped through, an extraction or rebuild bug, or a wrong kernel lowering
is caught before anything is written. Both programs run on the same seeded random
inputs and params (a few seeds); for each output the normwise relative error
max|got - want| / max|want| is compared with a tolerance scaled to the least
precise float type and the longest reduction in the model:

    min(5%, 16 * eps * (1 + sqrt(K)))

Integer outputs may differ by one step (a value rounded on the other side of .5
after a reassociated float computation); NaN or inf must agree exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.errors import UserError
from eqsat.interpreter import BindingError, evaluate, random_bindings
from eqsat.ir.graph import Graph
from eqsat.verify.compare import _EPS, reduction_length

DEFAULT_SEEDS = 3
MAX_TOLERANCE = 0.05

Runner = Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]]


class VerificationError(UserError):
    """The result does not compute what the original model computes."""


@dataclass(frozen=True)
class Validation:
    seeds: tuple[int, ...]
    tolerance: float
    worst: float  # normwise relative error
    worst_abs: float
    output: str  # where the worst error is
    seed: int

    def summary(self, what: str) -> str:
        seeds = ", ".join(map(str, self.seeds))
        return (
            f"verified: {what} matches the original model on seeds {seeds}: worst rel error "
            f"{self.worst:.3g} (abs {self.worst_abs:.3g}, output '{self.output}'), "
            f"tolerance {self.tolerance:.3g}"
        )


def model_tolerance(graph: Graph) -> float:
    floats = [n.type.dtype for _, n in graph if n.type.dtype.is_float]
    eps = max((_EPS[d] for d in floats), default=_EPS[next(iter(_EPS))])
    k = max((reduction_length(n, graph) for _, n in graph if not n.is_leaf), default=1)
    return min(MAX_TOLERANCE, 16 * eps * (1 + math.sqrt(k)))


def output_error(got: np.ndarray, want: np.ndarray, is_int: bool) -> tuple[float, float]:
    """(max abs error, normwise relative error) of one output."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if g.shape != w.shape:
        return math.inf, math.inf
    with np.errstate(all="ignore"):
        special = (np.isnan(w) & np.isnan(g)) | (~np.isfinite(w) & (g == w))
        diff = np.where(special, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    err = float(diff.max()) if diff.size else 0.0
    if is_int:
        err = max(0.0, err - 1.0)  # one step of rounding is allowed
    finite = np.abs(w[np.isfinite(w)])
    scale = float(finite.max()) if finite.size else 0.0
    return err, (err / scale if scale else err)


def max_errors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> tuple[float, float]:
    """(max abs error, max normwise relative error) over all outputs of a run against the
    reference interpreter's (`simulate`, a bundle's dispatch)."""
    abs_err = rel_err = 0.0
    for name, ref in want.items():
        r = np.asarray(ref).astype(np.float64)
        g = np.asarray(got[name]).astype(np.float64)
        with np.errstate(all="ignore"):
            diff = np.where(np.isnan(r) & np.isnan(g), 0.0, np.abs(g - r))
            diff = np.where(np.isinf(r) & (g == r), 0.0, diff)
        err = float(np.max(diff)) if diff.size else 0.0
        finite = np.abs(r[np.isfinite(r)])
        scale = float(finite.max()) if finite.size else 0.0
        abs_err = max(abs_err, err)
        rel_err = max(rel_err, err / scale if scale else err)
    return abs_err, rel_err


def validate(
    original: Graph,
    run: Runner,
    what: str,
    seeds: Sequence[int] = tuple(range(DEFAULT_SEEDS)),
    tolerance: float | None = None,
    fixed: Mapping[str, np.ndarray] | None = None,
) -> Validation:
    """Run `run` and the reference interpreter on `original` for each seed; raise
    VerificationError when an output's error exceeds the tolerance. `fixed`: values of
    inputs or params that stay the same on every seed (params a program was compiled
    with)."""
    tol = model_tolerance(original) if tolerance is None else tolerance
    worst = (-1.0, 0.0, "", seeds[0])
    names = original.bound_names()
    kept = {k: v for k, v in (fixed or {}).items() if k in names}
    for seed in seeds:
        bindings = {**random_bindings(original, seed), **kept}
        with np.errstate(all="ignore"):
            want = evaluate(original, bindings)
            try:
                got = run(dict(bindings))
            except BindingError as err:
                raise VerificationError(
                    f"verification failed: cannot run {what} on the original model's inputs: {err}"
                ) from None
        for name, ref in want.items():
            if name not in got:
                raise VerificationError(f"verification failed: {what} has no output '{name}'")
            is_int = np.asarray(ref).dtype.kind in "iu"
            abs_err, rel_err = output_error(got[name], ref, is_int)
            if rel_err > worst[0]:
                worst = (rel_err, abs_err, name, seed)
            if not rel_err <= tol:
                raise VerificationError(
                    f"verification failed: output '{name}' of {what} differs from the original "
                    f"model: max rel error {rel_err:.3g} (abs {abs_err:.3g}) > tolerance "
                    f"{tol:.3g} on inputs of seed {seed}; nothing was written"
                )
    return Validation(tuple(seeds), tol, max(worst[0], 0.0), worst[1], worst[2], worst[3])


def validate_graph(
    original: Graph, optimized: Graph, seeds: Sequence[int], tolerance: float | None = None
) -> Validation:
    """The optimized graph, run by the reference interpreter, against the original."""
    return validate(
        original, lambda b: evaluate(optimized, b), "the optimized model", seeds, tolerance
    )


def validate_program(
    original: Graph,
    compiled,
    hw,
    seeds: Sequence[int],
    tolerance: float | None = None,
    extra_feeds: Mapping[str, np.ndarray] | None = None,
    fixed: Mapping[str, np.ndarray] | None = None,
) -> Validation:
    """The lowered program, run on hwsim, against the original model. `extra_feeds`:
    params only the program reads (a quantization's); `fixed`: the original's params the
    program was compiled with (their values are baked into its instructions)."""
    from hwsim import simulate

    def run(bindings: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        result = simulate(compiled.program, hw, compiled.feeds({**bindings, **(extra_feeds or {})}))
        return compiled.results(result.outputs)

    return validate(original, run, "the simulated program", seeds, tolerance, fixed)
