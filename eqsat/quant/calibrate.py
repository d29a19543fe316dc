"""Calibration: the ranges activations take on sample inputs.

A calibration file (`--calibrate FILE.npz`) holds arrays by name:

- each model input, either one sample (exactly the input's shape) or several stacked
  on a leading sample axis (shape [N, *input shape]); all inputs must agree on N;
- optionally params by name: the weights to quantize (else the seeded values that
  `eqsat run/simulate --seed 0` use).

Without a file, the samples are seeded random inputs (standard normal, seeds 1..N;
`eqsat simulate` feeds seed 0, so calibration never sees the evaluation input) and the
caller warns that the ranges are not from real data.

Ranges (eqsat/quant/calibration_methods.py): `minmax` takes the smallest and largest
value over all samples; `percentile` takes the P-th and (100-P)-th percentiles (P =
99.99 by default), which ignores rare outliers at the price of saturating them; `mse`
clips where the expected quantization error is least; `entropy` is TensorRT's KL
calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from eqsat.errors import UserError
from eqsat.interpreter import check_binding, evaluate_nodes, random_inputs
from eqsat.ir.graph import Graph
from eqsat.quant.calibration_methods import METHODS, choose_range

DEFAULT_PERCENTILE = 99.99
RANDOM_SAMPLES = 4


class CalibrationError(UserError):
    """A calibration file or option that cannot be used."""


def calibration_samples(
    graph: Graph, arrays: Mapping[str, np.ndarray] | None, where: str = "", seed: int = 0
) -> list[dict[str, np.ndarray]]:
    """Input bindings, one dict per sample (inputs only; params are bound separately)."""
    inputs = {str(n.attr("name")): n.type for _, n in graph.inputs}
    if arrays is None:
        return [random_inputs(graph, seed + 1 + k) for k in range(RANDOM_SAMPLES)]
    where = where or "calibration file"
    missing = [name for name in inputs if name not in arrays]
    if missing:
        raise CalibrationError(f"{where}: no values for input(s) {', '.join(missing)}")
    counts: dict[str, int] = {}
    stacked: dict[str, np.ndarray] = {}
    for name, t in inputs.items():
        value = np.asarray(arrays[name])
        if tuple(value.shape) == t.shape:
            value = value[None]
        elif value.ndim != len(t.shape) + 1 or tuple(value.shape[1:]) != t.shape:
            dims = ", ".join(map(str, t.shape))
            raise CalibrationError(
                f"{where}: '{name}' must have shape [{dims}] or [N, {dims}] (N samples), "
                f"got [{', '.join(map(str, value.shape))}]"
            )
        counts[name], stacked[name] = value.shape[0], value
    if len(set(counts.values())) > 1:
        text = ", ".join(f"{k}: {n}" for k, n in counts.items())
        raise CalibrationError(f"{where}: inputs have different sample counts ({text})")
    n = next(iter(counts.values()), 1)
    if n < 1:
        raise CalibrationError(f"{where}: no samples")
    return [
        {k: check_binding(k, v[i], inputs[k], where) for k, v in stacked.items()} for i in range(n)
    ]


def observed_values(
    graph: Graph,
    nodes: Sequence[int],
    samples: Sequence[Mapping[str, np.ndarray]],
    params: Mapping[str, np.ndarray],
) -> dict[int, np.ndarray]:
    """Each node's values over the samples, as rows of its last axis ([rows, channels],
    f32; a rank-0 value is one row of one channel)."""
    seen: dict[int, list[np.ndarray]] = {j: [] for j in nodes}
    for sample in samples:
        values = evaluate_nodes(graph, {**params, **sample})
        for j in nodes:
            v = np.asarray(values[j], dtype=np.float32)
            seen[j].append(v.reshape(-1, v.shape[-1] if v.ndim else 1))
    return {j: np.concatenate(parts) for j, parts in seen.items()}


def check_method(method: str, percentile: float) -> None:
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration '{method}'; use one of {', '.join(METHODS)}")
    if not 50.0 < percentile <= 100.0:
        raise CalibrationError(f"--percentile must be in (50, 100], got {percentile}")


def range_of(values: np.ndarray, method: str, percentile: float) -> tuple[float, float]:
    """The calibrated (lo, hi) of observed values (non-finite values ignored)."""
    data = np.asarray(values, dtype=np.float32).reshape(-1)
    return choose_range(data[np.isfinite(data)], method, percentile)


def observe_ranges(
    graph: Graph,
    nodes: Sequence[int],
    samples: Sequence[Mapping[str, np.ndarray]],
    params: Mapping[str, np.ndarray],
    method: str = "minmax",
    percentile: float = DEFAULT_PERCENTILE,
) -> dict[int, tuple[float, float]]:
    """(lo, hi) of each node's values over the samples."""
    check_method(method, percentile)
    values = observed_values(graph, nodes, samples, params)
    return {j: range_of(v, method, percentile) for j, v in values.items()}
