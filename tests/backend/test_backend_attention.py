"""attention / attention_masked through the backend: simulated == reference on both
presets and the 16 KiB SRAM machine (scores that fit one key block and scores tiled
along the keys with the online softmax), additive masks (a row per batch, a full block,
-inf and -FLT_MAX fills, key blocks masked out entirely for some rows), kt as exporters
write it (a transposed view of k) or row-major, leading axes broadcast (one k/v head
for several q heads); the plan counting exactly the instructions the backend emits,
the cost model against the simulated cycles, and the exporters' forms found by the
rules."""

from __future__ import annotations

from collections import Counter
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqsat.attention_plan import (
    MASK_NONE,
    AttnPlan,
    attention_shape,
    fits,
    key_blocks,
    step_ops,
)
from eqsat.attention_price import (
    attention_cycles,
    attention_loop,
    attention_plan,
    attention_price,
)
from eqsat.costs import op_cost
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.loading import load_model
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import Kernel, load_hardware
from hwsim.isa import Matmul, Unary
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.conftest import ROOT
from tests.strategies import scaled

F32 = DType.F32
TINY = str(ROOT / "tests" / "data" / "tiny_sram.toml")
MACHINES = ("datacenter", "edge", TINY)
FLT_MAX = float(np.finfo(np.float32).max)


def _graph(lead, s, t, d, dv, *, kv_lead=None, mask=None, kt_view=True, scale=0.125):
    """attention(q, kt, v[, mask]) over leading axes `lead` (k and v over `kv_lead`)."""
    kv_lead = lead if kv_lead is None else kv_lead
    b = GraphBuilder("att")
    q = b.leaf("input", "q", TensorType(F32, (*lead, s, d)))
    if kt_view:  # matmul(q, transpose(k)), as the exporters write it
        k = b.leaf("input", "k", TensorType(F32, (*kv_lead, t, d)))
        rank = len(kv_lead) + 2
        kt = b.add("transpose", [k], {"perm": (*range(rank - 2), rank - 1, rank - 2)})
    else:
        kt = b.leaf("input", "kt", TensorType(F32, (*kv_lead, d, t)))
    v = b.leaf("input", "v", TensorType(F32, (*kv_lead, t, dv)))
    ins, op = [q, kt, v], "attention"
    if mask is not None:
        ins.append(b.leaf("input", "m", TensorType(F32, mask)))
        op = "attention_masked"
    b.output("y", b.add(op, ins, {"scale": scale}, "att"))
    return b.graph


def _bindings(graph, seed: int, mask_shape=None, fill=-1e9, pattern="random"):
    rng = np.random.default_rng(seed)
    out = {}
    for _, node in graph:
        if node.op == "input" and node.name != "m":
            out[str(node.attr("name"))] = rng.standard_normal(node.type.shape).astype(np.float32)
    if mask_shape is not None:
        s, t = mask_shape[-2], mask_shape[-1]
        if pattern == "anticausal":  # query i sees keys >= i * t / s: early blocks all masked
            i, j = np.arange(s)[:, None], np.arange(t)[None, :]
            hidden = j * max(s, 1) < i * t
            hidden = np.broadcast_to(hidden, mask_shape)
        else:
            hidden = rng.random(mask_shape) < 0.3
            hidden[..., -1] = False  # every query keeps a key
        out["m"] = np.where(hidden, np.float32(fill), np.float32(0.0)).astype(np.float32)
    return out


def _check(graph, hw, bindings):
    got, report, compiled = run_backend(graph, hw, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    return report, compiled


@st.composite
def cases(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    kv_lead = tuple(1 if draw(st.booleans()) else n for n in lead)  # shared k/v heads
    s, t = draw(st.integers(1, 40)), draw(st.integers(1, 300))
    d, dv = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    mask = draw(st.sampled_from([None, "row", "full"]))
    mask_shape = None
    if mask == "row":
        mask_shape = (*lead, 1, t)
    elif mask == "full":
        mask_shape = (*(1 if draw(st.booleans()) else n for n in lead), s, t)
    fill = draw(st.sampled_from([-1e9, -FLT_MAX, -np.inf]))
    return dict(
        lead=lead,
        kv_lead=kv_lead,
        s=s,
        t=t,
        d=d,
        dv=dv,
        mask=mask_shape,
        fill=fill,
        kt_view=draw(st.booleans()),
        scale=draw(st.sampled_from([1.0, 0.125, 0.7])),
        hw=draw(st.sampled_from(MACHINES)),
        seed=draw(st.integers(0, 2**16)),
    )


@settings(max_examples=scaled(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_simulated_equals_reference(c):
    g = _graph(
        c["lead"],
        c["s"],
        c["t"],
        c["d"],
        c["dv"],
        kv_lead=c["kv_lead"],
        mask=c["mask"],
        kt_view=c["kt_view"],
        scale=c["scale"],
    )
    planned = []

    def spy(hw, s):
        planned.append((hw, s, attention_plan(hw, s)))
        return planned[-1][2]

    with mock.patch("backend.attention.attention_plan", spy):
        report, _ = _check(g, c["hw"], _bindings(g, c["seed"], c["mask"], c["fill"]))
    # the price is the replay of the emitted instructions: the simulated cycles exactly
    (hw, s, plan), sim = planned[0], _attention_kernel(report).cycles
    assert attention_price(hw, s, plan).cycles == sim, (s, plan)


def _attention_kernel(report):
    return next(k for k in report.kernels if k.name.startswith("attention"))


@pytest.mark.parametrize("fill", [-np.inf, -FLT_MAX])
def test_keys_tiled_with_whole_blocks_masked(fill):
    """On 16 KiB of SRAM 256 keys take several key blocks; rows whose first blocks are
    all masked (-inf) must not turn into nan (the running maximum's floor)."""
    shape = dict(lead=(2,), s=32, t=256, d=32, dv=16)
    g = _graph(**shape, mask=(1, 32, 256))
    node = next(n for _, n in g if n.op == "attention_masked")
    s = attention_shape([g.nodes[j].type for j in node.inputs], node.type, 0.125)
    plan = attention_plan(load_hardware(TINY), s)
    assert plan is not None and len(key_blocks(256, plan.tk)) > 1
    _check(g, TINY, _bindings(g, 3, (1, 32, 256), fill, "anticausal"))


def test_bert_heads_fit_one_key_block_two_heads_a_step_on_datacenter():
    """BERT-base heads (d = 64) on the 128 x 128 array: two heads per step, block-
    diagonal, one key block, the second product transposed (64 value columns would
    fill half the array's width); one head a step, as written, where the array is 16
    wide."""
    g = _graph((1, 12), 128, 128, 64, 64)
    node = next(n for _, n in g if n.op == "attention")
    s = attention_shape([g.nodes[j].type for j in node.inputs], node.type, 0.125)
    assert attention_plan(load_hardware("datacenter"), s) == AttnPlan(128, 128, 2, out_t=True)
    edge = attention_plan(load_hardware("edge"), s)
    assert edge.heads == 1 and not edge.out_t


@pytest.mark.parametrize("hw_name", MACHINES)
@pytest.mark.parametrize(
    "shape,mask",
    [
        (((1, 4), 64, 64, 32, 32), None),
        (((2,), 37, 150, 16, 8), "row"),
        (((3,), 20, 300, 8, 24), "full"),
        (((2, 4), 40, 64, 16, 16), "row"),  # several heads a step on datacenter
    ],
)
def test_plan_counts_the_emitted_instructions_and_cycles(hw_name, shape, mask):
    """The kernel issues exactly the plan's loads, stores, matmuls and vector ops, and
    the plan's price is within 10% of the simulated kernel."""
    lead, s_len, t, d, dv = shape
    mask_shape = {None: None, "row": (*lead, 1, t), "full": (*lead, s_len, t)}[mask]
    g = _graph(lead, s_len, t, d, dv, mask=mask_shape)
    hw = load_hardware(hw_name)
    report, compiled = _check(g, hw_name, _bindings(g, 1, mask_shape))
    node = next(n for _, n in g if n.op.startswith("attention"))
    ts = [g.nodes[j].type for j in node.inputs]
    s = attention_shape(ts, node.type, 0.125)
    plan = attention_plan(hw, s)
    if hw_name == "datacenter" and d == 16:  # narrow heads share the array
        assert plan.heads > 1
    work, _, _, _ = attention_loop(hw, s, plan)
    instrs = compiled.program.instrs
    kinds = Counter(type(i).__name__ for i in instrs if not isinstance(i, Kernel))
    assert kinds.pop("Load") == work.loads
    assert kinds.pop("Store") == work.stores
    want = Counter()
    nq = -(-s_len // plan.rq) * s.batch // plan.heads
    for _, first, last in key_blocks(t, plan.tk):
        for op in step_ops(s, first, last, plan.heads, plan.out_t):
            name = {"matmul": "Matmul", "transpose": "Transpose", "move": "Move"}
            want[name.get(op.kind, op.kind.capitalize())] += nq
    assert kinds == want
    matmuls = 2 if not plan.out_t else 1 + plan.heads  # out_t: the second head by head
    assert sum(isinstance(i, Matmul) for i in instrs) == matmuls * nq * len(key_blocks(t, plan.tk))
    sim = next(k.cycles for k in report.kernels if k.name.startswith("attention"))
    est = op_cost(hw, node.op, ts, node.type, node.attr_dict).cycles
    assert abs(est - sim) <= 0.1 * sim, (est, sim)


def test_no_mask_plan_has_no_mask_tile():
    s = attention_shape(
        [TensorType(F32, (4, 8)), TensorType(F32, (8, 16)), TensorType(F32, (16, 8))],
        TensorType(F32, (4, 8)),
        1.0,
    )
    assert s.mask == MASK_NONE and not any(op.b == "mask" for op in step_ops(s, True, True))


@pytest.mark.parametrize("hw_name", ["datacenter", "edge"])
def test_bert_layer_attention_is_one_kernel(hw_name):
    """The example BERT layer: softmax(q @ k * 0.125) @ v becomes one kernel, the
    scores never go to DRAM, and the optimized layer simulates faster than written."""
    hw = load_hardware(hw_name)
    graph = load_model(ROOT / "examples" / "bert_layer.model").graph
    opt = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph
    ops = Counter(n.op for i, n in opt if opt.live()[i])
    assert ops["attention"] == 1 and ops["softmax"] == 0
    rng = np.random.default_rng(0)
    bind = {
        str(n.attr("name")): rng.standard_normal(n.type.shape).astype(np.float32) * 0.1
        for _, n in graph
        if n.op in ("input", "param")
    }
    _, fast, _ = run_backend(opt, hw_name, bind, races=False)
    _, slow, _ = run_backend(graph, hw_name, bind, races=False)
    assert fast.cycles < slow.cycles
    att = next(k for k in fast.kernels if k.name.startswith("attention"))
    node = next(n for _, n in opt if n.op == "attention")
    est = op_cost(
        hw, "attention", [opt.nodes[j].type for j in node.inputs], node.type, node.attr_dict
    ).cycles
    assert abs(est - att.cycles) <= 0.1 * att.cycles


@pytest.mark.parametrize(
    "stem,op",
    [
        ("bert_base_dynamo", "attention_masked"),  # sqrt(scale) on q and k, -FLT_MAX mask
        ("gpt2_ts", "attention_masked"),  # causal mask through where with -inf, isnan guard
        ("llama_dynamo", "attention_masked"),  # rotary, grouped-query k/v repeated
        ("vit_b16_ts", "attention"),  # no mask
    ],
)
def test_exporters_forms_become_one_kernel(stem, op):
    """Every attention of the tiny exports becomes one kernel: no softmax (nor its
    isnan guard) is left, and the optimized program simulates as the model computes."""
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    loaded = load_model(ROOT / "tests" / "data" / "onnx" / f"{stem}.onnx")
    opt = optimize(loaded.graph, rules, load_hardware("datacenter")).graph
    live = opt.live()
    ops = Counter(n.op for i, n in opt if live[i])
    assert ops[op] == 2 and ops["softmax"] == 0 and ops["isnan"] == 0, ops
    bindings = loaded.bindings(0)
    got, _, _ = run_backend(opt, "datacenter", bindings, races=False)
    assert_matches(opt, got, reference(loaded.graph, bindings))


@pytest.mark.parametrize(
    "shape,mask,kt_view,plan",
    [
        (((2,), 20, 96, 16, 8), "full", True, AttnPlan(8, 32, 2, out_t=True)),
        (((3,), 20, 100, 16, 24), "row", True, AttnPlan(16, 32, 1, out_t=True)),
        (((1, 4), 33, 64, 8, 8), None, False, AttnPlan(16, 16, 4, out_t=True)),
        (((2,), 1, 40, 16, 16), "row", True, AttnPlan(1, 16, 1, out_t=True)),
        (((2, 2), 24, 48, 16, 16), "full", False, AttnPlan(8, 16, 2)),
    ],
)
def test_any_plan_computes_the_reference_at_its_price(monkeypatch, shape, mask, kt_view, plan):
    """Plans the planner would not pick on these shapes (key blocks with the second
    product transposed, several heads a step, one query row) still compute the
    reference with every cross-queue access ordered (races checked), and their price
    is within 10% of the simulated kernel."""
    lead, s_len, t, d, dv = shape
    mask_shape = {None: None, "row": (*lead, 1, t), "full": (*lead, s_len, t)}[mask]
    g = _graph(lead, s_len, t, d, dv, mask=mask_shape, kt_view=kt_view)
    monkeypatch.setattr("backend.attention.attention_plan", lambda hw, s: plan)
    report, _ = _check(g, "datacenter", _bindings(g, 2, mask_shape, -np.inf))
    node = next(n for _, n in g if n.op.startswith("attention"))
    s = attention_shape([g.nodes[j].type for j in node.inputs], node.type, 0.125, kt_view)
    assert fits(load_hardware("datacenter"), s, plan)
    sim = next(k.cycles for k in report.kernels if k.name.startswith("attention"))
    est = attention_cycles(load_hardware("datacenter"), s, plan).cycles
    assert abs(est - sim) <= 0.1 * sim, (est, sim)


def test_softmax_runs_beside_the_products():
    """The pipelined kernel keeps the array busy while the vector unit works: it
    takes less than its matrix and vector busy cycles end to end, its softmax passes
    run on the vector queue, and the plan's price says so too."""
    g = _graph((1, 4), 128, 128, 64, 64, mask=(1, 1, 128, 128))
    report, compiled = _check(g, "datacenter", _bindings(g, 4, (1, 1, 128, 128)))
    ins = compiled.program.instrs
    assert any(isinstance(i, Unary) and i.op == "exp" and i.queue == "vector" for i in ins)
    att = next(k for k in report.kernels if k.name.startswith("attention"))
    busy = report.busy["matrix"] + report.busy["vector"]
    hw = load_hardware("datacenter")
    assert att.cycles - hw.launch_cycles - 2 * hw.dram_latency_cycles < busy
    node = next(n for _, n in g if n.op.startswith("attention"))
    s = attention_shape([g.nodes[j].type for j in node.inputs], node.type, 0.125)
    cost = attention_cycles(hw, s, attention_plan(hw, s))
    assert cost.compute_cycles < cost.matrix_cycles + cost.vector_cycles
