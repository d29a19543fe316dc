"""Mixed precision under an accuracy budget (`--quantize auto --sqnr-min DB`).

The unit of choice is a layer group: the quantizable matmuls and convs reading one
input (Q, K and V), since the int8 rules quantize by input annotation. Each group may
take any precision the hardware file declares and its kernels support: int8
(activations and weights, `i8` in [macs_per_cycle]), bf16 (weights and activations),
fp8 E4M3 / w8a16 / w4a16 weights (where `weight_dtypes` declares fp8 / i8 / i4; matmuls
whose K the group size divides), or f32.

Sensitivity, measured on the first calibration sample (eqsat/quant/sensitivity.py):
each group is put alone in int8 (input quantized at its calibrated scale, weight
rounded per channel, the numbers the int8 kernel uses) and the model evaluated
downstream of it; the output noise over the noise at the group's own outputs is the
group's noise gain. Every other precision's output noise is its noise at the group's
outputs (computed from the layer's real input and weight) times that gain: noise this
small propagates linearly. Noise powers of different groups add, so an assignment
predicts, per output, SQNR = -10 log10(sum of its groups' noise).

Choice: an exact multiple-choice knapsack (scipy's milp, HiGHS): one precision per
group, least estimated cycles (eqsat/costs.py prices of each precision's kernels),
every output's predicted noise within the budget. The chosen assignment is then
evaluated as a whole; while that measurement misses the budget (noise of groups
sharing a path adds in amplitude, not only in power), the noise budget shrinks by the
shortfall and the knapsack is solved again.

Never slower than uniform by construction: the mixed plan and every uniform precision
(`--quantize int8`, `bf16`, ... exactly as those flags plan them) are optimized and
measured (`price`), and the fastest whose measured SQNR meets the budget is kept (f32,
the unquantized model, when none does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from eqsat.costs import op_cost
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.quant.passes import QuantPlan, rotated_rows
from eqsat.quant.sensitivity import FakeQuant, fake_weight, predicted_sqnr
from eqsat.quant.weight_only import (
    DEFAULT_GROUP,
    DEFAULT_SCALE_DTYPE,
    _WeightSeeds,
    quantizable_weights,
)
from eqsat.quant.weight_only import SCHEMES as WEIGHT_ONLY
from hwsim.hardware import Hardware

__all__ = [
    "AutoResult",
    "Candidate",
    "LayerChoice",
    "Option",
    "choose_precisions",
    "fake_weight",
    "hardware_precisions",
    "plan_auto",
    "predicted_sqnr",
]

# Precisions in the order the report lists them (cheapest-to-store first).
PRECISIONS = ("int8", "w4a16", "fp8", "w8a16", "bf16", "f32")
CONFIRM_ROUNDS = 4
SAFETY = 1.02  # the re-solved budget's extra margin over the measured shortfall
RETRY_MARGIN_DB = 0.3  # the same when the optimized mix misses on the evaluation inputs


@dataclass(frozen=True)
class Option:
    """One precision of one layer group: its predicted noise and estimated cycles."""

    precision: str
    cycles: int
    noise: tuple[float, ...]  # per output: output noise power / signal power
    measured: bool = False  # the noise was measured end to end (else: gain x local noise)

    @property
    def sensitivity_db(self) -> float:
        """Worst output's SQNR with only this group at this precision."""
        worst = max(self.noise, default=0.0)
        return math.inf if worst <= 0.0 else -10.0 * math.log10(worst)


@dataclass(frozen=True)
class LayerChoice:
    """One layer group, its options and the precision chosen for it."""

    node: int  # the group's first matmul or conv
    weight: str  # its weight params, comma-separated
    options: tuple[Option, ...]
    precision: str = "f32"
    nodes: tuple[int, ...] = ()

    @property
    def layers(self) -> tuple[int, ...]:
        return self.nodes or (self.node,)

    def option(self, precision: str) -> Option:
        return next(o for o in self.options if o.precision == precision)

    @property
    def chosen(self) -> Option:
        return self.option(self.precision)

    @property
    def float_cycles(self) -> int:
        return self.option("f32").cycles

    @property
    def saved_cycles(self) -> int:
        return self.float_cycles - self.chosen.cycles

    @property
    def sensitivity_db(self) -> float:
        return self.chosen.sensitivity_db

    @property
    def int8(self) -> bool:
        return self.precision == "int8"


@dataclass
class Candidate:
    """A whole-model plan that was optimized and measured."""

    name: str  # "mixed", or a uniform precision
    cycles: int | None  # estimated cycles of the extracted program (None: not optimized)
    sqnr: dict[str, float]  # measured per output (on the evaluation inputs)
    predicted: dict[str, float] = field(default_factory=dict)  # before optimizing

    def meets(self, sqnr_min: float) -> bool:
        return self.cycles is not None and min(self.sqnr.values(), default=math.inf) >= sqnr_min


@dataclass
class AutoResult:
    plan: QuantPlan
    choices: list[LayerChoice]
    chosen: str  # the candidate kept
    candidates: list[Candidate] = field(default_factory=list)
    predicted: dict[str, float] = field(default_factory=dict)  # of the mixed assignment
    confirmed: dict[str, float] = field(default_factory=dict)  # its fake-quant measurement
    outputs: list[str] = field(default_factory=list)
    graph: Graph | None = None  # the model the layers' node ids refer to
    sqnr_min: float = 35.0
    precisions: list[str] = field(default_factory=list)  # what the hardware declares


def hardware_precisions(hw: Hardware) -> list[str]:
    """The precisions `hw` declares, in PRECISIONS order (f32 always)."""
    have = {"f32"}
    if "i8" in hw.macs_per_cycle:
        have.add("int8")
    for name, scheme in WEIGHT_ONLY.items():
        bf16_ok = scheme.bits != 16 or "bf16" in hw.macs_per_cycle
        if scheme.weight_dtype in hw.weight_dtypes and bf16_ok:
            have.add(name)
    return [p for p in PRECISIONS if p in have]


def weight_only_act(hw: Hardware) -> str:
    """Activations of the weight-only schemes: bf16 where declared (as check_hardware)."""
    return "bf16" if "bf16" in hw.macs_per_cycle else "f32"


def layer_cycles(hw: Hardware, graph: Graph, layer: int, precision: str) -> int | None:
    """Estimated cycles of one matmul/conv at `precision`, as extraction prices its
    kernels (eqsat/costs.py): the product plus what the precision adds around it (the
    input's quantize or cast). None when the cost model cannot price it."""
    node = graph.nodes[layer]
    x, w = (graph.nodes[j].type for j in node.inputs)
    out = node.type

    def cost(op: str, ins: Sequence[TensorType], o: TensorType, attrs: Mapping) -> int | None:
        c = op_cost(hw, op, list(ins), o, dict(attrs))
        return None if c is None else int(c.cycles)

    def total(*parts: int | None) -> int | None:
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[misc]

    if precision == "f32":
        return cost(node.op, [x, w], out, node.attr_dict)
    if precision == "int8":
        xq, wq = x.with_dtype(DType.I8), w.with_dtype(DType.I8)
        quant = cost("quantize", [x], xq, {"scale": 1.0, "zero_point": 0, "dtype": "i8"})
        if node.op == "matmul":
            n = w.shape[1]
            ins = [xq, wq, TensorType(DType.I32, (n,)), TensorType(DType.F32, (1, n))]
            return total(cost("qmatmul_bias_dequant", ins, out, {"a_zero": 0}), quant)
        attrs = {k: v for k, v in node.attr_dict.items() if k in ("stride", "padding")}
        return total(cost("qconv2d", [xq, wq], out.with_dtype(DType.I32), attrs), quant)
    xb = x.with_dtype(DType.BF16)
    cast_x = cost("cast", [x], xb, {"dtype": "bf16"})
    if precision == "bf16":
        prod = cost("matmul", [xb, w.with_dtype(DType.BF16)], out.with_dtype(DType.BF16), {})
        cast_out = cost("cast", [out.with_dtype(DType.BF16)], out, {"dtype": "f32"})
        return total(prod, cast_x, cast_out)
    scheme = WEIGHT_ONLY[precision]
    k, n = w.shape
    group = DEFAULT_GROUP
    packed = TensorType(DType.I8, (k // 2 if scheme.bits == 4 else k, n))
    scales = TensorType(DType.F32, (k // group, n))
    attrs = {"group": group, "bits": scheme.bits, "fmt": scheme.fmt}
    f32_act = cost("matmul_wq", [x, packed, scales], out, {**attrs, "act": "f32"})
    forms = [f32_act]
    if "bf16" in hw.macs_per_cycle:
        bf = cost("matmul_wq", [xb, packed, scales], out, {**attrs, "act": "bf16"})
        forms.append(total(bf, cast_x))
    priced = [f for f in forms if f is not None]
    return min(priced) if priced else None


def group_precisions(
    graph: Graph, members: Sequence[int], precisions: Sequence[str], wo_ok: set[int]
) -> list[str]:
    """The precisions a group's kernels support: weight-only and bf16 forms exist for
    matmuls with a rank-2 weight (K divisible by the group size for 4/8 bits)."""
    out = []
    for p in precisions:
        if p in ("f32", "int8"):
            out.append(p)
        elif all(m in wo_ok for m in members):
            k_ok = WEIGHT_ONLY[p].bits == 16 or all(
                graph.nodes[graph.nodes[m].inputs[1]].type.shape[0] % DEFAULT_GROUP == 0
                for m in members
            )
            if k_ok:
                out.append(p)
    return out


def choose_precisions(
    choices: Sequence[LayerChoice], sqnr_min: float, noise_scale: Sequence[float] | None = None
) -> list[LayerChoice]:
    """The choices with the precision of each group set: the least total cycles whose
    predicted noise (per output, summed over groups) stays within the budget, exactly
    (a multiple-choice knapsack solved as a 0-1 program by HiGHS). `noise_scale`: per
    output, the budget's share that remains (1: all of it)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    if not choices:
        return []
    outs = len(choices[0].options[0].noise)
    scale = list(noise_scale) if noise_scale is not None else [1.0] * outs
    budget = 10.0 ** (-sqnr_min / 10.0)
    var: list[tuple[int, Option]] = [(g, o) for g, c in enumerate(choices) for o in c.options]
    n = len(var)
    top = max((o.cycles for _, o in var), default=1) or 1
    cost = np.array([o.cycles / top for _, o in var], dtype=np.float64)
    pick = np.zeros((len(choices), n))
    for k, (g, _) in enumerate(var):
        pick[g, k] = 1.0
    rows, ub = [pick], [np.ones(len(choices))]
    lb = [np.ones(len(choices))]
    for out in range(outs):
        limit = budget * scale[out]
        row = np.array([o.noise[out] / limit if limit > 0 else 0.0 for _, o in var])
        row = np.where(np.isfinite(row), row, 1e30)
        if row.any():
            rows.append(row[None, :])
            lb.append(np.array([-np.inf]))
            ub.append(np.array([1.0]))
    res = milp(
        cost,
        constraints=LinearConstraint(np.vstack(rows), np.concatenate(lb), np.concatenate(ub)),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options={"time_limit": 30.0},
    )
    if res.x is None:  # only if the solver gave up: everything stays as it was
        return list(choices)
    taken = {var[k][0]: var[k][1].precision for k in range(n) if res.x[k] > 0.5}
    return [replace(c, precision=taken.get(g, "f32")) for g, c in enumerate(choices)]


def predicted_by_output(choices: Sequence[LayerChoice], outputs: Sequence[str]) -> dict[str, float]:
    """Each output's predicted SQNR: the chosen options' noise powers added."""
    out = {}
    for k, name in enumerate(outputs):
        noise = sum(c.chosen.noise[k] for c in choices)
        out[name] = math.inf if noise <= 0.0 else -10.0 * math.log10(noise)
    return out


def mixed_plan(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    full: QuantPlan,
    choices: Sequence[LayerChoice],
    rounding: str,
    act: str,
    rotations: Mapping[int, int] | None = None,
) -> QuantPlan:
    """The model annotated for the chosen precisions: observe(x) on the inputs of int8
    groups (at the calibrated scales of `full`, the every-layer int8 plan, whose seeded
    int8 weights are kept; `rotations`: activation -> Hadamard block where `full`
    rotates x and reads H^T w, as the int8 pass writes them), wobserve(w) with each group's scheme on the weights of
    weight-only and bf16 groups (their packed weights seeded as `--quantize w8a16` etc.
    seed them). f32 groups stay as they are."""
    rotations = rotations or {}
    by_node = {i: c.precision for c in choices for i in c.layers}
    int8 = {i for i, p in by_node.items() if p == "int8"}
    b = GraphBuilder(graph.name, graph.dims)
    b.graph.constants = dict(graph.constants)
    new: dict[int, int] = {}
    observed: dict[int, int] = {}
    marked: dict[tuple[int, str], int] = {}
    seeds = _WeightSeeds(graph)
    seeded: set[tuple[int, str]] = set()
    wo_layers: list[str] = []
    for i, node in graph:
        inputs = [new[j] for j in node.inputs]
        p = by_node.get(i, "f32")
        if p == "int8":
            x = node.inputs[0]
            if x not in observed:
                scale, zp = full.act_qparams[x]
                attrs = {"scale": scale, "zero_point": zp, "rounding": rounding}
                src = new[x]
                if x in rotations:
                    src = b.add("hadamard", (src,), {"block": rotations[x]})
                observed[x] = b.add("observe", (src,), attrs)
            inputs[0] = observed[x]
            if x in rotations:
                inputs[1] = rotated_rows(b, inputs[1], rotations[x])
        elif p != "f32":
            scheme = WEIGHT_ONLY[p]
            w = node.inputs[1]
            group = 1 if scheme.bits == 16 else DEFAULT_GROUP
            if (w, p) not in marked:
                attrs = {"group": group, "bits": scheme.bits, "fmt": scheme.fmt, "act": act}
                if scheme.bits != 16:  # group scales stored as --quantize stores them
                    attrs["sdtype"] = DEFAULT_SCALE_DTYPE
                marked[w, p] = b.add("wobserve", (new[w],), attrs)
            inputs[1] = marked[w, p]
            if (w, p) not in seeded:
                seeded.add((w, p))
                wname = str(graph.nodes[w].attr("name"))
                seeds.weight(w, wname, scheme.bits, group, scheme.fmt, DEFAULT_SCALE_DTYPE)
                wo_layers.append(wname)
        new[i] = b.add(node.op, inputs, node.attr_dict, node.name)
    for name, i in graph.outputs:
        b.output(name, new[i])
    wvalues = seeds.evaluate(params) if seeded else {}
    int8_layers = [str(graph.nodes[graph.nodes[i].inputs[1]].attr("name")) for i in sorted(int8)]
    acts = {graph.nodes[i].inputs[0] for i in int8}
    plan = QuantPlan(
        b.graph,
        {**(full.params if int8 else {}), **wvalues},
        (full.seeds if int8 else "") + (seeds.egglog() if seeded else ""),
        [t for t, j in zip(full.tensors, sorted(full.act_qparams), strict=True) if j in acts],
        int8_layers + wo_layers,
    )
    plan.act_qparams = {j: full.act_qparams[j] for j in acts}
    plan.layer_nodes = sorted(int8)
    plan.conv_nodes = {i for i in full.conv_nodes if i in int8}
    return plan


def layer_groups(graph: Graph, layers: Sequence[int]) -> list[list[int]]:
    """Layers reading one input form a group (so do layers sharing a weight, which one
    annotation marks): union-find over both."""
    parent = {i: i for i in layers}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for slot in (0, 1):
        first: dict[int, int] = {}
        for i in layers:
            j = graph.nodes[i].inputs[slot]
            if j in first:
                parent[find(i)] = find(first[j])
            else:
                first[j] = i
    groups: dict[int, list[int]] = {}
    for i in layers:
        groups.setdefault(find(i), []).append(i)
    return [sorted(g) for g in sorted(groups.values(), key=min)]


def measure_choices(
    graph: Graph,
    hw: Hardware,
    full: QuantPlan,
    fake: FakeQuant,
    precisions: Sequence[str],
    params: Mapping[str, np.ndarray],
) -> list[LayerChoice]:
    """Every group's options: cycles per precision, int8 noise measured end to end,
    the others' predicted from the group's measured noise gain."""
    live = graph.live()
    wo_ok = set(quantizable_weights(graph, params, 1, 16))
    choices = []
    for members in layer_groups(graph, [i for i in full.layer_nodes if live[i]]):
        allowed = group_precisions(graph, members, precisions, wo_ok)
        probe = "int8" if "int8" in allowed else next((p for p in allowed if p != "f32"), None)
        gains = fake.gains(members, probe) if probe else ()
        options = []
        for p in allowed:
            cycles = [layer_cycles(hw, graph, i, p) for i in members]
            if any(c is None for c in cycles):
                continue
            if p == "f32":
                noise = tuple(0.0 for _ in fake.outputs)
            else:
                local = fake.local_noise(members, p)
                noise = tuple(g * local for g in gains)
            options.append(Option(p, sum(cycles), noise, p == probe))  # type: ignore[arg-type]
        names = ",".join(str(graph.nodes[graph.nodes[i].inputs[1]].attr("name")) for i in members)
        choices.append(LayerChoice(members[0], names, tuple(options), "f32", tuple(members)))
    return choices


def shrunk_budget(
    scale: Sequence[float], sqnr_min: float, measured: Mapping[str, float], outputs: Sequence[str]
) -> list[float] | None:
    """Each output's noise budget scale shrunk by its measured shortfall below
    `sqnr_min` (capped at 60 dB), with a margin; None when no output falls short."""
    short = [min(sqnr_min - measured[o], 60.0) for o in outputs]
    if max(short, default=0.0) <= 0.0:
        return None
    return [
        s / (10.0 ** (d / 10.0) * SAFETY) if d > 0 else s for s, d in zip(scale, short, strict=True)
    ]


def confirm(
    choices: list[LayerChoice], fake: FakeQuant, sqnr_min: float
) -> tuple[list[LayerChoice], dict[str, float]]:
    """Solve, evaluate the assignment as a whole, and while the measurement misses the
    budget shrink the failing outputs' noise budget by the shortfall and solve again.
    Returns the assignment and its measured SQNR per output."""
    scale = [1.0] * len(fake.outputs)
    chosen = choose_precisions(choices, sqnr_min, scale)
    measured: dict[str, float] = {}
    for _ in range(CONFIRM_ROUNDS):
        assigned = {i: c.precision for c in chosen for i in c.layers if c.precision != "f32"}
        measured = fake.sqnr(assigned)
        shrunk = shrunk_budget(scale, sqnr_min, measured, fake.outputs)
        if shrunk is None:
            break
        scale = shrunk
        chosen = choose_precisions(choices, sqnr_min, scale)
    return chosen, measured


def plan_auto(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    samples: Sequence[Mapping[str, np.ndarray]],
    hw: Hardware,
    sqnr_min: float,
    method: str,
    percentile: float,
    activation_scheme: str = "asymmetric",
    price: Callable[[QuantPlan], tuple[int, dict[str, float]]] | None = None,
) -> AutoResult:
    """Measure, choose and plan. `price(plan)`: (estimated cycles of the extracted
    program, measured SQNR per output); with it, the mixed plan competes with every
    uniform precision and the fastest meeting the budget is returned."""
    from eqsat.quant.passes import plan_quantization
    from eqsat.quant.weight_only import plan_weight_only

    precisions = hardware_precisions(hw)
    full = plan_quantization(
        graph, params, samples, hw.rounding, method, percentile, None, None, activation_scheme
    )
    act = weight_only_act(hw)
    fake = FakeQuant(graph, full, params, samples[0], act)
    choices = measure_choices(graph, hw, full, fake, precisions, params)
    chosen, confirmed = confirm(choices, fake, sqnr_min)
    outputs = list(fake.outputs)
    predicted = predicted_by_output(chosen, outputs)
    mixed = mixed_plan(graph, params, full, chosen, hw.rounding, act)
    result = AutoResult(
        mixed, chosen, "mixed", [], predicted, confirmed, outputs, graph, sqnr_min, precisions
    )
    if price is None:
        return result

    del fake  # the reference values: memory the candidates' optimizations need

    def uniform(p: str) -> list[LayerChoice]:
        """Every group at p where it supports p, else f32 (as `--quantize p` plans)."""
        return [
            replace(c, precision=p if any(o.precision == p for o in c.options) else "f32")
            for c in choices
        ]

    # Candidates are priced one at a time and only the fastest feasible plan is kept
    # (big models: each plan holds its own quantized weights).
    best: tuple[Candidate, QuantPlan, list[LayerChoice]] | None = None
    first: Candidate | None = None
    for name in ["mixed", *(p for p in precisions if p != "f32")]:
        assigned = chosen if name == "mixed" else uniform(name)
        guess = predicted_by_output(assigned, outputs)
        same = [c.precision for c in assigned] == [c.precision for c in chosen]
        if name == "int8" and same and first is not None:
            # the mixed plan is uniform int8 (the same annotations and seeds): priced once
            candidate = replace(first, name=name, predicted=guess)
            plan = mixed
        else:
            if name == "mixed":
                plan = mixed
            elif name == "int8":
                plan = full
            else:
                scheme = WEIGHT_ONLY[name]
                plan = plan_weight_only(
                    graph, params, scheme.bits, DEFAULT_GROUP, act, scheme.fmt,
                    sdtype=DEFAULT_SCALE_DTYPE,
                )  # fmt: skip
            cycles, sqnr = price(plan)
            candidate = Candidate(name, cycles, sqnr, guess)
        first = first or candidate
        result.candidates.append(candidate)
        if candidate.meets(sqnr_min) and (best is None or candidate.cycles < best[0].cycles):
            best = (candidate, plan, assigned)
        del plan
        if name == "mixed" and candidate.cycles is not None and not candidate.meets(sqnr_min):
            # measured on the evaluation inputs, the mix misses: once more, with the
            # budget raised by the shortfall (plus RETRY_MARGIN_DB)
            short = sqnr_min - min(candidate.sqnr.values())
            retry = choose_precisions(choices, sqnr_min + short + RETRY_MARGIN_DB)
            if [c.precision for c in retry] != [c.precision for c in chosen]:
                plan = mixed_plan(graph, params, full, retry, hw.rounding, act)
                guess = predicted_by_output(retry, outputs)
                cycles, sqnr = price(plan)
                candidate = Candidate("mixed-retry", cycles, sqnr, guess)
                result.candidates.append(candidate)
                if candidate.meets(sqnr_min):
                    best = (candidate, plan, retry)
                del plan
    if best is not None:
        result.chosen = best[0].name
        result.plan, result.choices = best[1], best[2]
        result.predicted = predicted_by_output(best[2], outputs)
    else:  # nothing quantized meets the budget: the float model
        result.chosen = "f32"
        result.choices = [replace(c, precision="f32") for c in choices]
        result.plan = mixed_plan(graph, params, full, result.choices, hw.rounding, act)
        result.predicted = predicted_by_output(result.choices, outputs)
    return result
