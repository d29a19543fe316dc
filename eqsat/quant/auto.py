"""Mixed precision under an accuracy budget (`--quantize auto --sqnr-min DB`).

Each quantizable layer (matmul or conv with a param weight; the layers reading one
input, such as Q, K and V, as one group, since the rules quantize by input) is
measured alone: the model is evaluated with only that layer in int8 (its input quantized and dequantized
at its calibrated scale, its weight rounded to int8 per output channel, exactly the
numbers the int8 kernel uses), and the worst output's SQNR against the float model is
the layer's sensitivity. Quantization noise from different layers is roughly
independent, so noise powers add: a set of int8 layers predicts an end-to-end SQNR of
-10 log10(sum 10^(-sensitivity/10)). Layers sharing an input share its quantization
noise, which adds in amplitude, so the chosen set is then evaluated as a whole and
trimmed until that measurement meets the budget (`confirm`). Each layer's saving is the cost model's price of
its float kernel minus that of its int8 kernel and the quantize of its input
(eqsat/costs.py, the prices extraction uses).

The choice is greedy by saving per unit of noise: layers join the int8 set, best
ratio first, while the prediction stays at or above the budget. The chosen layers are
then planned as `--quantize int8` plans all of them (observe annotations, seeded
int8 weights); extraction still decides, layer by layer, whether int8 pays on the
target. The others stay float.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.costs import op_cost
from eqsat.interpreter import evaluate
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.quant.sqnr import sqnr_db
from hwsim.hardware import Hardware


@dataclass(frozen=True)
class LayerChoice:
    """One quantizable layer: what int8 would cost in accuracy and save in cycles."""

    node: int  # the matmul or conv2d (the first of `nodes`)
    weight: str  # its weight param (the group's, comma-separated)
    sensitivity_db: float  # worst output SQNR with only this layer (group) in int8
    float_cycles: int
    int8_cycles: int
    int8: bool = False
    nodes: tuple[int, ...] = ()  # every layer of the group: they share one input

    @property
    def layers(self) -> tuple[int, ...]:
        return self.nodes or (self.node,)

    @property
    def saved_cycles(self) -> int:
        return self.float_cycles - self.int8_cycles


def predicted_sqnr(sensitivities: Sequence[float]) -> float:
    """End-to-end SQNR of several int8 layers: their noise powers add."""
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


def layers_int8(
    graph: Graph,
    layers: Mapping[int, tuple[float, int]],
    weights: Mapping[int, np.ndarray],
) -> tuple[Graph, dict[str, np.ndarray]]:
    """`graph` with the given layers computed from int8 values: each one's input through
    quantize/dequantize at its (scale, zero point), its weight a new param holding the
    int8-rounded values (returned by name). Layers sharing an input share its
    quantization, as the int8 program does."""
    b = GraphBuilder(graph.name, graph.dims)
    b.graph.constants = dict(graph.constants)
    names = {str(n.attr("name")) for _, n in graph.inputs + graph.params}
    new: dict[int, int] = {}
    fq: dict[int, int] = {}
    values: dict[str, np.ndarray] = {}
    for i, node in graph:
        inputs = [new[j] for j in node.inputs]
        if i in layers:
            x = node.inputs[0]
            if x not in fq:
                scale, zp = layers[i]
                attrs = {"scale": scale, "zero_point": zp}
                q = b.add("quantize", (inputs[0],), {**attrs, "dtype": "i8"})
                fq[x] = b.add("dequantize", (q,), attrs)
            inputs[0] = fq[x]
            wname, k = f"int8_weight{i}", 1
            while wname in names:
                wname, k = f"int8_weight{i}.{k}", k + 1
            names.add(wname)
            values[wname] = weights[i]
            inputs[1] = b.leaf("param", wname, TensorType(DType.F32, weights[i].shape))
        new[i] = b.add(node.op, inputs, node.attr_dict, node.name)
    for name, i in graph.outputs:
        b.output(name, new[i])
    return b.graph, values


def layer_cycles(hw: Hardware, graph: Graph, layer: int) -> tuple[int, int]:
    """(float kernel, int8 kernel + input quantize) cycles of one layer, as priced
    for extraction; (0, 0) when the cost model cannot price either."""
    node = graph.nodes[layer]
    x, w = (graph.nodes[j].type for j in node.inputs)
    fl = op_cost(hw, node.op, [x, w], node.type, node.attr_dict)
    xq, wq = x.with_dtype(DType.I8), w.with_dtype(DType.I8)
    quant = op_cost(hw, "quantize", [x], xq, {"scale": 1.0, "zero_point": 0, "dtype": "i8"})
    if node.op == "matmul":
        n = w.shape[1]
        ins = [xq, wq, TensorType(DType.I32, (n,)), TensorType(DType.F32, (1, n))]
        q8 = op_cost(hw, "qmatmul_bias_dequant", ins, node.type, {"a_zero": 0})
    else:
        attrs = {k: v for k, v in node.attr_dict.items() if k in ("stride", "padding")}
        q8 = op_cost(hw, "qconv2d", [xq, wq], node.type.with_dtype(DType.I32), attrs)
    if fl is None or q8 is None or quant is None:
        return 0, 0
    return int(fl.cycles), int(q8.cycles + quant.cycles)


class FakeQuant:
    """Evaluates the model with chosen layers in int8 (fake quantization: the int8
    values in f32 arithmetic) against the float model, on one input."""

    def __init__(
        self,
        graph: Graph,
        convs: set[int],
        qparams: Mapping[int, tuple[float, int]],
        params: Mapping[str, np.ndarray],
        inputs: Mapping[str, np.ndarray],
    ) -> None:
        self.graph, self.convs, self.qparams = graph, convs, qparams
        self.params, self.inputs = params, inputs
        self.ref = evaluate(graph, {**params, **inputs})
        self._weights: dict[int, np.ndarray] = {}

    def weight(self, i: int) -> np.ndarray:
        if i not in self._weights:
            w = self.graph.nodes[self.graph.nodes[i].inputs[1]]
            self._weights[i] = fake_weight(self.params[str(w.attr("name"))], i in self.convs)
        return self._weights[i]

    def sqnr(self, layers: Sequence[int]) -> float:
        """Worst output SQNR with `layers` in int8."""
        if not layers:
            return math.inf
        chosen = {i: self.qparams[self.graph.nodes[i].inputs[0]] for i in layers}
        variant, values = layers_int8(self.graph, chosen, {i: self.weight(i) for i in layers})
        got = evaluate(variant, {**self.params, **self.inputs, **values})
        return min(sqnr_db(self.ref[k], got[k]) for k in self.ref)


def confirm(
    choices: Sequence[LayerChoice], fake: FakeQuant, sqnr_min: float, rounds: int = 8
) -> list[LayerChoice]:
    """The greedy choice, checked by evaluating all chosen layers together (noise from
    layers sharing an input adds in amplitude, not power, so the sum can be
    optimistic); while the measurement misses the budget, the chosen layers with the
    least saving per noise go back to f32, as many as the shortfall predicts."""
    choices = list(choices)

    def noise(c: LayerChoice) -> float:
        return 10.0 ** (-c.sensitivity_db / 10.0) if math.isfinite(c.sensitivity_db) else 0.0

    for _ in range(rounds):
        chosen = [c for c in choices if c.int8]
        measured = fake.sqnr([i for c in chosen for i in c.layers])
        if measured >= sqnr_min or not chosen:
            break
        excess = 10.0 ** ((sqnr_min - measured) / 10.0)  # measured noise / budget noise
        total = sum(noise(c) for c in chosen)
        keep_noise = total / excess
        dropped: set[int] = set()
        for c in sorted(chosen, key=lambda c: c.saved_cycles / max(noise(c), 1e-30)):
            if total <= keep_noise and dropped:
                break
            total -= noise(c)
            dropped.add(c.node)
        choices = [
            LayerChoice(
                c.node,
                c.weight,
                c.sensitivity_db,
                c.float_cycles,
                c.int8_cycles,
                c.int8 and c.node not in dropped,
                c.nodes,
            )
            for c in choices
        ]
    return choices


def choose_layers(choices: Sequence[LayerChoice], sqnr_min: float) -> list[LayerChoice]:
    """The choices with `int8` set on the layers the budget affords, greedy by cycles
    saved per unit of noise."""

    def ratio(c: LayerChoice) -> float:
        noise = 10.0 ** (-c.sensitivity_db / 10.0) if math.isfinite(c.sensitivity_db) else 0.0
        return math.inf if noise == 0.0 else c.saved_cycles / noise

    picked: list[float] = []
    chosen: set[int] = set()
    for c in sorted(choices, key=ratio, reverse=True):
        if c.saved_cycles <= 0:
            continue
        if predicted_sqnr([*picked, c.sensitivity_db]) >= sqnr_min:
            picked.append(c.sensitivity_db)
            chosen.add(c.node)
    return [
        LayerChoice(
            c.node,
            c.weight,
            c.sensitivity_db,
            c.float_cycles,
            c.int8_cycles,
            c.node in chosen,
            c.nodes,
        )
        for c in choices
    ]


def plan_auto(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    samples: Sequence[Mapping[str, np.ndarray]],
    eval_inputs: Mapping[str, np.ndarray],
    hw: Hardware,
    sqnr_min: float,
    method: str,
    percentile: float,
    activation_scheme: str = "asymmetric",
):
    """(plan of the chosen int8 layers, every layer's LayerChoice)."""
    from eqsat.quant.passes import plan_quantization

    full = plan_quantization(
        graph, params, samples, hw.rounding, method, percentile, None, None, activation_scheme
    )
    fake = FakeQuant(graph, full.conv_nodes, full.act_qparams, params, eval_inputs)
    # Layers reading one input go together: the rules quantize a matmul whose input's
    # e-class holds an observe annotation, and observe(x) = x puts it in x's class.
    groups: dict[int, list[int]] = {}
    for i in full.layer_nodes:
        groups.setdefault(graph.nodes[i].inputs[0], []).append(i)
    choices = []
    for members in groups.values():
        cycles = [layer_cycles(hw, graph, i) for i in members]
        names = ",".join(str(graph.nodes[graph.nodes[i].inputs[1]].attr("name")) for i in members)
        choices.append(
            LayerChoice(
                members[0],
                names,
                fake.sqnr(members),
                sum(c[0] for c in cycles),
                sum(c[1] for c in cycles),
                nodes=tuple(members),
            )
        )
    choices = confirm(choose_layers(choices, sqnr_min), fake, sqnr_min)
    chosen = {i for c in choices if c.int8 for i in c.layers}
    plan = plan_quantization(
        graph, params, samples, hw.rounding, method, percentile, None, chosen, activation_scheme
    )
    return plan, choices
