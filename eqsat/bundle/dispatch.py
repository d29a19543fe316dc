"""The dispatcher: run a request of length n on the smallest bucket that holds it.

Inputs are zero-padded along the dimension, the mask inputs are filled for n, the
bucket's program runs on the simulator, and the outputs are cut back to n.

Padding overhead is defined as the share of the bucket's simulated cycles that the
cost model attributes to padding: the model as written is priced at n and at the
bucket size, and overhead = cycles * (1 - estimate(n) / estimate(bucket)). With
`exact=True` the model is also optimized and compiled for n itself and simulated, and
the measured overhead (bucket cycles - exact cycles) is reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from eqsat.bundle.build import Bundle
from eqsat.bundle.errors import BundleError
from eqsat.bundle.masking import mask_values, valid_positions
from eqsat.bundle.ranges import bucket_for
from eqsat.interpreter import evaluate, random_inputs
from eqsat.program_cost import program_cost


@dataclass
class BundleRun:
    """What one dispatched request did."""

    n: int
    bucket: int
    cycles: int  # simulated, on the bucket's program
    outputs: dict[str, np.ndarray]  # cut to n
    est_exact_cycles: int  # the model as written at n (cost model)
    est_bucket_cycles: int  # the model as written at the bucket (cost model)
    report: object = None  # hwsim report of the bucket's run
    errors: tuple[float, float] | None = None  # vs the reference interpreter at n
    exact_cycles: int | None = None  # simulated exact-shape compile (exact=True)
    exact_outputs: dict[str, np.ndarray] | None = None

    @property
    def overhead_cycles(self) -> int:
        """Estimated padding overhead: the bucket's cycles scaled by the cost model's
        share of the bucket's work that n does not need."""
        if not self.est_bucket_cycles:
            return 0
        return round(self.cycles * (1 - self.est_exact_cycles / self.est_bucket_cycles))

    @property
    def measured_overhead_cycles(self) -> int | None:
        return None if self.exact_cycles is None else self.cycles - self.exact_cycles


def pad_to(value: np.ndarray, axes: tuple[int, ...], size: int) -> np.ndarray:
    """`value` zero-padded at the end of each of `axes` to `size`."""
    widths = [(0, size - value.shape[k]) if k in axes else (0, 0) for k in range(value.ndim)]
    return np.pad(value, widths)


def cut_to(
    value: np.ndarray, spans: tuple[tuple[int, int, int], ...], size: int, n: int
) -> np.ndarray:
    """`value` without its padding: on each padded axis (axis, before, after) the
    positions before + n .. before + size go."""
    for axis, before, after in spans:
        keep = valid_positions(size, n, (before, after))
        value = np.compress(keep, value, axis=axis)
    return value


def run_bundle(
    bundle: Bundle,
    dims: Mapping[str, int],
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    seed: int = 0,
    verify: bool = False,
    exact: bool = False,
    record: bool = False,
) -> BundleRun:
    """Run the bundle at `dims[bundle.dim.name]` = n. `inputs`: the model's inputs at n
    (by name; missing ones are drawn from `seed` as `eqsat simulate MODEL` draws them).
    verify: compare with the reference interpreter on the model at n. exact: also
    compile and simulate the model at n to measure the overhead."""
    from hwsim import simulate

    name = bundle.dim.name
    extra = sorted(set(dims) - {name})
    if extra:
        raise BundleError(
            f"--dim {extra[0]}: the bundle varies only '{name}' (others are fixed at compile time)"
        )
    if name not in dims:
        raise BundleError(f"give the length to run: --dim {name}=N ({bundle.dim})")
    n = int(dims[name])
    if not bundle.dim.lo <= n <= bundle.dim.hi:
        raise BundleError(f"{name}={n} lies outside the bundle's range {bundle.dim}")
    b = bucket_for(bundle.buckets, n)
    if b is None:
        raise BundleError(f"{name}={n} fits no bucket of {bundle.buckets}")
    exact_graph = bundle.source.graph(name, n)
    given = dict(inputs or {})
    values = random_inputs(exact_graph, seed)
    for k, v in given.items():
        if k not in values:
            raise BundleError(f"--inputs: '{k}' is not an input of the model")
        if np.shape(v) != np.shape(values[k]):
            raise BundleError(
                f"--inputs: '{k}' has shape {list(np.shape(v))}, the model at {name}={n} takes "
                f"{list(np.shape(values[k]))}"
            )
        values[k] = np.asarray(v).astype(values[k].dtype)
    params = bundle.source.params(exact_graph)
    prog = bundle.programs[b]
    feeds = {k: pad_to(v, prog.inputs.get(k, ()), b) for k, v in values.items()}
    feeds.update(params)
    feeds.update({m: mask_values(role, b, n) for role, m in prog.masks.items()})
    compiled = bundle.compiled(b)
    hw = bundle.hardware()
    result = simulate(compiled.program, hw, compiled.feeds(feeds), record=record)
    outputs = {
        k: cut_to(v, prog.outputs.get(k, ()), b, n)
        for k, v in compiled.results(result.outputs).items()
    }
    run = BundleRun(
        n,
        b,
        result.report.cycles,
        outputs,
        int(program_cost(exact_graph, hw).cycles),
        int(program_cost(bundle.source.graph(name, b), hw).cycles),
        result.report,
    )
    if verify:
        from eqsat.verify.translation import max_errors

        run.errors = max_errors(outputs, evaluate(exact_graph, {**values, **params}))
    if exact:
        run.exact_cycles, run.exact_outputs = _exact_run(bundle, exact_graph, {**values, **params})
    return run


def _exact_run(bundle: Bundle, graph, bindings) -> tuple[int, dict[str, np.ndarray]]:
    """Optimize, compile and simulate the model at exactly n (what a bundle avoids)."""
    from backend import compile_graph
    from eqsat.pipeline import optimize
    from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
    from hwsim import simulate

    hw = bundle.hardware()
    opt = graph
    if bundle.stats.get("optimized", True):
        opt = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph
    compiled = compile_graph(opt, hw)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    return result.report.cycles, compiled.results(result.outputs)
