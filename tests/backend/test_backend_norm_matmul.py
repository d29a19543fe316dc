"""A normalization in a product's prologue (layernorm_matmul*, rmsnorm_matmul): one
kernel whose A panels are normalized on chip; the simulated result is the reference
composition's, the norm's instructions run once per panel, the cost model prices the
fused kernel, and extraction takes it only where the norm has no other reader."""

from __future__ import annotations

import pytest

from eqsat.costs import UNRUNNABLE_CYCLES, op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import Matmul, Reduce, load_hardware
from tests.backend.helpers import assert_matches, kernel_instrs, reference, run_backend

F32 = DType.F32
# x [2, 24, 32]: two batch indices of one weight, their rows folded into one panel of 48
# (backend/gemm_kernel.py fold_batch_rows)
ROWS, K, N = 24, 32, 48


def _fused(op: str, attrs: dict):
    b = GraphBuilder(op)
    x = b.leaf("input", "x", TensorType(F32, (2, ROWS, K)))
    w = b.leaf("param", "w", TensorType(F32, (K, N)))
    ins = [x, w]
    if "swiglu" in op:  # the up projection's weights
        ins.append(b.leaf("param", "wu", TensorType(F32, (K, N))))
    if "bias" in op:
        ins.append(b.leaf("param", "b", TensorType(F32, (N,))))
    ins.append(b.leaf("param", "gamma", TensorType(F32, (K,))))
    if op.startswith("layernorm"):
        ins.append(b.leaf("param", "beta", TensorType(F32, (K,))))
    b.output("y", b.add(op, ins, attrs, "out"))
    return b.graph


CASES = [
    ("layernorm_matmul", {"eps": 1e-5}),
    ("layernorm_matmul_bias", {"eps": 1e-5}),
    ("layernorm_matmul_bias_gelu", {"eps": 1e-5, "approximate": "none"}),
    ("rmsnorm_matmul", {"eps": 1e-6}),
    ("rmsnorm_matmul_swiglu", {"eps": 1e-6}),
]


@pytest.mark.parametrize(("op", "attrs"), CASES)
def test_simulated_equals_reference_in_one_kernel(op: str, attrs: dict) -> None:
    graph = _fused(op, attrs)
    bindings = random_bindings(graph, 0)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert [k.name for k in compiled.kernels] == [f"{op}.out"]
    instrs = kernel_instrs(compiled, f"{op}.out")
    # the row program runs once per A panel (one: the batch's rows folded), one product
    sums = 2 if op.startswith("layernorm") else 1  # mean and variance; mean square
    assert sum(isinstance(i, Reduce) for i in instrs) == sums
    products = 2 if "swiglu" in op else 1  # gate and up: two accumulators
    assert sum(isinstance(i, Matmul) for i in instrs) == products


def test_cost_is_the_product_plus_the_prologue_and_unrunnable_when_k_is_cut() -> None:
    hw = load_hardware("datacenter")
    x, w, b = (TensorType(F32, s) for s in ((1, 128, 768), (768, 3072), (3072,)))
    g = TensorType(F32, (768,))
    out = TensorType(F32, (1, 128, 3072))
    inner = op_cost(hw, "matmul_bias", [x, w, b], out, {})
    fused = op_cost(hw, "layernorm_matmul_bias", [x, w, b, g, g], out, {"eps": 1e-5})
    norm = op_cost(hw, "layernorm", [x, g, g], x, {"eps": 1e-5})
    assert inner.cycles < fused.cycles < inner.cycles + norm.cycles
    # edge's tiles cut K = 768: the fused kernel cannot run there
    edge = load_hardware("edge")
    cut = op_cost(edge, "layernorm_matmul_bias", [x, w, b, g, g], out, {"eps": 1e-5})
    assert cut.cycles >= UNRUNNABLE_CYCLES


def _pre_norm(shared: bool):
    """gelu(layernorm(x) @ w + b), the norm also read by an add when `shared`."""
    b = GraphBuilder("pre_norm")
    x = b.leaf("input", "x", TensorType(F32, (1, 128, 256)))
    gamma = b.leaf("param", "gamma", TensorType(F32, (256,)))
    beta = b.leaf("param", "beta", TensorType(F32, (256,)))
    w = b.leaf("param", "w", TensorType(F32, (256, 512)))
    bias = b.leaf("param", "b", TensorType(F32, (512,)))
    h = b.add("layernorm", [x, gamma, beta], {"eps": 1e-5}, "h")
    y = b.add("gelu", [b.add("add", [b.add("matmul", [h, w], {}), bias], {})], {})
    b.output("y", y)
    if shared:
        b.output("r", b.add("relu", [h], {}, "r"))
    return b.graph


@pytest.mark.parametrize("shared", [False, True])
def test_extraction_fuses_the_norm_only_when_nothing_else_reads_it(shared: bool) -> None:
    hw = load_hardware("datacenter")
    rules = compile_rule_paths([DEFAULT_RULES_DIR / "fusion.rules"])
    graph = _pre_norm(shared)
    result = optimize(graph, rules, hw)
    live = result.graph.live()
    kernels = sorted(n.op for i, n in result.graph if live[i] and not n.is_leaf)
    if shared:  # fusing would normalize twice: the norm stays one kernel
        assert kernels == ["layernorm", "matmul_bias_gelu", "relu"]
    else:
        assert kernels == ["layernorm_matmul_bias_gelu"]
    bindings = random_bindings(graph, 0)
    got, _, _ = run_backend(result.graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
