"""Tiled variants live side by side in the e-graph, extraction picks one, and the
backend runs it; splitting a product into two kernels is sound."""

from __future__ import annotations

import numpy as np
import pytest

from backend import compile_graph
from eqsat.costs import kernel_work, op_cost
from eqsat.egraph.extraction import extract_program, rebuild
from eqsat.interpreter import evaluate, random_bindings
from eqsat.norm_epilogue import NORM_EPILOGUE
from eqsat.ops.chain import CHAINS
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.tiling import node_tile, tile_candidates, tiled_cost
from frontend import check_model, load_model, parse_model
from hwsim import load_hardware
from hwsim.costmodel import kernel_cycles
from tests.tiling.helpers import ROOT, largest_tile, one_op

TILING = compile_rule_paths([ROOT / "rules" / "tiling.rules"])
ALL = compile_rule_paths([DEFAULT_RULES_DIR])


def model(text: str):
    return check_model(parse_model(text))


MATMUL = model(
    "model m { input x: f32[96, 256]\n param w: f32[256, 384]\n y = matmul(x, w)\n output y }"
)


@pytest.mark.parametrize("preset", ["edge", "datacenter"])
def test_extraction_picks_the_cheapest_candidate(preset):
    hw = load_hardware(preset)
    result = optimize(MATMUL, TILING, hw)
    (node,) = [n for _, n in result.graph if n.op == "matmul"]
    types = [result.graph.nodes[j].type for j in node.inputs]
    work = kernel_work("matmul", types, node.type, {})
    offered = {
        (min(tm, 96), min(tn, 384), min(tk, 256)) for tm, tn, tk in tile_candidates(hw, "f32")
    }
    best = min(tiled_cost(hw, work, t).cycles for t in offered)
    chosen = node_tile(node.attr_dict)
    if chosen is None:  # the model's own search beat every candidate
        assert kernel_cycles(hw, work).cycles < best
    else:
        assert chosen in offered and tiled_cost(hw, work, chosen).cycles == best
    # side by side: x, w, the untiled product and one variant per distinct candidate
    assert result.egraph_nodes == 3 + len(offered)


@pytest.mark.parametrize("preset", ["edge", "datacenter"])
def test_bert_matrix_kernels_run_the_tile_extraction_chose(preset):
    hw = load_hardware(preset)
    _, graph = load_model(ROOT / "examples" / "bert_layer.model", {"S": 128})
    result = optimize(graph, ALL, hw)
    assert result.saturation.stop_reason == "saturated"
    assert result.egraph_nodes < 2000  # with Q, K, V merged in each order, and their tiles
    kernels = [n for _, n in result.graph if n.opdef.attr_spec("tile") is not None]
    # Q, K and V as one merged product, the output, the FFN's two; on datacenter the
    # output and second FFN products carry the post-norm layernorm in their epilogue,
    # whose whole-row tiles eqsat/norm_epilogue.py plans, and the FFN's two products
    # may run as one chained kernel (eqsat/chain_plan.py): no tile for extraction
    planned = [n for _, n in result.graph if n.op in NORM_EPILOGUE]
    chained = [n for _, n in result.graph if n.op in CHAINS]
    assert len(kernels) + len(planned) + 2 * len(chained) >= 4 and len(kernels) >= 1
    for node in kernels:
        tile = node_tile(node.attr_dict)
        types = [result.graph.nodes[j].type for j in node.inputs]
        if tile is None:  # the model's own search beat every candidate: the backend runs it
            tile = op_cost(hw, node.op, types, node.type, node.attr_dict).tile
        alone = one_op(node.op, types, **node.attr_dict)
        run = largest_tile(compile_graph(alone, hw).program)
        batch_rows = node.type.shape[-2]
        assert run == (min(tile[0], batch_rows), min(tile[1], node.type.shape[-1]), tile[2])


def _forced_split(graph, avoid: set[str]):
    """Optimize with the tiling rules, then extract with the root's matmul nodes (and
    any op in `avoid` anywhere) priced out: what remains is a split."""
    hw = load_hardware("edge")
    result = optimize(graph, TILING, hw, keep_egraph=True)
    priced = result.priced
    root = result.roots[0]
    for n in priced.decoded.classes[root]:
        if n.op == "matmul":
            priced.costs[n.id] = 1e15
    for nodes in priced.decoded.classes.values():
        for n in nodes:
            if n.op in avoid:
                priced.costs[n.id] = 1e15
    extraction = extract_program(priced, [root], "greedy", 10.0)
    assert extraction.dag_cost < 1e15, "no split in the e-graph"
    return rebuild(priced, extraction, [("y", root)], "split", {})


@pytest.mark.parametrize(
    "shapes, avoid, joins",
    [
        (("64, 256", "256, 2048"), {"add"}, "concat"),  # split along N
        (("2048, 64", "64, 32"), {"add"}, "concat"),  # split along M
        (("32, 2048", "2048, 64"), {"concat"}, "add"),  # split along K
    ],
)
def test_split_matmul_is_sound(shapes, avoid, joins):
    a, b = shapes
    graph = model(
        f"model m {{ input x: f32[{a}]\n param w: f32[{b}]\n y = matmul(x, w)\n output y }}"
    )
    split = _forced_split(graph, avoid)
    ops = [n.op for _, n in split if not n.is_leaf]
    assert ops.count("matmul") == 2 and joins in ops and "slice" in ops
    bindings = random_bindings(graph, 0)
    want = evaluate(graph, bindings)["y"]
    got = evaluate(split, bindings)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_split_halves_join_back_and_do_not_compound():
    graph = model(
        "model m { input x: f32[64, 4096]\n param w: f32[4096, 4096]\n y = matmul(x, w)\n output y }"
    )
    result = optimize(graph, TILING, load_hardware("edge"))
    fired = result.saturation.rules_fired
    assert fired["split-matmul-n"] and fired["split-matmul-k"]
    assert result.saturation.stop_reason == "saturated"
    assert fired["join-matmul-n"] and fired["join-matmul-k"]
    assert result.egraph_nodes < 200
