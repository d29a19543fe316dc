"""Two chained products in one kernel (eqsat/ops/chain.py, backend/chain.py): the
intermediate h stays in SRAM, so the kernel stores only the output and loads no A for
the second product; the simulated result is the reference composition's, the cost
model prices the kernel as simulated, it is cheaper than the two kernels it replaces,
and it is priced unrunnable where h does not fit SRAM."""

from __future__ import annotations

import pytest

from eqsat.costs import UNRUNNABLE_CYCLES, op_cost
from eqsat.fidelity import measure_program
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from hwsim import Matmul, load_hardware
from hwsim.isa import Load, Store
from tests.backend.helpers import assert_matches, kernel_instrs, reference, run_backend

F32 = DType.F32
LN = "matmul_bias_gelu_matmul_bias_add_layernorm"
MLP = "matmul_bias_relu_matmul_bias"
PRE = "layernorm_matmul_bias_gelu_matmul_bias_add"  # GPT-2's feed-forward block


def _chain(op: str, lead: tuple[int, ...], k: int, n1: int, n: int):
    """op(x, w1, b1, w2, b2[, r, gamma, beta]) with x [*lead, k], h [*lead, n1]."""
    b = GraphBuilder("ffn")
    x = b.leaf("input", "x", TensorType(F32, (*lead, k)))
    w1 = b.leaf("param", "w1", TensorType(F32, (k, n1)))
    b1 = b.leaf("param", "b1", TensorType(F32, (n1,)))
    w2 = b.leaf("param", "w2", TensorType(F32, (n1, n)))
    b2 = b.leaf("param", "b2", TensorType(F32, (n,)))
    args = [x, w1, b1, w2, b2]
    attrs: dict[str, object] = {"approximate": "tanh"} if "gelu" in op else {}
    if "_add" in op:
        args.append(b.leaf("input", "r", TensorType(F32, (*lead, n))))
    if "layernorm" in op:  # of x's rows (a pre-norm block) or of the output's
        side = k if op.startswith("layernorm") else n
        args += [b.leaf("param", name, TensorType(F32, (side,))) for name in ("gamma", "beta")]
        attrs["eps"] = 1e-5
    b.output("y", b.add(op, args, attrs, "out"))
    return b.graph


@pytest.mark.parametrize(
    ("op", "lead", "k", "n1", "n"),
    [(LN, (2, 24), 32, 160, 48), (MLP, (160,), 96, 256, 64), (PRE, (1, 40), 48, 256, 48)],
)
def test_simulated_equals_reference_with_h_on_chip(op, lead, k, n1, n) -> None:
    graph = _chain(op, lead, k, n1, n)
    bindings = random_bindings(graph, 0)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert [kn.name for kn in compiled.kernels] == [f"{op}.out"]
    instrs = kernel_instrs(compiled, f"{op}.out")
    # only the output is stored, and h is never loaded: the loads are x, the weights
    # and the epilogues' operands, none of h's size
    stored = sum(i.src.rows * i.src.cols for i in instrs if isinstance(i, Store))
    assert stored == graph.nodes[graph.outputs[0][1]].type.numel
    rows = 1
    for d in lead:
        rows *= d
    assert all(i.dst.cols != n1 or i.dst.rows != rows for i in instrs if isinstance(i, Load))
    assert sum(isinstance(i, Matmul) for i in instrs) >= 2


@pytest.mark.parametrize(
    ("op", "lead", "k", "n1", "n"),
    [
        (LN, (1, 128), 256, 1024, 256),
        (MLP, (64,), 512, 2048, 512),
        (MLP, (16,), 256, 512, 128),
        (PRE, (1, 128), 256, 1024, 256),
    ],
)
def test_cost_model_prices_the_kernel_as_simulated(op, lead, k, n1, n) -> None:
    graph = _chain(op, lead, k, n1, n)
    row = measure_program(graph, load_hardware("datacenter"), random_bindings(graph, 0))
    (kernel,) = row.kernels
    assert abs(kernel.predicted - kernel.simulated) <= 0.01 * kernel.simulated, kernel


def test_cheaper_than_the_two_kernels_and_unrunnable_where_h_does_not_fit() -> None:
    hw = load_hardware("datacenter")
    x, w1, b1 = (TensorType(F32, s) for s in ((1, 128, 768), (768, 3072), (3072,)))
    w2, v = TensorType(F32, (3072, 768)), TensorType(F32, (768,))
    h, out = TensorType(F32, (1, 128, 3072)), TensorType(F32, (1, 128, 768))
    attrs = {"eps": 1e-12, "approximate": "none"}
    ins = [x, w1, b1, w2, v, out, v, v]
    first = op_cost(hw, "matmul_bias_gelu", [x, w1, b1], h, {"approximate": "none"})
    second = op_cost(hw, "matmul_bias_add_layernorm", [h, w2, v, out, v, v], out, attrs)
    fused = op_cost(hw, LN, ins, out, attrs)
    assert fused.feasible
    assert fused.cycles < first.cycles + second.cycles - hw.launch_cycles
    # edge's 256 KiB of SRAM cannot hold h (1.5 MiB)
    assert op_cost(load_hardware("edge"), LN, ins, out, attrs).cycles >= UNRUNNABLE_CYCLES
