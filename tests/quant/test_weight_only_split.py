"""A one-row weight-only product split between the array and the vector unit
(hwsim/gemv_split.py): exact, priced as simulated, and taken only where it pays."""

from __future__ import annotations

import numpy as np

from eqsat.costs import kernel_work, op_cost
from eqsat.interpreter import evaluate
from eqsat.ops.weight_only import quantize_weights
from eqsat.wq_work import wq_split
from frontend import check_model, parse_model
from hwsim import load_hardware
from hwsim.costmodel import kernel_cycles
from hwsim.isa import Matmul
from tests.backend.helpers import run_backend
from tests.quant.test_weight_only import _matmul_wq_model


def _product(k: int, n: int, bits: int):
    graph = check_model(parse_model(_matmul_wq_model(1, k, n, bits, 128, True)))
    i, node = next((i, nd) for i, nd in graph if nd.op == "matmul_wq")
    types = [graph.nodes[j].type for j in node.inputs]
    return graph, i, node, types, kernel_work(node.op, types, node.type, node.attr_dict)


def test_a_split_int4_product_is_exact_and_simulates_as_priced() -> None:
    graph, i, node, types, work = _product(256, 512, 4)
    hw = load_hardware("edge")
    plan = wq_split(hw, work)
    assert plan is not None and plan.n_matrix + plan.n_vector == 512
    assert plan.n_vector % hw.array_cols == 0 and plan.n_matrix >= plan.n_vector > 0
    cost = op_cost(hw, node.op, types, node.type, node.attr_dict)
    assert cost.cycles == plan.cycles < 0.9 * kernel_cycles(hw, work).cycles
    # small integers in bf16 and power-of-two scales: every product and sum is exact
    rng = np.random.default_rng(7)
    w = rng.integers(-8, 8, (256, 512)).astype(np.float32)
    bindings = {
        "x": rng.integers(-3, 4, (1, 256)).astype(np.float32),
        "wq": quantize_weights(w, 128, 4),
        "s": (2.0 ** rng.integers(-3, 2, (2, 512))).astype(np.float32),
    }
    got, report, compiled = run_backend(graph, "edge", bindings)
    np.testing.assert_array_equal(got["y"], evaluate(graph, bindings)["y"])
    queues = {ins.queue for ins in compiled.program.instrs}
    assert {"compute", "vector"} <= queues
    assert any(isinstance(ins, Matmul) for ins in compiled.program.instrs)
    kernel = next(k for k in compiled.kernels if k.node == i)
    span = next(s for s in report.kernels if s.name == kernel.name)
    assert span.end - span.start == cost.cycles
    cast = 256 * (4 + 2)  # the cast kernel before it reads x and writes its bf16 copy
    assert report.dram_bytes_read + report.dram_bytes_written - cast == cost.dram_bytes


def test_a_product_the_dram_channel_bounds_is_not_split() -> None:
    # int8 weights arrive at 16 a cycle on edge: the array alone keeps pace (a small
    # product, 256 x 256, is not DRAM-bound: its fill and issue overheads make a
    # split with the vector unit's fused multiply-adds pay there)
    *_, work = _product(1024, 1024, 8)
    assert wq_split(load_hardware("edge"), work) is None
