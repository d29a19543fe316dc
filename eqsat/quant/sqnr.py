"""Signal-to-quantization-noise ratio of a result against its float reference."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """10 log10(sum ref^2 / sum (ref - approx)^2) in dB; inf when they are equal."""
    r = np.asarray(reference, dtype=np.float64)
    a = np.asarray(approx, dtype=np.float64)
    noise = float(np.sum((r - a) ** 2))
    signal = float(np.sum(r**2))
    if noise == 0.0:
        return float("inf")
    if signal == 0.0:
        return float("-inf")
    return 10.0 * float(np.log10(signal / noise))


def sqnr_by_output(
    reference: Mapping[str, np.ndarray], approx: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """SQNR of each output present in both, over all samples given (stacked)."""
    return {name: sqnr_db(reference[name], approx[name]) for name in reference if name in approx}


def format_sqnr(sqnr: Mapping[str, float]) -> str:
    """SQNR per output for a summary line: `probs 43.0 dB, ...`."""
    return ", ".join(f"{k} {v:.1f} dB" for k, v in sqnr.items())


def json_sqnr(sqnr: Mapping[str, float]) -> dict[str, float | None]:
    """JSON has no infinity: an exact output (inf dB) is written as null."""
    return {k: (round(v, 3) if math.isfinite(v) else None) for k, v in sqnr.items()}
