"""Translation validation of a model with regions (`--verify`): the optimized program
(interpreted) or the simulated one against the original on seeded inputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from eqsat.control.interpret import run_control
from eqsat.control.load import random_control_bindings
from eqsat.control.program import ControlProgram
from eqsat.verify.translation import (
    Validation,
    VerificationError,
    model_tolerance,
    output_error,
)


def validate_control(
    original: ControlProgram,
    run: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]],
    what: str,
    seeds: Sequence[int],
    tolerance: float | None = None,
    fixed: Mapping[str, np.ndarray] | None = None,
) -> Validation:
    """`run` against the reference interpreter on `original` for each seed; raises
    VerificationError above the tolerance (default: the loosest of its graphs').
    `fixed`: values used whatever the seed (the params file's)."""
    tol = tolerance
    if tol is None:
        tol = max((model_tolerance(g) for _, g in original.graphs()), default=1e-6)
    worst = (-1.0, 0.0, "", seeds[0])
    for seed in seeds:
        values = {**random_control_bindings(original, seed), **(fixed or {})}
        with np.errstate(all="ignore"):
            want, _ = run_control(original, values)
            got = run(dict(values))
        for name, ref in want.items():
            abs_err, rel_err = output_error(got[name], ref, np.asarray(ref).dtype.kind in "iu")
            if rel_err > worst[0]:
                worst = (rel_err, abs_err, name, seed)
            if not rel_err <= tol:
                raise VerificationError(
                    f"verification failed: output '{name}' of {what} differs from the original "
                    f"model: max rel error {rel_err:.3g} (abs {abs_err:.3g}) > tolerance "
                    f"{tol:.3g} on inputs of seed {seed}; nothing was written"
                )
    return Validation(tuple(seeds), tol, max(worst[0], 0.0), worst[1], worst[2], worst[3])
