"""SmoothQuant: migrate activation outliers into the weights (`--smooth-alpha A`).

A matmul x @ w equals (x * (1/s)) @ (s * w) for any positive per-input-channel factor
s. Choosing s_j = max|x_j|^A / max|w_j|^(1-A) (max over calibration samples for x's
channel j, over row j of w, and over every matmul reading x) flattens x's outlier
channels (A = 1 moves everything into the weights, 0 nothing; 0.5 splits it), so one
per-tensor activation scale fits all channels; the weights, quantized per output
column, absorb the factor row-wise.

The pass (eqsat/quant/passes.py) writes the identity into the model as exact algebra:
matmul(observe(mul(x, inv)), mul(s, w)) with `inv` = 1/s ([K]) and `s` ([K, 1]) new
params. The weight side is a compile-time product: the quantized weights the rules
build from mul(s, w) are seeded params. The activation side folds into x's producer
by the exact rules of rules/quant.rules (section "smoothing"), so no kernel is added:

- rmsnorm(x, g) * inv = rmsnorm(x, g * inv), layernorm likewise (gamma and beta);
- a gated product a * matmul(y, v) (SwiGLU's silu(g) * u, the down projection's input,
  the outlier case): (a * (y @ v)) * inv = a * (y @ (v * inv)), the factor folded into
  the up projection's columns (whose per-column int8 scales absorb it exactly).

Only activations with such a producer are smoothed; the products g * inv, v * inv
(and their quantized forms) are seeded params like the quantized weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.ir.types import DType

FACTOR_RANGE = (1e-4, 1e4)  # s is clipped here: a dead channel must not blow up 1/s


@dataclass(frozen=True)
class SmoothGroup:
    """One smoothed activation: the matmuls reading it and how 1/s folds away."""

    act: int  # node of the activation (every matmul in `matmuls` reads it)
    matmuls: tuple[int, ...]
    fold: str  # "rmsnorm", "layernorm" or "gated"
    norm_params: tuple[int, ...]  # rmsnorm/layernorm: gamma (and beta) param nodes
    gated_matmul: int  # "gated": the up projection matmul(y, v) whose columns take 1/s
    factor: np.ndarray  # s, [K] float32


def _param_vector(graph: Graph, j: int, k: int, params: Mapping[str, np.ndarray]) -> bool:
    node = graph.nodes[j]
    return (
        node.op == "param"
        and node.type.shape == (k,)
        and node.type.dtype is DType.F32
        and str(node.attr("name")) in params
    )


def fold_of(
    graph: Graph, j: int, params: Mapping[str, np.ndarray]
) -> tuple[str, tuple[int, ...], int] | None:
    """(fold, norm params, gated matmul) when 1/s can fold into node j's producer."""
    node = graph.nodes[j]
    k = node.type.shape[-1]
    if node.op == "rmsnorm" and _param_vector(graph, node.inputs[1], k, params):
        return "rmsnorm", (node.inputs[1],), -1
    if node.op == "layernorm" and all(_param_vector(graph, p, k, params) for p in node.inputs[1:3]):
        return "layernorm", tuple(node.inputs[1:3]), -1
    if node.op == "mul" and node.type.rank >= 2:
        for m in reversed(node.inputs):  # the rules' mul-assoc reaches the right operand
            mn = graph.nodes[m]
            if mn.op != "matmul" or mn.type.shape != node.type.shape:
                continue
            w = graph.nodes[mn.inputs[1]]
            if w.op == "param" and w.type.rank == 2 and str(w.attr("name")) in params:
                return "gated", (), m
    return None


def smoothing_factor(x_absmax: np.ndarray, w_absmax: np.ndarray, alpha: float) -> np.ndarray:
    """s_j = max|x_j|^alpha / max|w_j|^(1 - alpha), 1 where a channel is all zero."""
    x_absmax = np.asarray(x_absmax, dtype=np.float64)
    w_absmax = np.asarray(w_absmax, dtype=np.float64)
    live = (x_absmax > 0) & (w_absmax > 0)
    s = np.ones_like(x_absmax)
    s[live] = x_absmax[live] ** alpha / w_absmax[live] ** (1.0 - alpha)
    return np.clip(s, *FACTOR_RANGE).astype(np.float32)


def plan_smoothing(
    graph: Graph,
    matmuls: Sequence[int],
    values: Mapping[int, np.ndarray],
    params: Mapping[str, np.ndarray],
    alpha: float,
) -> list[SmoothGroup]:
    """The activations worth smoothing (a foldable producer, every reader among
    `matmuls`) with their factors; `values[j]`: j's calibration values as [rows, K]."""
    readers: dict[int, list[int]] = {}
    for i in matmuls:
        readers.setdefault(graph.nodes[i].inputs[0], []).append(i)
    groups = []
    for j, mms in sorted(readers.items()):
        fold = fold_of(graph, j, params)
        if fold is None or j not in values:
            continue
        x_absmax = np.abs(values[j]).max(axis=0)
        w_absmax = np.max(
            [
                np.abs(
                    np.asarray(params[str(graph.nodes[graph.nodes[i].inputs[1]].attr("name"))])
                ).max(axis=1)
                for i in mms
            ],
            axis=0,
        )
        s = smoothing_factor(x_absmax, w_absmax, alpha)
        groups.append(SmoothGroup(j, tuple(mms), fold[0], fold[1], fold[2], s))
    return groups
