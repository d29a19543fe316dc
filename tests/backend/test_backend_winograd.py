"""Winograd convolution F(2x2, 3x3) and F(4x4, 3x3) (eqsat/ops/winograd.py):
- the three registry ops compose to the direct convolution (hypothesis);
- the transform kernels simulate like the reference interpreter, with every epilogue,
  cropped last tiles and several images;
- the cost model's price of each transform kernel is its simulated cycles (the plan
  of eqsat/winograd_plan.py is what the backend emits);
- extraction takes the Winograd form only where it prices cheaper, and never for a
  strided convolution."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.costs import op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.ops.linalg import conv2d_ref
from eqsat.winograd_plan import input_instrs, input_plan, output_instrs, output_plan, sram_end
from hwsim import load_hardware
from tests.backend.helpers import assert_matches, reference, run_backend

F32 = DType.F32


def _winograd(x, w, m, pad, out_hw):
    v = REGISTRY["winograd_input"].ref([x], {"m": m, "padding": pad})
    u = REGISTRY["winograd_weight"].ref([w], {"m": m})
    return REGISTRY["winograd_output"].ref([np.matmul(v, u)], {"m": m, "size": out_hw})


@settings(max_examples=25, deadline=None)
@given(
    m=st.sampled_from([2, 4]),
    n=st.integers(1, 2),
    c=st.integers(1, 6),
    o=st.integers(1, 5),
    h=st.integers(3, 11),
    wd=st.integers(3, 11),
    pad=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    seed=st.integers(0, 2**16),
)
def test_the_three_ops_are_the_direct_convolution(m, n, c, o, h, wd, pad, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    want = conv2d_ref(x.astype(np.float64), w.astype(np.float64), (1, 1), pad)
    got = _winograd(x, w, m, pad, want.shape[2:])
    # inferred types agree with the values
    xt, wt = TensorType(F32, x.shape), TensorType(F32, w.shape)
    vt = REGISTRY["winograd_input"].type_of([xt], {"m": m, "padding": pad})
    ut = REGISTRY["winograd_weight"].type_of([wt], {"m": m})
    yt = REGISTRY["winograd_output"].type_of(
        [TensorType(F32, (vt.shape[0], vt.shape[1], ut.shape[2]))],
        {"m": m, "size": want.shape[2:]},
    )
    assert yt.shape == want.shape == got.shape
    scale = np.abs(x).max() * np.abs(w).max() * 9 * c
    err = np.abs(got - want).max() / scale
    assert err < (2e-7 if m == 2 else 2e-6), err


def _graph(n, c, o, hw_, m, pad, epilogue):
    h, wd = hw_
    ho, wo = h + 2 * pad - 2, wd + 2 * pad - 2
    b = GraphBuilder("w")
    x = b.leaf("input", "x", TensorType(F32, (n, c, h, wd)))
    w = b.leaf("param", "w", TensorType(F32, (o, c, 3, 3)))
    v = b.add("winograd_input", [x], {"m": m, "padding": [pad, pad]}, "v")
    u = b.add("winograd_weight", [w], {"m": m}, "u")
    t = b.add("matmul", [v, u], {}, "t")
    args = [t]
    if epilogue != "winograd_output":
        args.append(b.leaf("param", "b", TensorType(F32, (o, 1, 1))))
    if epilogue == "winograd_output_bias_add_relu":
        args.append(b.leaf("input", "r", TensorType(F32, (n, o, ho, wo))))
    b.output("y", b.add(epilogue, args, {"m": m, "size": [ho, wo]}, "y"))
    return b.graph


CASES = [  # n, c, o, (h, w), m, padding, op
    (1, 16, 16, (12, 12), 2, 1, "winograd_output_bias_relu"),
    (2, 8, 16, (11, 9), 4, 1, "winograd_output_bias_add_relu"),
    (1, 8, 8, (10, 7), 4, 0, "winograd_output"),
    (1, 16, 24, (7, 7), 2, 1, "winograd_output_bias"),
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("n", "c", "o", "hw_", "m", "pad", "op"), CASES)
def test_transform_kernels_simulate_the_reference_at_their_price(hw_name, n, c, o, hw_, m, pad, op):
    graph = _graph(n, c, o, hw_, m, pad, op)
    bindings = random_bindings(graph, 0)
    got, report, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    hw = load_hardware(hw_name)
    spans = {k.name: k.cycles for k in report.kernels}
    sim: dict[int, int] = collections.defaultdict(int)
    for k in compiled.kernels:
        sim[k.node] += spans[k.name]
    priced = 0
    for i, node in graph:
        if not node.op.startswith("winograd_") or node.op == "winograd_weight":
            continue
        types = [graph.nodes[j].type for j in node.inputs]
        model = op_cost(hw, node.op, types, node.type, node.attr_dict)
        assert model is not None and model.cycles == sim[i], (node.op, model, sim[i])
        priced += 1
    assert priced == 2


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_the_chosen_plans_fit_sram(hw_name):
    """The allocation a plan reports is where its tiles end, within the machine's SRAM
    (64 channels at 20x20, F(4, 3), every epilogue)."""
    hw = load_hardware(hw_name)
    p, _ = input_plan(hw, 1, 64, 4, 20, 20)
    instrs = input_instrs(p, "x", "v", max_steps=3)
    assert 0 < sram_end(instrs) <= instrs.sram <= hw.sram_bytes
    q, _ = output_plan(hw, 1, 64, 4, 20, 20, (True, True, True))
    instrs = output_instrs(q, "t", "y", "b", "r", max_steps=3)
    assert 0 < sram_end(instrs) <= instrs.sram <= hw.sram_bytes


def test_a_weight_transform_of_a_runtime_tensor_is_unrunnable():
    hw = load_hardware("edge")
    w = TensorType(F32, (8, 8, 3, 3))
    cost = op_cost(hw, "winograd_weight", [w], TensorType(F32, (16, 8, 8)), {"m": 2})
    assert cost is not None and not cost.feasible


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize("side", [8, 7])
def test_a_residual_a_pool_left_pixel_major_is_turned_on_chip(hw_name, side):
    """ResNet's first block: the residual is the max pool's NHWC output. The output
    transform loads it pixel-major and transposes it (no copy kernel), at the price of
    the row-major plan plus those transposes."""
    b = GraphBuilder("w")
    x = b.leaf("input", "x", TensorType(F32, (1, 16, 2 * side, 2 * side)))
    pool = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]}
    p = b.add("max_pool2d", [x], pool, "p")
    w = b.leaf("param", "w", TensorType(F32, (16, 16, 3, 3)))
    v = b.add("winograd_input", [p], {"m": 4, "padding": [1, 1]}, "v")
    t = b.add("matmul", [v, b.add("winograd_weight", [w], {"m": 4}, "u")], {}, "t")
    bias = b.leaf("param", "b", TensorType(F32, (16, 1, 1)))
    attrs = {"m": 4, "size": [side, side]}
    b.output("y", b.add("winograd_output_bias_add_relu", [t, bias, p], attrs, "y"))
    graph = b.graph
    bindings = random_bindings(graph, 0)
    got, report, compiled = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    names = [k.name for k in compiled.kernels]
    assert not any(n.startswith("copy.") for n in names), names
    (node,) = [i for i, n in graph if n.op == "winograd_output_bias_add_relu"]
    sim = sum(k.cycles for k in report.kernels if k.name.startswith("winograd_output"))
    n = graph.nodes[node]
    model = op_cost(
        load_hardware(hw_name), n.op, [graph.nodes[j].type for j in n.inputs], n.type, n.attr_dict
    )
    assert abs(model.cycles - sim) <= 0.1 * sim, (model.cycles, sim)


def _fused_graph(n, c, o, hw_, m, pad, op):
    h, wd = hw_
    ho, wo = h + 2 * pad - 2, wd + 2 * pad - 2
    b = GraphBuilder("w")
    x = b.leaf("input", "x", TensorType(F32, (n, c, h, wd)))
    w = b.leaf("param", "w", TensorType(F32, (o, c, 3, 3)))
    args = [x, b.add("winograd_weight", [w], {"m": m}, "u")]
    if op != "winograd_conv":
        args.append(b.leaf("param", "b", TensorType(F32, (o, 1, 1))))
    if op == "winograd_conv_bias_add_relu":
        args.append(b.leaf("input", "r", TensorType(F32, (n, o, ho, wo))))
    attrs = {"m": m, "padding": [pad, pad], "size": [ho, wo]}
    b.output("y", b.add(op, args, attrs, "y"))
    return b.graph


FUSED_CASES = [  # n, c, o, (h, w), m, padding, op, forced (tile rows per step, flat)
    (2, 8, 16, (11, 9), 4, 1, "winograd_conv_bias_add_relu", None),  # cropped rows, 2 images
    (1, 16, 16, (12, 12), 2, 1, "winograd_conv_bias_relu", (2, True)),  # 3 steps, spare tiles
    (1, 8, 8, (10, 7), 4, 0, "winograd_conv", (1, False)),  # no padding, one tile row a step
    (1, 16, 24, (7, 7), 2, 1, "winograd_conv_bias", (4, False)),  # a short last step
]


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("n", "c", "o", "hw_", "m", "pad", "op", "forced"), FUSED_CASES)
def test_the_fused_kernel_simulates_the_reference_at_its_price(
    hw_name, n, c, o, hw_, m, pad, op, forced, monkeypatch
):
    """The whole convolution in one kernel (eqsat/winograd_fused.py): x read NCHW with
    no padding kernel, packed products where the channels leave the array room
    (datacenter), several steps reusing their slots; the simulated cycles are the
    plan's price (the cost model's when the plan is its own choice)."""
    import backend.winograd as lowering
    from eqsat.winograd_fused import ConvPlan, conv_instrs, conv_plan
    from eqsat.winograd_plan import plan_cycles

    hw = load_hardware(hw_name)
    h, wd = hw_
    ho, wo = h + 2 * pad - 2, wd + 2 * pad - 2
    epilogue = {
        "winograd_conv": (False, False, False),
        "winograd_conv_bias": (True, False, False),
        "winograd_conv_bias_relu": (True, False, True),
        "winograd_conv_bias_add_relu": (True, True, True),
    }[op]
    chosen = conv_plan(hw, n, c, o, h, wd, m, (pad, pad), epilogue)
    assert chosen is not None
    plan = chosen[0]
    if forced is not None:
        plan = ConvPlan(
            n, c, o, h, wd, m, pad, pad, ho, wo, forced[0], plan.pack, forced[1], *epilogue
        )
        price = plan_cycles(hw, conv_instrs(plan, "x", "u", "y", "b", "r" if epilogue[1] else None))
        monkeypatch.setattr(lowering, "conv_plan", lambda *a: (plan, price))
    if hw_name == "datacenter":
        assert plan.pack > 1  # small channels: transform points share one product
    graph = _fused_graph(n, c, o, hw_, m, pad, op)
    bindings = random_bindings(graph, 0)
    got, report, _ = run_backend(graph, hw_name, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    (kernel,) = [k for k in report.kernels if k.name.startswith("winograd_conv")]
    assert len(report.kernels) == 1, [k.name for k in report.kernels]  # no prep kernel
    if forced is None:
        (node,) = [nd for _, nd in graph if nd.op == op]
        types = [graph.nodes[j].type for j in node.inputs]
        model = op_cost(hw, op, types, node.type, node.attr_dict)
        assert model is not None and model.cycles == kernel.cycles, (model, kernel.cycles)
    else:
        assert kernel.cycles == price, (kernel.cycles, price)
