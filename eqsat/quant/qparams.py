"""The int8 scale and zero point of a calibrated activation range, under a scheme
(asymmetric, symmetric, auto).

Below the quantization pass (passes.py) and the rotation planner (rotation.py), which
both quantize with them.
"""

from __future__ import annotations

import numpy as np

QMIN, QMAX = -128, 127


def activation_qparams(lo: float, hi: float) -> tuple[float, int]:
    """Asymmetric int8: (scale, zero_point) mapping [min(lo, 0), max(hi, 0)] onto
    [-128, 127], real 0 exactly representable. The scale is an f32 value."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo <= 0.0 or not np.isfinite(hi - lo):
        return 1.0, 0
    scale = float(np.float32((hi - lo) / (QMAX - QMIN)))
    if not scale > 0:  # a range too small for f32: any scale represents it
        return 1.0, 0
    zp = int(np.clip(round(QMIN - lo / scale), QMIN, QMAX))
    return scale, zp


SCHEMES = ("asymmetric", "symmetric", "auto")
BALANCED = 0.9  # auto: symmetric when the shorter side reaches 90% of the longer


def symmetric_qparams(lo: float, hi: float) -> tuple[float, int]:
    """Symmetric int8: zero point 0, scale max(|lo|, |hi|) / 127."""
    m = max(-min(lo, 0.0), max(hi, 0.0))
    scale = float(np.float32(m / QMAX)) if np.isfinite(m) else 0.0
    return (scale, 0) if scale > 0 else (1.0, 0)


def choose_qparams(lo: float, hi: float, scheme: str = "asymmetric") -> tuple[float, int]:
    """(scale, zero point) of a calibrated range under `scheme`. `auto` is symmetric for
    a balanced range (its steps at most 1/0.9 = 11% coarser, about 0.9 dB; a zero point
    of 0 drops the kernel's Z * colsum(w) correction) and asymmetric for a skewed one
    (post-ReLU/GELU/SiLU: up to twice the resolution)."""
    if scheme == "symmetric":
        return symmetric_qparams(lo, hi)
    if scheme == "auto":
        neg, pos = -min(lo, 0.0), max(hi, 0.0)
        if max(neg, pos) > 0 and min(neg, pos) >= BALANCED * max(neg, pos):
            return symmetric_qparams(lo, hi)
    return activation_qparams(lo, hi)
