"""Matmul epilogues without a bias and gated products (SwiGLU, GeGLU): each fused
kernel simulates to the reference, the cost model prices it within 10% of the
simulated cycles, and a gated product is one GEMM kernel that reads x once and keeps
two accumulators (no elementwise kernel of its own)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.costs import op_cost
from eqsat.fidelity import measure_program
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import Load, Matmul, load_hardware, simulate
from tests.backend.helpers import assert_matches, kernel_instrs, reference, run_backend
from tests.strategies import scaled

F32, BF16 = DType.F32, DType.BF16
TOLERANCE = 0.10  # |model - sim| / sim

# (op, extra operands beyond x and w: "r" a residual, "s" a scalar, "u" up weights, attrs)
OPS = [
    ("matmul_add", ["r"], {}),
    ("matmul_scale", ["s"], {}),
    ("matmul_relu", [], {}),
    ("matmul_gelu", [], {"approximate": "tanh"}),
    ("matmul_silu", [], {}),
    ("matmul_swiglu", ["u"], {}),
    ("matmul_geglu", ["u"], {"approximate": "none"}),
]
SHAPES = [  # (x shape, N, dtype): 3-D rows, an edge tile, K beyond one tile on edge
    ((1, 128, 512), 1408, F32),
    ((130, 96), 200, F32),
    ((64, 2048), 256, F32),
    ((2, 48, 160), 96, BF16),
]


def _graph(op: str, extra: list[str], attrs: dict, xs: tuple, n: int, dtype: DType):
    b = GraphBuilder(op)
    k = xs[-1]
    x = b.leaf("input", "x", TensorType(dtype, xs))
    w = b.leaf("param", "w", TensorType(dtype, (k, n)))
    ins = [x, w]
    for e in extra:
        if e == "r":
            ins.append(b.leaf("input", "r", TensorType(dtype, (*xs[:-1], n))))
        elif e == "s":
            ins.append(b.leaf("param", "s", TensorType(dtype, ())))
        else:
            ins.append(b.leaf("param", "u", TensorType(dtype, (k, n))))
    node = b.add(op, ins, attrs, "out")
    b.output("y", b.add("relu", [node], {}, "r_out"))
    return b.graph


def _node_cycles(graph, compiled, result, name: str = "out") -> int:
    i = next(i for i, nd in graph if nd.name == name)
    spans = {k.name: k.cycles for k in result.report.kernels}
    return sum(spans[k.name] for k in compiled.kernels if k.node == i)


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("op", "extra", "attrs"), OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize(("xs", "n", "dtype"), SHAPES, ids=str)
def test_kernel_matches_reference_and_cost_model(hw_name, op, extra, attrs, xs, n, dtype):
    graph = _graph(op, extra, attrs, xs, n, dtype)
    hw = load_hardware(hw_name)
    bindings = random_bindings(graph, 0)
    compiled = compile_graph(graph, hw, consts=bindings)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    i = next(i for i, nd in graph if nd.name == "out")
    node = graph.nodes[i]
    in_types = [graph.nodes[j].type for j in node.inputs]
    model = op_cost(hw, node.op, in_types, node.type, node.attr_dict).cycles
    sim = _node_cycles(graph, compiled, result)
    assert [k.node for k in compiled.kernels].count(i) == 1  # one kernel, no epilogue pass
    assert abs(model - sim) / sim <= TOLERANCE, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_gated_kernel_reads_x_once_into_two_accumulators(hw_name):
    """bf16 SwiGLU: the kernel issues two matmuls per A tile (one per weight matrix) and
    loads exactly the x bytes a single GEMM over the same tiles loads."""
    xs, n = (256, 512), 768
    graph = _graph("matmul_swiglu", ["u"], {}, xs, n, BF16)
    hw = load_hardware(hw_name)
    bindings = random_bindings(graph, 0)
    compiled = compile_graph(graph, hw, consts=bindings)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    assert_matches(graph, compiled.results(result.outputs), reference(graph, bindings))
    i = next(i for i, nd in graph if nd.name == "out")
    (name,) = [k.name for k in compiled.kernels if k.node == i]
    instrs = kernel_instrs(compiled, name)
    matmuls = [ins for ins in instrs if isinstance(ins, Matmul)]
    node = graph.nodes[i]
    cost = op_cost(hw, node.op, [graph.nodes[j].type for j in node.inputs], node.type, {})
    tm, tn, tk = cost.tile
    m, k = xs
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * math.ceil(k / tk)
    assert len(matmuls) == 2 * tiles
    # the two accumulators of a tile are distinct and read the same A tile
    first, second = matmuls[0], matmuls[1]
    assert first.a == second.a and first.acc.addr != second.acc.addr
    (x_buf,) = [buf for buf, (name, _) in compiled.inputs.items() if name == "x"]
    x_bytes = sum(
        ins.src.rows * ins.src.cols * 2
        for ins in instrs
        if isinstance(ins, Load) and ins.src.buffer == x_buf
    )
    reads_a = 1 if math.ceil(k / tk) == 1 else math.ceil(n / tn)
    assert x_bytes == reads_a * m * k * 2
    sim = _node_cycles(graph, compiled, result)
    assert abs(cost.cycles - sim) / sim <= TOLERANCE, f"model {cost.cycles}, simulated {sim}"


SWIGLU_FFN = """
model ffn {
  input x: f32[1, 64, 256]
  param w_gate: f32[256, 704]
  param w_up: f32[256, 704]
  param w_down: f32[704, 256]
  gate = matmul(x, w_gate)
  y = add(x, matmul(mul(mul(gate, sigmoid(gate)), matmul(x, w_up)), w_down))
  output y
}
"""


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_swiglu_ffn_runs_the_gated_product_in_the_matmul_epilogue(hw_name, tmp_path):
    from eqsat.loading import load_model

    path = tmp_path / "ffn.model"
    path.write_text(SWIGLU_FFN)
    loaded = load_model(path)
    hw = load_hardware(hw_name)
    graph = optimize(loaded.graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph
    bindings = loaded.bindings(0)
    compiled = compile_graph(graph, hw, consts=bindings)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    assert_matches(graph, compiled.results(result.outputs), reference(loaded.graph, bindings))
    kernel_ops = sorted(graph.nodes[k.node].op for k in compiled.kernels if k.node >= 0)
    # two GEMM kernels: the gated product, the down projection with the residual add
    assert kernel_ops == ["matmul_add", "matmul_swiglu"]


def test_a_call_used_twice_in_a_body_is_one_product():
    """matmul_silu's body names its product twice; matmul_swiglu has two products."""
    from eqsat.costs import kernel_work
    from eqsat.ops import REGISTRY

    x, w = TensorType(F32, (64, 32)), TensorType(F32, (32, 48))
    out = TensorType(F32, (64, 48))
    silu = REGISTRY["matmul_silu"]
    macs = 64 * 48 * 32
    sigmoid_mul = REGISTRY["silu"].flops([out], out, {})
    assert silu.flops([x, w], out, silu.bind_attrs({})) == 2 * macs + sigmoid_mul
    work = kernel_work("matmul_silu", [x, w], out, silu.bind_attrs({}))
    assert (work.macs, work.gemms, work.vector_ops) == (macs, 1, sigmoid_mul)
    swiglu = REGISTRY["matmul_swiglu"]
    work = kernel_work("matmul_swiglu", [x, w, w], out, swiglu.bind_attrs({}))
    assert (work.macs, work.gemms, work.n) == (2 * macs, 2, 48)
    assert work.vector_ops == sigmoid_mul + out.numel  # silu, then the gating product


@st.composite
def windowed_residuals(draw):
    """matmul_bias_add over [B, H, W, C] whose residual is an [H, W] window of a larger
    [B, H + dh, W + dw, N] map (rows in runs of W, dw apart), possibly broadcast over
    the batch or transposed in its row axes."""
    b, h, w = draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    # n >= 2: a bias of one element is a scalar the cost model takes for an immediate
    # (costs._epilogue_loads), where a param's is one more DMA
    c, n = draw(st.integers(1, 40)), draw(st.integers(2, 40))
    dh, dw = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    return dict(
        b=b, h=h, w=w, c=c, n=n, dh=dh, dw=dw,
        rb=draw(st.sampled_from([1, b])),
        swap=draw(st.booleans()) and h == w,
        hw=draw(st.sampled_from(["edge", "datacenter"])),
    )  # fmt: skip


@settings(max_examples=scaled(25), deadline=None)
@given(windowed_residuals())
def test_a_residual_window_of_a_larger_map_computes_the_reference(case):
    """The product folds its batch rows while its residual loads run by run (backend/
    gemm_kernel.py fold_batch_rows, views.RowsView): simulated == reference, and the
    price is the simulated cycles within 1%."""
    b, h, w, c, n = case["b"], case["h"], case["w"], case["c"], case["n"]
    g = GraphBuilder("window")
    x = g.leaf("input", "x", TensorType(F32, (b, h, w, c)))
    wt = g.leaf("param", "w", TensorType(F32, (c, n)))
    bias = g.leaf("param", "b", TensorType(F32, (n,)))
    big = g.leaf("input", "m", TensorType(F32, (case["rb"], h + case["dh"], w + case["dw"], n)))
    r = g.add("slice", [big], {"starts": (0, 0), "ends": (h, w), "axes": (1, 2)})
    if case["swap"]:
        r = g.add("transpose", [r], {"perm": (0, 2, 1, 3)})
    g.output("y", g.add("matmul_bias_add", [x, wt, bias, r]))
    graph = g.graph
    bindings = random_bindings(graph, 0)
    got, _, _ = run_backend(graph, case["hw"], bindings)
    assert_matches(graph, got, reference(graph, bindings))
    row = measure_program(graph, load_hardware(case["hw"]), bindings)
    # the GEMM loop replayed on the queues, the residual's DMAs run by run (a cycle or
    # two apart on the smallest products, whose steps the vector unit may take)
    assert abs(row.predicted - row.simulated) <= max(2, 0.01 * row.simulated), row
