"""An accuracy floor for `--quantize int8 --sqnr-min DB`.

Uniform int8 is as accurate as its least accurate layers allow: on networks of dozens
of layers with Gaussian weights, rounding the weights to int8 alone costs each layer
about 42 dB, and these noises add (the zoo's BERT-base: 28.9 dB with exact activations
and int8 weights per channel, 31.4 dB with a scale per 128 rows). No choice of
activation scale moves that. When the int8 plan (rotation and calibration as chosen by
the int8 pass) is predicted to miss the floor on one of the first CHECK_SAMPLES calibration
samples (a prediction from one sample was seen to miss by 0.2 dB on another input),
the layer groups whose int8 noise
costs the most per cycle saved are kept in a higher precision the hardware declares
(bf16, w8a16, ...), chosen by `--quantize auto`'s exact knapsack: least estimated
cycles with every output's predicted SQNR >= DB. Every other group stays int8 exactly
as planned (rotated inputs rotated). The report lists the kept groups, their
precision, their int8 sensitivity, and the predicted SQNR of uniform int8 (why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from eqsat.interpreter import narrow
from eqsat.ir.graph import Graph
from eqsat.ir.types import DType
from eqsat.ops import REGISTRY
from eqsat.ops.rotation import hadamard, hadamard_rows
from eqsat.quant.auto import (
    CONFIRM_ROUNDS,
    LayerChoice,
    Option,
    choose_precisions,
    hardware_precisions,
    measure_choices,
    mixed_plan,
    shrunk_budget,
    weight_only_act,
)
from eqsat.quant.passes import QuantPlan
from eqsat.quant.sensitivity import FakeQuant, fake_weight
from hwsim.hardware import Hardware

CHECK_SAMPLES = 4  # calibration samples every prediction must meet the floor on


class RotatedFakeQuant(FakeQuant):
    """FakeQuant whose int8 layers read their input as the int8 plan does: rotated
    (x H at the rotated range, H^T w rounded per channel) where the plan rotates it."""

    def __init__(self, *args, rotations: Mapping[int, int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rotations = dict(rotations)  # activation node -> Hadamard block

    def layer_output(self, i: int, x: np.ndarray, precision: str) -> np.ndarray:
        node = self.graph.nodes[i]
        block = self.rotations.get(node.inputs[0])
        if precision != "int8" or block is None:
            return super().layer_output(i, x, precision)
        scale, zp = self.full.act_qparams[node.inputs[0]]
        attrs = {"scale": scale, "zero_point": zp}
        q = REGISTRY["quantize"].ref([hadamard(x, block)], {**attrs, "dtype": "i8"})
        xq = REGISTRY["dequantize"].ref([narrow(q, DType.I8)], attrs).astype(np.float32)
        w = self.ref[node.inputs[1]]
        wq = fake_weight(hadamard_rows(np.asarray(w, dtype=np.float32), block), False)
        return narrow(node.opdef.ref([xq, wq], node.attr_dict), node.type.dtype)


@dataclass
class FloorResult:
    """What the floor decided: the plan to optimize and why."""

    plan: QuantPlan
    graph: Graph  # the float model the groups' nodes index
    sqnr_min: float
    int8_predicted: dict[str, float]  # uniform int8 fake-quantized: the least over samples
    predicted: dict[str, float]  # the chosen assignment, the same way
    choices: list[LayerChoice] = field(default_factory=list)  # every layer group

    @property
    def kept(self) -> list[LayerChoice]:
        """The groups not in int8."""
        return [c for c in self.choices if c.precision != "int8"]


def apply_floor(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    plan: QuantPlan,
    samples: Sequence[Mapping[str, np.ndarray]],
    hw: Hardware,
    sqnr_min: float,
) -> FloorResult:
    """Keep `plan` (uniform int8) if its predicted SQNR meets `sqnr_min` on every output;
    else the cheapest assignment of the hardware's precisions to the layer groups that
    does, int8 groups as `plan` quantizes them."""
    rotations = {r.act: r.block for r in plan.rotations if r.chosen}
    act = weight_only_act(hw)
    fake = RotatedFakeQuant(graph, plan, params, samples[0], act, rotations=rotations)

    def worst(assigned: Mapping[int, str]) -> dict[str, float]:
        """Each output's least SQNR over the first CHECK_SAMPLES calibration samples."""
        out = fake.sqnr(assigned)
        for sample in samples[1:CHECK_SAMPLES]:
            got = RotatedFakeQuant(graph, plan, params, sample, act, rotations=rotations)
            more = got.sqnr(assigned)
            out = {k: min(v, more[k]) for k, v in out.items()}
        return out

    uniform = worst({i: "int8" for i in plan.layer_nodes})
    if min(uniform.values(), default=np.inf) >= sqnr_min:
        return FloorResult(plan, graph, sqnr_min, uniform, uniform)
    choices = measure_choices(graph, hw, plan, fake, hardware_precisions(hw), params)
    scale = [1.0] * len(fake.outputs)
    for _ in range(CONFIRM_ROUNDS):  # solve; while a sample misses, shrink the budget
        chosen = choose_precisions(choices, sqnr_min, scale)
        measured = worst({i: c.precision for c in chosen for i in c.layers if c.precision != "f32"})
        shrunk = shrunk_budget(scale, sqnr_min, measured, fake.outputs)
        if shrunk is None:
            break
        scale = shrunk
    if all(c.precision == "int8" for c in chosen):  # the knapsack found no cheaper fix
        return FloorResult(plan, graph, sqnr_min, uniform, measured, chosen)
    mixed = mixed_plan(graph, params, plan, chosen, hw.rounding, act, rotations)
    mixed.rotations = [
        replace(r, chosen=r.chosen and r.act in mixed.act_qparams) for r in plan.rotations
    ]
    return FloorResult(mixed, graph, sqnr_min, uniform, measured, chosen)


def _int8(c: LayerChoice) -> Option | None:
    return next((o for o in c.options if o.precision == "int8"), None)


def floor_report(floor: FloorResult) -> dict:
    """REPORT.json's `floor` under the int8 report."""
    from eqsat.quant.report import _db, _sqnr

    return {
        "sqnr_min_db": floor.sqnr_min,
        "uniform_int8_predicted_sqnr_db": _sqnr(floor.int8_predicted),
        "predicted_sqnr_db": _sqnr(floor.predicted),
        "kept": [
            {
                "layers": [floor.graph.nodes[i].name or f"%{i}" for i in c.layers],
                "weights": c.weight.split(","),
                "precision": c.precision,
                "int8_sensitivity_db": _db(_int8(c).sensitivity_db) if _int8(c) else None,
                "est_cycles": c.chosen.cycles,
                "int8_est_cycles": _int8(c).cycles if _int8(c) else None,
            }
            for c in floor.kept
        ],
    }


def floor_summary(floor: FloorResult) -> list[str]:
    """The summary's lines: which groups stay out of int8 and why."""
    worst = min(floor.int8_predicted.values(), default=np.inf)
    if not floor.kept:
        return [f"  int8 everywhere predicted {worst:.1f} dB (floor {floor.sqnr_min:g} dB)"]
    kinds: dict[str, int] = {}
    for c in floor.kept:
        kinds[c.precision] = kinds.get(c.precision, 0) + 1
    kept = ", ".join(f"{n} in {p}" for p, n in kinds.items())
    lines = [
        f"  int8 everywhere predicted {worst:.1f} dB < floor {floor.sqnr_min:g} dB: kept "
        f"{kept} of {len(floor.choices)} layer groups (predicted "
        f"{min(floor.predicted.values(), default=np.inf):.1f} dB)"
    ]
    ranked = sorted(floor.kept, key=lambda c: _int8(c).sensitivity_db if _int8(c) else 0.0)
    for c in ranked[:8]:
        alone = (
            f"int8 alone {_int8(c).sensitivity_db:.1f} dB at the output"
            if _int8(c)
            else "no int8 form"
        )
        lines.append(f"    {c.weight[:60]}: {c.precision} ({alone})")
    if len(floor.kept) > 8:
        lines.append(f"    ... {len(floor.kept) - 8} more in the report")
    return lines
