"""Which int8 activations to rotate (`--rotate auto|none|all`; QuaRot / SpinQuant).

A matmul x @ w equals hadamard(x) @ (H^T w) (eqsat/ops/rotation.py). Where x has
heavy tails - SwiGLU's gated product silu(x Wg) * (x Wu), a product of two Gaussians,
whose maximum over a million elements is many sigma - one per-tensor int8 scale
spends its range on rare outliers; x H sums `block` elements per output and has
near-Gaussian tails. The pass writes matmul(observe(hadamard(x)), H^T w): H^T w is a
compile-time term, seeded as a param with its int8 form, and the rotation runs online
as a small block matmul (priced by the cost model like any kernel). The exact rules of
rules/rotation.rules give extraction the unrotated form as well.

`auto` measures each candidate on the calibration values: the SQNR of the activation
quantized at its calibrated range (the same method and scheme as the pass), as
written and rotated, and rotates where the gain is at least MIN_GAIN_DB.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.ir.types import DType
from eqsat.ops.rotation import hadamard
from eqsat.quant.calibrate import range_of
from eqsat.quant.qparams import QMAX, QMIN, choose_qparams
from eqsat.quant.sqnr import sqnr_db

MODES = ("auto", "none", "all")
MIN_GAIN_DB = 1.0  # auto: rotate where int8 quantization of the activation gains this much
MAX_BLOCK = 128  # a 128-wide rotation: tails near Gaussian, 128 MACs per element
MIN_BLOCK = 16  # smaller blocks spread outliers too little to be worth a kernel


@dataclass(frozen=True)
class Rotation:
    """One rotation candidate: an activation read by quantized matmuls."""

    act: int  # the activation's node
    label: str
    block: int
    plain_db: float  # SQNR of the activation's int8 form, as written
    rotated_db: float  # ... and rotated
    chosen: bool
    rotated_range: tuple[float, float]  # the calibrated range of the rotated activation

    @property
    def gain_db(self) -> float:
        return self.rotated_db - self.plain_db


def rotation_block(k: int, max_block: int = MAX_BLOCK) -> int | None:
    """The largest power of two dividing k, at most max_block; None under MIN_BLOCK."""
    block = k & -k if k > 0 else 0
    block = min(block, max_block)
    return block if block >= MIN_BLOCK else None


def int8_sqnr(values: np.ndarray, lo: float, hi: float, scheme: str) -> float:
    """SQNR (dB) of values quantized to int8 at the range (lo, hi) under `scheme`."""
    scale, zp = choose_qparams(lo, hi, scheme)
    q = np.clip(np.round(values / np.float32(scale)) + zp, QMIN, QMAX)
    return sqnr_db(values.reshape(-1), ((q - zp) * np.float32(scale)).reshape(-1))


def plan_rotations(
    graph: Graph,
    acts: Collection[int],
    values: Mapping[int, np.ndarray],
    mode: str,
    method: str,
    percentile: float,
    scheme: str,
    label,
) -> list[Rotation]:
    """The candidates among `acts` (f32 of rank >= 2 whose last axis has a power-of-two
    factor >= MIN_BLOCK) with their measured SQNRs; `chosen` per `mode`. `values[j]`:
    j's calibration values as [rows, K]."""
    if mode not in MODES:
        raise ValueError(f"unknown rotation mode '{mode}'; use one of {', '.join(MODES)}")
    out = []
    for j in sorted(acts):
        t = graph.nodes[j].type
        block = rotation_block(t.shape[-1]) if t.rank >= 2 else None
        if mode == "none" or block is None or t.dtype is not DType.F32 or j not in values:
            continue
        v = np.asarray(values[j], dtype=np.float32)
        r = hadamard(v, block)
        plain = int8_sqnr(v, *range_of(v, method, percentile), scheme)
        rotated_range = range_of(r, method, percentile)
        rotated = int8_sqnr(r, *rotated_range, scheme)
        chosen = mode == "all" or rotated - plain >= MIN_GAIN_DB
        out.append(Rotation(j, label(graph, j), block, plain, rotated, chosen, rotated_range))
    return out
