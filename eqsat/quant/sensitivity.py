"""How much each layer's precision costs in accuracy (for `--quantize auto`).

A layer's quantized output is computed from the numbers its kernel would use (fake
quantization: the int8 / e4m3 / int4 / bf16 values in f32 arithmetic), and the model
is evaluated again only downstream of the layers that changed, from the reference
values of everything else. Noise is relative noise power: sum (got - ref)^2 / sum ref^2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import ml_dtypes
import numpy as np

from eqsat.interpreter import _evaluate_node, evaluate_nodes, narrow
from eqsat.ir.graph import Graph
from eqsat.ir.types import DType
from eqsat.ops import REGISTRY
from eqsat.quant.passes import QuantPlan
from eqsat.quant.weight_only import DEFAULT_GROUP, DEFAULT_SCALE_DTYPE
from eqsat.quant.weight_only import SCHEMES as WEIGHT_ONLY
from hwsim.wq import dequantize


def predicted_sqnr(sensitivities: Sequence[float]) -> float:
    """End-to-end SQNR of several quantized layers: their noise powers add."""
    noise = sum(10.0 ** (-s / 10.0) for s in sensitivities if math.isfinite(s))
    return math.inf if noise == 0.0 else -10.0 * math.log10(noise)


def fake_weight(w: np.ndarray, conv: bool) -> np.ndarray:
    """w rounded to symmetric int8 per output channel (a matmul's columns, a conv's
    first axis) and scaled back, as quantize-matmul/-conv2d build it."""
    w = np.asarray(w, dtype=np.float32)
    axes = (1, 2, 3) if conv else (0,)
    ws = np.abs(w).max(axis=axes, keepdims=True) / np.float32(127.0)
    ws = np.where(ws > 0, ws, np.float32(1.0))
    return (np.clip(np.rint(w / ws), -127, 127) * ws).astype(np.float32)


def bf16_round(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def weight_only_weight(w: np.ndarray, precision: str) -> np.ndarray:
    """w as a weight-only scheme stores it (group scales of DEFAULT_GROUP rows), in f32."""
    from eqsat.ops.weight_only import group_scales, quantize_weights

    scheme = WEIGHT_ONLY[precision]
    w = np.asarray(w, dtype=np.float32)
    if scheme.bits == 16:
        return bf16_round(w)
    stored = quantize_weights(w, DEFAULT_GROUP, scheme.bits, scheme.fmt, DEFAULT_SCALE_DTYPE)
    scales = group_scales(w, DEFAULT_GROUP, scheme.bits, scheme.fmt, DEFAULT_SCALE_DTYPE)
    scales = scales.astype(np.float32)
    return dequantize(stored, scales, scheme.bits, DEFAULT_GROUP, 0, scheme.fmt)


def relative_noise(ref: np.ndarray, got: np.ndarray) -> float:
    r = np.asarray(ref, dtype=np.float64)
    noise = float(np.sum((r - np.asarray(got, dtype=np.float64)) ** 2))
    signal = float(np.sum(r * r))
    if noise == 0.0:
        return 0.0
    return math.inf if signal == 0.0 else noise / signal


class FakeQuant:
    """The model on one sample, with chosen layers at chosen precisions."""

    def __init__(
        self,
        graph: Graph,
        full: QuantPlan,
        params: Mapping[str, np.ndarray],
        sample: Mapping[str, np.ndarray],
        act: str = "bf16",
    ) -> None:
        self.graph, self.full, self.act = graph, full, act
        self.bindings = {**params, **sample}
        self.ref = evaluate_nodes(graph, self.bindings)
        self.outputs = [name for name, _ in graph.outputs]
        self._out_nodes = [i for _, i in graph.outputs]
        self._live = graph.live()

    def weight(self, i: int, precision: str) -> np.ndarray:
        """Layer i's weight as `precision` stores it (computed each time: caching every
        layer's fake weights at every precision would hold several copies of a big
        model's weights)."""
        w = self.ref[self.graph.nodes[i].inputs[1]]
        if precision == "int8":
            return fake_weight(w, i in self.full.conv_nodes)
        return weight_only_weight(w, precision)

    def layer_output(self, i: int, x: np.ndarray, precision: str) -> np.ndarray:
        """Layer i's output from input x with its weight and input at `precision`."""
        node = self.graph.nodes[i]
        if precision == "int8":
            scale, zp = self.full.act_qparams[node.inputs[0]]
            attrs = {"scale": scale, "zero_point": zp}
            q = REGISTRY["quantize"].ref([x], {**attrs, "dtype": "i8"})
            x = REGISTRY["dequantize"].ref([narrow(q, DType.I8)], attrs).astype(np.float32)
        elif precision == "bf16" or self.act == "bf16":
            x = bf16_round(x)
        w = self.weight(i, precision)
        return narrow(node.opdef.ref([x, w], node.attr_dict), node.type.dtype)

    def local_noise(self, layers: Sequence[int], precision: str) -> float:
        """Relative noise at the layers' own outputs (their real inputs)."""
        noise = signal = 0.0
        for i in layers:
            ref = np.asarray(self.ref[i], dtype=np.float64)
            got = self.layer_output(i, self.ref[self.graph.nodes[i].inputs[0]], precision)
            noise += float(np.sum((ref - got) ** 2))
            signal += float(np.sum(ref * ref))
        return 0.0 if noise == 0.0 else (math.inf if signal == 0.0 else noise / signal)

    def output_noise(self, assigned: Mapping[int, str]) -> list[float]:
        """Each output's relative noise with the `assigned` layers at their precisions,
        the model evaluated downstream of them only."""
        if not assigned:
            return [0.0] * len(self.outputs)
        values = list(self.ref)
        dirty = [False] * len(values)
        for i, node in self.graph:
            if i < min(assigned) or not self._live[i]:
                continue
            if i in assigned:
                values[i] = self.layer_output(i, values[node.inputs[0]], assigned[i])
                dirty[i] = True
            elif any(dirty[j] for j in node.inputs):
                values[i] = _evaluate_node(node, values, self.bindings, self.graph.constants)
                dirty[i] = True
        return [relative_noise(self.ref[i], values[i]) for i in self._out_nodes]

    def gains(self, layers: Sequence[int], probe: str) -> tuple[float, ...]:
        """Per output: output noise / noise at the layers' outputs, measured with the
        layers at `probe`."""
        local = self.local_noise(layers, probe)
        out = self.output_noise({i: probe for i in layers})
        return tuple(n / local if local > 0 and math.isfinite(n) else 0.0 for n in out)

    def sqnr(self, assigned: Mapping[int, str]) -> dict[str, float]:
        """Each output's SQNR (dB) with the `assigned` layers at their precisions."""
        return {
            name: (math.inf if n == 0.0 else -10.0 * math.log10(n))
            for name, n in zip(self.outputs, self.output_noise(assigned), strict=True)
        }
