"""Matrix-vector products (one row of A: a decode step's projections) on the vector
unit where hwsim.timing says it beats the array: the simulated result equals the
reference, the cost model predicts the simulated cycles exactly, and a large GEMV
streams its weights near the DRAM bandwidth on `datacenter`."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.fidelity import measure_program
from eqsat.interpreter import evaluate
from eqsat.ir.graph import Graph
from frontend import check_model
from frontend.parser import parse_model
from hwsim import load_hardware, simulate, timing
from hwsim.isa import Binary, Matmul

DATACENTER = load_hardware("datacenter")
EDGE = load_hardware("edge")


def _graph(text: str) -> Graph:
    return check_model(parse_model(text))


def _run(graph: Graph, hw, seed: int = 0):
    rng = np.random.default_rng(seed)
    feeds = {
        str(node.attr("name")): rng.standard_normal(node.type.shape).astype(np.float32)
        for _, node in graph
        if node.op in ("input", "param")
    }
    compiled = compile_graph(graph, hw)
    result = simulate(compiled.program, hw, compiled.feeds(feeds))
    return compiled, compiled.results(result.outputs), evaluate(graph, feeds), feeds


def test_vector_unit_is_chosen_only_where_it_is_faster():
    # datacenter: a 128x128 block preloads in 128 cycles whatever m; 1024 lanes do better
    assert timing.gemv_on_vector(DATACENTER, "f32", 1, 256, 2048)
    assert timing.gemv_cycles(DATACENTER, 256, 2048) * 3 < timing.matmul_cycles(
        DATACENTER, "f32", 1, 256, 2048
    )
    # edge: 16 lanes are slower than its 16x16 array; more rows, or bf16, stay on the array
    assert not timing.gemv_on_vector(EDGE, "f32", 1, 256, 2048)
    assert not timing.gemv_on_vector(DATACENTER, "f32", 2, 256, 2048)
    assert not timing.gemv_on_vector(DATACENTER, "bf16", 1, 256, 2048)


@settings(max_examples=6)
@given(
    k=st.integers(1, 300),
    n=st.integers(1, 300),
    batch=st.integers(1, 2),
    fused=st.sampled_from(["matmul", "matmul_add", "matmul_swiglu", "matmul_nt"]),
)
def test_gemv_simulates_as_the_reference_and_as_priced(k, n, batch, fused):
    body = {
        "matmul": "y = matmul(x, w)",
        "matmul_add": "y = matmul_add(x, w, r)",
        "matmul_swiglu": "y = matmul_swiglu(x, w, u)",
        "matmul_nt": "y = matmul_nt(x, wt)",  # weights [n, k]: turned on chip
    }[fused]
    text = f"""model g {{
      input x: f32[{batch}, 1, {k}]
      param w: f32[{k}, {n}]
      param u: f32[{k}, {n}]
      param wt: f32[{n}, {k}]
      input r: f32[{batch}, 1, {n}]
      {body}
      output y
    }}"""
    graph = _graph(text)
    compiled, got, want, feeds = _run(graph, DATACENTER)
    instrs = compiled.program.instrs
    if batch == 1:
        assert not any(isinstance(i, Matmul) for i in instrs)
        assert any(isinstance(i, Binary) and i.bcast == "col" for i in instrs)
    else:  # one weight matrix for the batch: its rows are one M of `batch` rows, on the array
        assert any(isinstance(i, Matmul) for i in instrs)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-4)
    row = measure_program(graph, DATACENTER, feeds)
    if fused == "matmul":
        assert row.predicted == row.simulated
    elif fused != "matmul_nt":  # (the model leaves out the on-chip transpose of wt)
        assert abs(row.error) < 0.01  # the epilogues' own misprediction, as on the array


def test_gemv_on_edge_stays_on_the_array():
    graph = _graph(
        "model g { input x: f32[1, 64]  param w: f32[64, 48]  y = matmul(x, w)  output y }"
    )
    assert not timing.gemv_on_vector(EDGE, "f32", 1, 48, 64)
    compiled, got, want, _ = _run(graph, EDGE)
    assert any(isinstance(i, Matmul) for i in compiled.program.instrs)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-4)


def test_large_gemv_streams_weights_near_dram_bandwidth():
    # 2048 x 5632 f32 weights, 44 MiB: the array needs K*N/128 cycles, DRAM K*N/150
    graph = _graph(
        "model g { input x: f32[1, 2048]  param w: f32[2048, 5632]  y = matmul(x, w)  output y }"
    )
    ones = {"x": np.ones((1, 2048), np.float32), "w": np.ones((2048, 5632), np.float32)}
    row = measure_program(graph, DATACENTER, ones)
    dram_bound = 2048 * 5632 * 4 / DATACENTER.dram_bytes_per_cycle
    assert row.predicted == row.simulated
    assert dram_bound / row.simulated > 0.95
    assert row.simulated < 2048 * 5632 / 128  # below what the array alone would take


@settings(max_examples=5)
@given(
    heads=st.sampled_from([1, 2, 8]),
    keys=st.integers(1, 300),
    width=st.sampled_from([16, 64]),
    masked=st.booleans(),
)
@example(heads=8, keys=1, width=16, masked=False)  # one step: DMA and compute cannot overlap
def test_attention_of_one_query_runs_its_products_on_the_vector_unit(heads, keys, width, masked):
    """A decode step's attention (one query over the cache): both products of every key
    block are GEMVs on `datacenter` (with one head per step), computed as the reference
    computes them, and priced as the simulator runs them (the kernel's instructions
    replayed on its queues, eqsat/attention_queues.py)."""
    mask_in = f"input mask: f32[1, 1, 1, {keys}]" if masked else ""
    op = (
        "attention_masked(q, kt, v, mask, scale=0.125)"
        if masked
        else "attention(q, kt, v, scale=0.125)"
    )
    text = f"""model a {{
      input q: f32[1, {heads}, 1, {width}]
      input k: f32[1, {heads}, {keys}, {width}]
      input v: f32[1, {heads}, {keys}, {width}]
      {mask_in}
      kt = transpose(k, perm=[0, 1, 3, 2])
      y = {op}
      output y
    }}"""
    graph = _graph(text)
    compiled, got, want, feeds = _run(graph, DATACENTER)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-5)
    instrs = compiled.program.instrs
    if heads == 1:  # several heads may share a block-diagonal step on the array instead
        assert not any(isinstance(i, Matmul) for i in instrs)
    row = measure_program(graph, DATACENTER, feeds)
    assert row.predicted == row.simulated
