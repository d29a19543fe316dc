"""How a calibrated activation's int8 range is chosen from the values it took.

- `minmax`: the smallest and largest value: nothing saturates, but one outlier widens
  every step.
- `percentile`: the P-th and (100-P)-th percentiles: rare outliers saturate.
- `mse`: the clipping range that minimizes the expected squared quantization error
  over a 2048-bin histogram of the values: values inside the range cost step^2 / 12
  (uniform rounding noise), values outside cost their squared distance to the clip.
  Both ends shrink independently (an asymmetric range), on a grid of 128 fractions
  each.
- `entropy`: TensorRT's calibration: over a 2048-bin histogram of |x|, the threshold
  T (a bin edge from 128 bins up) whose 128-level quantization Q of the clipped
  distribution P (outliers folded into P's last bin) has the smallest KL(P || Q);
  the range is [max(lo, -T), min(hi, T)]. Exact zeros are left out of the histogram:
  0 is exact on the int8 grid, and a ReLU's spike there (half the values) would
  otherwise outweigh the tail and clip at under 2 sigma.

All four are vectorized numpy over one histogram: every candidate range is priced at
once (a [candidates, bins] array), so calibrating a 5 M-value tensor takes
milliseconds.
"""

from __future__ import annotations

import numpy as np

METHODS = ("minmax", "percentile", "mse", "entropy")
BINS = 2048
LEVELS = 255  # int8 steps between the ends of an asymmetric range
ENTROPY_LEVELS = 128  # TensorRT: a symmetric range quantized to 128 levels per side
MSE_GRID = 128
KL_EPS = 1e-4


def choose_range(data: np.ndarray, method: str, percentile: float = 99.99) -> tuple[float, float]:
    """(lo, hi) of `data` (finite values, any shape) under `method`."""
    data = np.asarray(data, dtype=np.float32).reshape(-1)
    if data.size == 0:
        return 0.0, 0.0
    lo, hi = float(data.min()), float(data.max())
    if method == "minmax" or lo == hi:
        return lo, hi
    if method == "percentile":
        plo, phi = np.percentile(data, [100.0 - percentile, percentile])
        return float(plo), float(phi)
    if method == "mse":
        return mse_range(data, lo, hi)
    if method == "entropy":
        t = entropy_threshold(data)
        return max(lo, -t), min(hi, t)
    raise ValueError(f"unknown calibration method '{method}'")


def quantization_mse(
    centers: np.ndarray, counts: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Expected squared error per candidate range (lo[i], hi[i]) over a histogram (bin
    centers, counts): step^2 / 12 inside the range (each end extended to include 0, as
    the quantizer does), the squared distance to the nearer end outside. Prefix sums of
    n, n*c and n*c^2 price each candidate in O(1)."""
    centers = np.asarray(centers, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    lo = np.minimum(np.asarray(lo, dtype=np.float64), 0.0)
    hi = np.maximum(np.asarray(hi, dtype=np.float64), 0.0)
    n0, n1, n2 = (np.concatenate([[0.0], np.cumsum(counts * centers**k)]) for k in range(3))
    below = np.searchsorted(centers, lo, side="left")  # bins [0, below) lie under lo
    above = np.searchsorted(centers, hi, side="right")  # bins [above, n) lie over hi
    under = n2[below] - 2 * lo * n1[below] + lo**2 * n0[below]
    over = (n2[-1] - n2[above]) - 2 * hi * (n1[-1] - n1[above]) + hi**2 * (n0[-1] - n0[above])
    inside = n0[above] - n0[below]
    step = (hi - lo) / LEVELS
    return (under + over + inside * step**2 / 12.0) / max(float(n0[-1]), 1.0)


def mse_range(data: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """The (lo', hi') between 0 (or the nearer end, when 0 is outside [lo, hi]) and
    (lo, hi) minimizing the histogram's expected quantization error."""
    counts, edges = np.histogram(data, bins=BINS, range=(lo, hi))
    centers = (edges[:-1] + edges[1:]) / 2.0
    fractions = np.linspace(1.0 / MSE_GRID, 1.0, MSE_GRID)
    anchor = min(max(0.0, lo), hi)
    los = anchor + (lo - anchor) * fractions
    his = anchor + (hi - anchor) * fractions
    cand_lo = np.repeat(los, MSE_GRID)
    cand_hi = np.tile(his, MSE_GRID)
    err = quantization_mse(centers, counts, cand_lo, cand_hi)
    best = int(np.argmin(err))
    return float(cand_lo[best]), float(cand_hi[best])


def kl_divergences(hist: np.ndarray, levels: int = ENTROPY_LEVELS) -> np.ndarray:
    """KL(P_i || Q_i) for every cut i in [levels, len(hist)]: P_i = hist[:i] with the
    counts beyond i added to its last bin; Q_i = hist[:i] merged into `levels` groups
    of consecutive bins and spread back evenly over each group's nonzero bins. Entry k
    is cut levels + k."""
    hist = np.asarray(hist, dtype=np.float64)
    n = hist.size
    cuts = np.arange(levels, n + 1)
    j = np.arange(n)
    live = j[None, :] < cuts[:, None]  # [cuts, bins]
    # bin j of cut i is in group floor(j * levels / i): groups are runs of bins
    group = np.minimum((j[None, :] * levels) // cuts[:, None], levels - 1)
    starts = -((-np.arange(levels + 1)[None, :] * cuts[:, None]) // levels)  # ceil(k i / L)
    counts = np.concatenate([[0.0], np.cumsum(hist)])
    filled = np.concatenate([[0.0], np.cumsum(hist > 0)])
    sums = counts[starts[:, 1:]] - counts[starts[:, :-1]]
    nonzero = filled[starts[:, 1:]] - filled[starts[:, :-1]]
    per_bin = sums / np.maximum(nonzero, 1.0)
    q = np.where(live & (hist[None, :] > 0), np.take_along_axis(per_bin, group, axis=1), 0.0)
    p = np.where(live, hist[None, :], 0.0)
    p[np.arange(cuts.size), cuts - 1] += counts[-1] - counts[cuts]  # the outliers
    p = p / np.maximum(p.sum(axis=1, keepdims=True), 1e-300)
    q = q / np.maximum(q.sum(axis=1, keepdims=True), 1e-300)
    # P's last bin may hold outliers where Q is 0 (an empty bin): a finite penalty
    q = np.where((p > 0) & (q == 0), KL_EPS, q)
    ratio = np.where(p > 0, p / np.where(q > 0, q, 1.0), 1.0)
    return (p * np.log(ratio)).sum(axis=1)


def entropy_threshold(data: np.ndarray, bins: int = BINS, levels: int = ENTROPY_LEVELS) -> float:
    """TensorRT's threshold: the |x| cut whose clipped distribution loses the least
    information (KL) when quantized to `levels` levels."""
    mags = np.abs(np.asarray(data, dtype=np.float32).reshape(-1))
    mags = mags[mags != 0.0]  # exact on the int8 grid: no information lost there
    top = float(mags.max()) if mags.size else 0.0
    if top == 0.0:
        return 0.0
    hist, edges = np.histogram(mags, bins=bins, range=(0.0, top))
    kl = kl_divergences(hist, levels)
    cut = levels + int(np.argmin(kl))
    return float(edges[cut])
