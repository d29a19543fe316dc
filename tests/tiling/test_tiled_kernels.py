"""A tile on a matrix kernel is priced at exactly that tile and emitted exactly."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from eqsat.costs import kernel_work, op_cost
from eqsat.interpreter import evaluate, random_bindings
from eqsat.ops import OpTypeError, get_op
from hwsim import load_hardware, simulate
from hwsim.costmodel import kernel_cycles, matmul_tiling_cost
from tests.tiling.helpers import f32, largest_tile, one_op

EDGE = load_hardware("edge")


def _cost(op, types, **attrs):
    out = get_op(op).type_of(types, get_op(op).bind_attrs(attrs))
    return op_cost(EDGE, op, types, out, get_op(op).bind_attrs(attrs)), out


def test_untiled_kernel_is_priced_by_the_model_search():
    types = [f32(64, 96), f32(96, 80)]
    cost, out = _cost("matmul", types)
    assert cost == kernel_cycles(EDGE, kernel_work("matmul", types, out, {}))


@pytest.mark.parametrize("tile", [(16, 32, 48), (64, 80, 96), (200, 200, 200)])
def test_tiled_kernel_is_priced_at_its_tile_clamped_to_the_product(tile):
    types = [f32(64, 96), f32(96, 80)]
    cost, out = _cost("matmul", types, tile=tile)
    work = kernel_work("matmul", types, out, {})
    clamped = (min(tile[0], 64), min(tile[1], 80), min(tile[2], 96))
    assert cost.tile == clamped
    assert cost.cycles == matmul_tiling_cost(EDGE, work, clamped).cycles
    assert cost.feasible


def test_a_tile_that_overflows_sram_is_penalised():
    types = [f32(1024, 1024), f32(1024, 1024)]
    ok, _ = _cost("matmul", types, tile=(64, 64, 64))
    big, _ = _cost("matmul", types, tile=(1024, 1024, 1024))
    assert ok.feasible and not big.feasible
    assert big.cycles > ok.cycles


def test_fused_kernels_carry_a_tile_too():
    types = [f32(32, 64), f32(64, 48), f32(48)]
    cost, _ = _cost("matmul_bias_relu", types, tile=(16, 16, 32))
    assert cost.tile == (16, 16, 32)


@pytest.mark.parametrize("bad", [(16, 16), (0, 16, 16), (16, 16, 16, 16)])
def test_a_malformed_tile_is_a_type_error(bad):
    with pytest.raises(OpTypeError, match="tile must be"):
        get_op("matmul").type_of([f32(4, 4), f32(4, 4)], {"tile": bad})


@pytest.mark.parametrize(
    "op, types, tile",
    [
        ("matmul", [f32(96, 80), f32(80, 112)], (32, 48, 16)),
        ("matmul_nt", [f32(2, 40, 64), f32(2, 56, 64)], (16, 32, 32)),
        ("matmul_bias_gelu", [f32(64, 48), f32(48, 96), f32(96)], (48, 32, 16)),
        ("matmul_bias_add", [f32(64, 48), f32(48, 96), f32(96), f32(64, 96)], (64, 96, 48)),
        ("conv2d", [f32(1, 8, 10, 10), f32(16, 8, 3, 3)], (32, 16, 24)),
    ],
)
def test_backend_emits_exactly_the_nodes_tile(op, types, tile):
    graph = one_op(op, types, tile=tile)
    compiled = compile_graph(graph, EDGE)
    assert largest_tile(compiled.program) == tile
    bindings = random_bindings(graph, 0)
    result = simulate(compiled.program, EDGE, compiled.feeds(bindings))
    got = compiled.results(result.outputs)["y"]
    np.testing.assert_allclose(got, evaluate(graph, bindings)["y"], rtol=2e-4, atol=2e-4)


def test_a_tile_larger_than_the_product_is_clamped():
    graph = one_op("matmul", [f32(20, 24), f32(24, 28)], tile=(64, 64, 64))
    assert largest_tile(compile_graph(graph, EDGE).program) == (20, 28, 24)
