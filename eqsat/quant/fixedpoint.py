"""Fixed-point requantization: the integer reference the interpreter and hwsim share.

One integer semantics, everywhere (reference interpreter, rule checks, hwsim, backend):

- Every real requantization scale becomes (multiplier, shift) once, by
  `multiplier_shift`, when the op is evaluated or lowered (the backend writes the pair
  as the `requantize` instruction's immediates); nothing requantizes in floating
  point, so the result is the same for every scale, not only for scales m / 2**s.
- Integer results saturate to their dtype (i8 or i32): elementwise ops compute
  exactly in int64 and the stored value is clipped, as hwsim stores integers
  (eqsat.ops.unary.saturating, eqsat.interpreter.narrow). The one exception is the
  i32 accumulator of an integer matrix product (qmatmul, qconv2d): it wraps modulo
  2**32, as a hardware adder does; a bias added to it is an elementwise add and
  saturates.
- requantize's result saturates to its dtype (i8, or i32 for a wider result).

tests/quant/test_int_semantics.py draws arbitrary scales, zero points and
accumulators (ties and overflow included) and checks interpreter == hwsim == this
reference bit for bit, on single ops and on small programs simulated end to end.

A real scale `m` (0 < |m| < 2**31) is approximated by `multiplier / 2**shift` with a
31-bit multiplier magnitude (`|multiplier| < 2**31`) and the largest shift <= 62 that
keeps it so, as gemmlowp and TFLite do. Multipliers are signed: a per-channel scale can
be negative where the e-graph folds a float factor into it (a batch norm's scale of
either sign), and both roundings are symmetric, so round(x * -m) = -round(x * m). An i32 accumulator `x` becomes

    q = saturate_i8( round(x * multiplier / 2**shift) + zero_point )

computed exactly in 64-bit integers (|x * multiplier| < 2**62). `round` is one of

    away   halves away from zero (gemmlowp's RoundingDivideByPOT, TFLite's reference)
    even   halves to the even neighbour (Gemmini's accumulator scaling)

This module is the numpy integer reference; hwsim's `requantize` instruction
(hwsim/semantics.py) must agree with it bit for bit (tests/quant/test_fixedpoint.py).
"""

from __future__ import annotations

import numpy as np

ROUNDINGS = ("even", "away")
MAX_SHIFT = 62
MULTIPLIER_LIMIT = 2**31


def multiplier_shift(scale: float) -> tuple[int, int]:
    """(multiplier, shift <= 62) with |multiplier| < 2**31 and multiplier / 2**shift
    closest to `scale`; the multiplier carries the scale's sign.

    A scale of 0 gives (0, 0); |scale| >= 2**31 is clamped to the largest multiplier.
    """
    scale = float(scale)
    if scale != scale:
        raise ValueError(f"a requantization scale must be a number, got {scale}")
    if scale == 0:
        return 0, 0
    sign, mag = (-1, -scale) if scale < 0 else (1, scale)
    shift = MAX_SHIFT
    while shift > 0 and round(mag * 2.0**shift) >= MULTIPLIER_LIMIT:
        shift -= 1
    return sign * min(round(mag * 2.0**shift), MULTIPLIER_LIMIT - 1), shift


def rounding_shift(p: np.ndarray, shift: np.ndarray | int, rounding: str) -> np.ndarray:
    """round(p / 2**shift) in int64 with the given tie rule (shift >= 0, elementwise)."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    p = np.asarray(p, dtype=np.int64)
    shift = np.broadcast_to(np.asarray(shift, dtype=np.int64), p.shape)
    safe = np.maximum(shift, 1)
    half = np.left_shift(np.int64(1), safe - 1)
    if rounding == "away":
        mag = np.right_shift(np.abs(p) + half, safe)
        q = np.where(p < 0, -mag, mag)
    else:
        floor = np.right_shift(p, safe)
        rem = p - np.left_shift(floor, safe)
        up = (rem > half) | ((rem == half) & (floor % 2 == 1))
        q = floor + up
    return np.where(shift == 0, p, q)


def requantize_fixed(
    x: np.ndarray,
    multiplier: np.ndarray | int,
    shift: np.ndarray | int,
    zero_point: int,
    rounding: str,
    lo: int = -128,
    hi: int = 127,
) -> np.ndarray:
    """saturate(round(x * multiplier / 2**shift) + zero_point) to [lo, hi], as int64.

    `multiplier` and `shift` broadcast against x (per-channel: shaped like the last axis).
    """
    p = np.asarray(x, dtype=np.int64) * np.asarray(multiplier, dtype=np.int64)
    q = rounding_shift(p, shift, rounding) + np.int64(zero_point)
    return np.clip(q, lo, hi)


def channel_multipliers(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multipliers, shifts) as int64 arrays shaped like `scales`.

    Signed: a negative scale gives a negative multiplier. A NaN scale counts as 0 (the
    output is the zero point); +-inf as the largest multiplier of that sign.
    """
    flat = np.asarray(scales, dtype=np.float64).reshape(-1)
    limit = float(MULTIPLIER_LIMIT)
    flat = np.nan_to_num(flat, nan=0.0, posinf=limit, neginf=-limit)
    pairs = [multiplier_shift(s) for s in flat]
    mult = np.array([m for m, _ in pairs], dtype=np.int64).reshape(np.shape(scales))
    shift = np.array([s for _, s in pairs], dtype=np.int64).reshape(np.shape(scales))
    return mult, shift
