"""Int8 through whole CNNs: the qconv2d epilogue kernels (eqsat/ops/quant_conv.py),
depthwise qconv2d and max pooling on i8. One integer semantics: the interpreter,
hwsim and an exact Python-integer reference agree bit for bit; quantized residual and
inverted-residual blocks run int8 between their convolutions and simulate exactly as
they run; the cost model prices the kernels as the backend emits them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.config import Limits
from eqsat.costs import op_cost
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops.quant_conv import clamp_bounds
from eqsat.pipeline import optimize
from eqsat.quant import cli as quant_cli
from eqsat.quant.run import int8_kernels
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.quant.helpers import args
from tests.quant.test_int_semantics import exact_requantize

HW = {name: load_hardware(name) for name in ("edge", "datacenter")}
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
I32 = (-(2**31), 2**31 - 1)


def _int8_rules():
    """The bundled rules but Winograd's: these tests are about the int8 convolutions and
    their epilogues, and on blocks this small the one-kernel float Winograd convolution
    prices within a few percent of the int8 one on `edge`, so extraction may take
    either (the Winograd choice has tests of its own in rules/winograd.rules)."""
    paths = [p for p in sorted(DEFAULT_RULES_DIR.glob("*.rules")) if p.stem != "winograd"]
    return compile_rule_paths(paths, include_approx=True)


def quantized(graph, hw_name: str = "edge"):
    """(optimize result with .quant, bindings), as tests.quant.helpers.quantized, with
    a wall-time limit that a loaded machine does not reach (the default can stop
    saturation before the int8 rules ran)."""
    hw = HW[hw_name]
    bindings = random_bindings(graph, 0)
    run = quant_cli.prepare(args(), graph, hw.rounding, bindings, warn=lambda m: None)
    limits = Limits(time_limit=600.0)
    result = optimize(
        run.plan.graph, _int8_rules(), hw, facts=run.plan.seeds, baseline=graph, limits=limits
    )
    quant_cli.measure(run, graph, result.graph)
    result.quant = run
    return result, bindings


def simulated(graph, bind: dict, hw_name: str, runtime=("x", "r")) -> dict[str, np.ndarray]:
    hw = HW[hw_name]
    consts = {k: v for k, v in bind.items() if k not in runtime}
    compiled = compile_graph(graph, hw, consts=consts)
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    return compiled.results(result.outputs)


@FEW
@given(
    c=st.integers(1, 6),
    hw_=st.integers(1, 5),
    scale=st.floats(1e-3, 10.0),
    zp=st.integers(-128, 127),
    clamp=st.sampled_from([(None, None), (0.0, None), (0.0, 6.0), (-1.0, 0.5)]),
    hw_name=st.sampled_from(["edge", "datacenter"]),
    seed=st.integers(0, 2**16),
)
def test_requantize_ch_interpreter_hwsim_and_integer_reference(
    c, hw_, scale, zp, clamp, hw_name, seed
):
    """requantize_ch of an NCHW accumulator with one scale per channel and a real clamp:
    the interpreter and hwsim equal round(x * m[c] / 2**k[c]) + zp clamped to the
    quantized bounds, computed with Python integers (i32 extremes included)."""
    rng = np.random.default_rng(seed)
    rounding = HW[hw_name].rounding
    shape = (1, c, hw_, hw_ + 1)
    acc = rng.integers(-(2**20), 2**20, shape).astype(np.int32)
    acc.flat[0], acc.flat[-1] = I32
    s = (rng.random((c, 1, 1)) * 0.02 * scale + 1e-6).astype(np.float32)
    attrs = {"scale": scale, "zero_point": zp, "rounding": rounding}
    lo_r, hi_r = clamp
    if lo_r is not None:
        attrs["min"] = lo_r
    if hi_r is not None:
        attrs["max"] = hi_r
    b = GraphBuilder("rq")
    x = b.leaf("input", "x", TensorType(DType.I32, shape))
    sn = b.leaf("param", "s", TensorType(DType.F32, (c, 1, 1)))
    b.output("y", b.add("requantize_ch", (x, sn), attrs, "y"))
    bind = {"x": acc, "s": s}
    got = evaluate(b.graph, bind)["y"]
    lo, hi = clamp_bounds(
        scale, zp, -np.inf if lo_r is None else lo_r, np.inf if hi_r is None else hi_r
    )
    want = np.empty(shape, np.int8)
    for idx in np.ndindex(shape):
        ch_scale = float(np.float64(s[idx[1], 0, 0]) / scale)
        want[idx] = exact_requantize(int(acc[idx]), ch_scale, zp, rounding, lo, hi)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(simulated(b.graph, bind, hw_name)["y"], want)


KERNELS = (
    "qconv2d",
    "qconv2d_bias_requant",
    "qconv2d_bias_dequant",
    "qconv2d_bias_dequant_add",
    "qconv2d_bias_dequant_add_relu",
    "qconv2d_bias_add_requant",
    "qconv2d_bias_dequant_silu",
    "qconv2d_bias_silu_quant",
)


def _kernel_case(op, c, o, h, k, stride, pad, depthwise, za, seed, rounding, mult=1):
    """A graph of one int8 convolution kernel and its bindings (depthwise: `mult`
    output channels per input channel)."""
    rng = np.random.default_rng(seed)
    groups = c if depthwise else 1
    o = c * mult if depthwise else o
    ho = (h + 2 * pad - k) // stride + 1
    b = GraphBuilder("k")
    x = b.leaf("input", "x", TensorType(DType.I8, (1, c, h, h + 1)))
    w = b.leaf("param", "w", TensorType(DType.I8, (o, c // groups, k, k)))
    bind = {
        "x": rng.integers(-128, 128, (1, c, h, h + 1)).astype(np.int8),
        "w": rng.integers(-127, 128, (o, c // groups, k, k)).astype(np.int8),
        "b": rng.integers(-20_000, 20_000, (o, 1, 1)).astype(np.int32),
        "s": (rng.random((o, 1, 1)) * 1e-3 + 1e-5).astype(np.float32),
    }
    attrs: dict = {"a_zero": za, "stride": [stride] * 2, "padding": [pad] * 2, "groups": groups}
    ins = [x, w]
    if op != "qconv2d":
        ins += [
            b.leaf("param", "b", TensorType(DType.I32, (o, 1, 1))),
            b.leaf("param", "s", TensorType(DType.F32, (o, 1, 1))),
        ]
    out_shape = (1, o, ho, (h + 1 + 2 * pad - k) // stride + 1)
    if op in ("qconv2d_bias_dequant_add", "qconv2d_bias_dequant_add_relu"):
        ins.append(b.leaf("input", "r", TensorType(DType.F32, out_shape)))
        bind["r"] = rng.standard_normal(out_shape).astype(np.float32)
    if op == "qconv2d_bias_add_requant":
        ins.append(b.leaf("input", "r", TensorType(DType.I8, out_shape)))
        bind["r"] = rng.integers(-128, 128, out_shape).astype(np.int8)
        attrs.update(r_scale=0.04, r_zero=-5, scale=0.05, zero_point=9, min=0.0, max=6.0)
    if op == "qconv2d_bias_requant":
        attrs.update(scale=0.07, zero_point=-20, min=0.0, max=6.0, rounding=rounding)
    if op == "qconv2d_bias_silu_quant":
        attrs.update(scale=0.03, zero_point=-100)
    b.output("y", b.add(op, tuple(ins), attrs, "y"))
    return b.graph, bind


@FEW
@given(
    op=st.sampled_from(KERNELS),
    c=st.integers(1, 8),
    o=st.integers(1, 9),
    h=st.integers(3, 6),
    k=st.sampled_from([1, 3]),
    stride=st.sampled_from([1, 2]),
    pad=st.sampled_from([0, 1]),
    depthwise=st.booleans(),
    za=st.integers(-128, 127),
    hw_name=st.sampled_from(["edge", "datacenter"]),
    seed=st.integers(0, 2**16),
)
def test_int8_conv_kernels_simulate_bit_exact(
    op, c, o, h, k, stride, pad, depthwise, za, hw_name, seed
):
    """Every int8 convolution kernel (ungrouped: an implicit GEMM or a pointwise
    matmul; depthwise: a window kernel on the vector unit) simulates to exactly what
    the interpreter computes (f32 results: the same f32 operations, bit for bit). A
    depthwise one has channel multiplier 2 for an even o."""
    if k > h:
        k = 1
    graph, bind = _kernel_case(
        op, c, o, h, k, stride, pad, depthwise, za, seed, HW[hw_name].rounding, 2 - o % 2
    )
    want = evaluate(graph, bind)["y"]
    got = simulated(graph, bind, hw_name)["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "op, depthwise",
    [
        ("qconv2d_bias_requant", True),
        ("qconv2d_bias_dequant", True),
        ("qconv2d_bias_requant", False),
        ("qconv2d_bias_silu_quant", False),
        ("qconv2d_bias_dequant_silu", True),
    ],
)
def test_int8_conv_kernel_cost_is_the_simulated_one(op, depthwise):
    """The cost model prices a depthwise int8 window kernel (its per-channel
    requantize instructions, zero-point correction and prep) and an int8 implicit GEMM
    within 10% of their simulated cycles."""
    hw = HW["edge"]
    graph, bind = _kernel_case(op, 32, 32, 14, 3, 1, 1, depthwise, -7, 0, hw.rounding)
    compiled = compile_graph(graph, hw, consts={k: v for k, v in bind.items() if k != "x"})
    result = simulate(compiled.program, hw, compiled.feeds(bind))
    spans = {k.name: k.cycles for k in result.report.kernels}
    node = len(graph.nodes) - 1
    # the node's kernels, not the copy of its NHWC result into the graph's NCHW output
    sim = sum(
        spans[k.name]
        for k in compiled.kernels
        if k.node == node and not k.name.startswith("output.")
    )
    n = graph.nodes[node]
    est = op_cost(hw, n.op, [graph.nodes[j].type for j in n.inputs], n.type, n.attr_dict)
    assert est is not None
    assert abs(est.cycles / sim - 1) < 0.10, (est.cycles, sim)


BLOCK = """
model block {
  input x: f32[1, 16, 8, 8]
  param w0: f32[16, 16, 3, 3]
  param b0: f32[16, 1, 1]
  param w1: f32[16, 16, 3, 3]
  param g1: f32[16, 1, 1]
  param b1: f32[16, 1, 1]
  param w2: f32[16, 16, 3, 3]
  param b2: f32[16, 1, 1]
  param w3: f32[8, 16, 1, 1]
  s = max_pool2d(relu(add(conv2d(x, w0, padding=[1, 1]), b0)), kernel=[3, 3], stride=[1, 1], padding=[1, 1, 1, 1])
  h = relu(add(mul(conv2d(s, w1, padding=[1, 1]), g1), b1))
  r = relu(add(add(conv2d(h, w2, padding=[1, 1]), b2), s))
  y = conv2d(r, w3)
  output y
}
"""

MBCONV = """
model mbconv {
  input x: f32[1, 8, 8, 8]
  param we: f32[32, 8, 1, 1]
  param be: f32[32, 1, 1]
  param wd: f32[32, 1, 3, 3]
  param bd: f32[32, 1, 1]
  param wp: f32[8, 32, 1, 1]
  param bp: f32[8, 1, 1]
  param wn: f32[64, 8, 3, 3]
  e = clip(add(conv2d(x, we), be), min=0, max=6)
  d = clip(add(conv2d(e, wd, padding=[1, 1], groups=32), bd), min=0, max=6)
  p = add(add(conv2d(d, wp), bp), x)
  y = conv2d(p, wn, padding=[1, 1])
  output y
}
"""


@pytest.mark.parametrize(
    "text, fused",
    [
        (BLOCK, {"qconv2d_bias_requant", "qconv2d_bias_add_requant", "max_pool2d"}),
        (MBCONV, {"qconv2d_bias_requant", "qconv2d_bias_add_requant"}),
    ],
    ids=["residual", "inverted-residual"],
)
def test_quantized_blocks_stay_int8_and_simulate_as_they_run(text, fused):
    """`--quantize int8` of a residual block (batch norm, ReLU, max pooling, identity
    shortcut) and of a MobileNetV2 block (ReLU6, depthwise, linear bottleneck with a
    shortcut): their convolutions run as int8 kernels whose epilogues do the bias,
    activation and residual add, no float convolution or separate requantization
    is left, and the simulated program equals `eqsat run` of it exactly."""
    graph = check_model(parse_model(text), {})
    result, bindings = quantized(graph)
    q = result.graph
    ops = {n.op for _, n in q if not n.is_leaf}
    assert fused <= ops, ops
    live = q.live()
    assert not any(
        live[i] and n.op.startswith(("conv2d", "requantize", "quantize", "relu", "clip"))
        for i, n in q
        if not (n.op == "quantize" and q.nodes[n.inputs[0]].op == "input")
    ), sorted(ops)
    depthwise = [n for _, n in q if n.op.startswith("qconv2d") and n.attr_dict.get("groups", 1) > 1]
    assert depthwise or "groups" not in text
    assert int8_kernels(q) >= 3
    assert min(result.quant.sqnr.values()) >= 30
    feeds = {**bindings, **result.quant.all_params}
    want = evaluate(q, feeds)
    runtime = tuple(str(n.attr("name")) for _, n in q.inputs)
    got = simulated(q, feeds, "edge", runtime)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


def test_int8_conv_kernels_on_iree_match_the_interpreter_exactly():
    """The MLIR emitter's int8 convolutions (depthwise too), requantize_ch tables and
    residual epilogue: IREE computes every integer value the interpreter does."""
    pytest.importorskip("iree.compiler")
    pytest.importorskip("iree.runtime")
    from backend.mlir import emit_mlir
    from backend.mlir.iree import run_iree

    rng = np.random.default_rng(3)
    b = GraphBuilder("m")
    x = b.leaf("input", "x", TensorType(DType.I8, (1, 4, 6, 6)))
    r = b.leaf("input", "r", TensorType(DType.I8, (1, 4, 6, 6)))
    leaves = {
        "wd": (DType.I8, (4, 1, 3, 3)),
        "w": (DType.I8, (4, 4, 1, 1)),
        "b": (DType.I32, (4, 1, 1)),
        "s": (DType.F32, (4, 1, 1)),
    }
    p = {k: b.leaf("param", k, TensorType(dt, sh)) for k, (dt, sh) in leaves.items()}
    conv = {"a_zero": 5, "padding": [1, 1], "groups": 4}
    d = b.add(
        "qconv2d_bias_requant",
        (x, p["wd"], p["b"], p["s"]),
        {**conv, "scale": 0.05, "zero_point": -3, "min": 0.0, "max": 6.0},
        "d",
    )
    y = b.add(
        "qconv2d_bias_add_requant",
        (d, p["w"], p["b"], p["s"], r),
        {"a_zero": -3, "r_scale": 0.03, "r_zero": 2, "scale": 0.06, "zero_point": 1},
        "y",
    )
    b.output("d", d)
    b.output("y", y)
    params = {
        "wd": rng.integers(-127, 128, (4, 1, 3, 3)).astype(np.int8),
        "w": rng.integers(-127, 128, (4, 4, 1, 1)).astype(np.int8),
        "b": rng.integers(-3000, 3000, (4, 1, 1)).astype(np.int32),
        "s": (rng.random((4, 1, 1)) * 1e-3 + 1e-4).astype(np.float32),
    }
    feeds = {
        "x": rng.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8),
        "r": rng.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8),
        **params,
    }
    module = emit_mlir(b.graph, consts=params)
    got = run_iree(module, feeds).outputs
    for name, value in evaluate(b.graph, feeds).items():
        np.testing.assert_array_equal(got[name], value)
