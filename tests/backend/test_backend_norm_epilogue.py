"""A normalization in a product's epilogue (matmul_bias_add_layernorm): one kernel whose
output tiles hold whole rows, normalized on chip after the bias and the residual add;
the simulated result is the reference composition's, the row program runs once per
output tile, the cost model prices the kernel as simulated, and on a machine whose
tiles cannot hold whole rows it is priced unrunnable. Also the GEMM loop these
kernels share: its first K step in pieces, priced as simulated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.costs import UNRUNNABLE_CYCLES, op_cost
from eqsat.fidelity import measure_program
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.norm_epilogue import row_chunks
from hwsim import Matmul, Reduce, load_hardware
from hwsim.isa import Store
from tests.backend.helpers import assert_matches, kernel_instrs, reference, run_backend

F32 = DType.F32
OP = "matmul_bias_add_layernorm"


def _fused(batch: int, m: int, k: int, n: int, dt: DType = F32):
    b = GraphBuilder("post_norm")
    x = b.leaf("input", "x", TensorType(dt, (batch, m, k)))
    w = b.leaf("param", "w", TensorType(dt, (k, n)))
    bias = b.leaf("param", "b", TensorType(dt, (n,)))
    r = b.leaf("input", "r", TensorType(dt, (batch, m, n)))
    gamma = b.leaf("param", "gamma", TensorType(dt, (n,)))
    beta = b.leaf("param", "beta", TensorType(dt, (n,)))
    b.output("y", b.add(OP, [x, w, bias, r, gamma, beta], {"eps": 1e-5}, "out"))
    return b.graph


def test_simulated_equals_reference_in_one_kernel() -> None:
    # two batch indices of one weight: their rows fold into one M of 48 (backend/
    # gemm_kernel.py fold_batch_rows), one output tile of whole rows
    graph = _fused(2, 24, 32, 48)
    bindings = random_bindings(graph, 0)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert [k.name for k in compiled.kernels] == [f"{OP}.out"]
    instrs = kernel_instrs(compiled, f"{OP}.out")
    # one product per output tile, then the row program (mean and variance) on it
    assert sum(isinstance(i, Matmul) for i in instrs) == 1
    assert sum(isinstance(i, Reduce) for i in instrs) == 2


def test_rows_past_one_tile_and_k_in_steps_match_the_reference() -> None:
    # M = 160 rows: two output tiles of the 128-row array; K = 640 > 512: the K loop
    # may take several steps before each tile's epilogue
    graph = _fused(1, 160, 640, 96)
    bindings = random_bindings(graph, 1)
    got, _, _ = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))


@pytest.mark.parametrize(("m", "k", "n"), [(128, 256, 384), (160, 128, 256)])
def test_cost_model_prices_the_kernel_as_simulated(m: int, k: int, n: int) -> None:
    graph = _fused(1, m, k, n)
    row = measure_program(graph, load_hardware("datacenter"), random_bindings(graph, 0))
    (kernel,) = row.kernels
    assert abs(kernel.predicted - kernel.simulated) <= 0.01 * kernel.simulated, kernel


def test_cheaper_than_the_two_kernels_and_unrunnable_without_whole_rows() -> None:
    hw = load_hardware("datacenter")
    x, w, b = (TensorType(F32, s) for s in ((1, 128, 768), (768, 768), (768,)))
    g = TensorType(F32, (768,))
    out = TensorType(F32, (1, 128, 768))
    inner = op_cost(hw, "matmul_bias_add", [x, w, b, out], out, {})
    norm = op_cost(hw, "layernorm", [out, g, g], out, {"eps": 1e-5})
    fused = op_cost(hw, OP, [x, w, b, out, g, g], out, {"eps": 1e-5})
    assert fused.feasible and fused.tile[1] == 768
    assert fused.cycles < inner.cycles + norm.cycles
    # edge's accumulator and SRAM hold no output tile of 768 whole rows and its scratch
    edge = load_hardware("edge")
    cut = op_cost(edge, OP, [x, w, b, out, g, g], out, {"eps": 1e-5})
    assert cut.cycles >= UNRUNNABLE_CYCLES


def test_a_residual_that_broadcasts_the_product_runs_as_two_kernels() -> None:
    # x@w is [3, 16]; the residual [2, 3, 16] broadcasts it: no tile holds the output's
    # rows as the product's, so the product with its epilogue runs, then the norm
    b = GraphBuilder("broadcast")
    x = b.leaf("input", "x", TensorType(F32, (3, 8)))
    w = b.leaf("param", "w", TensorType(F32, (8, 16)))
    bias = b.leaf("param", "b", TensorType(F32, (16,)))
    r = b.leaf("input", "r", TensorType(F32, (2, 3, 16)))
    gamma = b.leaf("param", "gamma", TensorType(F32, (16,)))
    beta = b.leaf("param", "beta", TensorType(F32, (16,)))
    b.output("y", b.add(OP, [x, w, bias, r, gamma, beta], {"eps": 1e-5}, "out"))
    graph = b.graph
    bindings = random_bindings(graph, 0)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert f"{OP}.out.norm" in [k.name for k in compiled.kernels]


def test_the_rows_are_normalized_and_stored_in_chunks() -> None:
    # 128 rows of 384 on datacenter: the last K step runs in row pieces (one matmul
    # each), and row_chunks cuts each piece so that each chunk's store runs under the
    # next chunk's program; one store per chunk, all on the vector queue's side
    graph = _fused(1, 128, 256, 384)
    bindings = random_bindings(graph, 2)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    instrs = kernel_instrs(compiled, f"{OP}.out")
    products = [i for i in instrs if isinstance(i, Matmul)]
    pieces = [p.a.rows for p in products if p.a.rows < 128]
    assert len(pieces) > 1 and sum(pieces) == 128
    hw = load_hardware("datacenter")
    chunks = [rc for rp in pieces for _, rc in row_chunks(hw, "layernorm", rp, 384, "f32")]
    stores = [i for i in instrs if isinstance(i, Store)]
    assert [s.src.rows for s in stores] == chunks
    assert all(i.queue == "vector" for i in instrs if isinstance(i, Reduce))


def test_a_gemm_starts_on_the_first_pieces_of_its_first_k_step() -> None:
    # matmul_bias 128 x 512 x 512 on datacenter: the first K step runs as the pieces
    # first_pieces says (A's resident panel and B's tile alike), priced as simulated
    b = GraphBuilder("gemm")
    x = b.leaf("input", "x", TensorType(F32, (128, 512)))
    w = b.leaf("param", "w", TensorType(F32, (512, 512)))
    bias = b.leaf("param", "b", TensorType(F32, (512,)))
    b.output("y", b.add("matmul_bias", [x, w, bias], {}, "out"))
    graph = b.graph
    bindings = random_bindings(graph, 0)
    got, _, compiled = run_backend(graph, "datacenter", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    products = [i for i in kernel_instrs(compiled, "matmul_bias.out") if isinstance(i, Matmul)]
    assert any(p.a.cols < 512 for p in products[:2])  # the first step in pieces
    row = measure_program(graph, load_hardware("datacenter"), bindings)
    (kernel,) = row.kernels
    assert abs(kernel.predicted - kernel.simulated) <= 0.01 * kernel.simulated, kernel


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 2),
    m=st.integers(1, 300),
    k=st.sampled_from([32, 160, 384]),
    n=st.sampled_from([16, 96, 200]),
    dt=st.sampled_from([F32, DType.BF16]),
    preset=st.sampled_from(["datacenter", "edge"]),
)
def test_any_shape_matches_the_reference_and_is_priced_as_simulated(
    batch, m, k, n, dt, preset
) -> None:
    # every tile's epilogue on the vector queue (the next tile's products wait only
    # for its read of the accumulator), the last tile's last K step in row pieces:
    # race-free, the reference's result, and the replayed price within 1% (the model
    # takes the backend's tile: on edge SRAM is tight enough to decide it)
    graph = _fused(batch, m, k, n, dt)
    bindings = random_bindings(graph, 0)
    got, report, _ = run_backend(graph, preset, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    (node,) = [nd for nd in graph.nodes if nd.op == OP]
    in_types = [graph.nodes[j].type for j in node.inputs]
    cost = op_cost(load_hardware(preset), OP, in_types, node.type, node.attr_dict)
    (kernel,) = [k for k in report.kernels if k.name == f"{OP}.out"]
    assert abs(cost.cycles - kernel.cycles) <= 0.01 * kernel.cycles, (cost.cycles, kernel.cycles)
