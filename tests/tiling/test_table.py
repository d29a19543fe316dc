"""A fast subset of bench/tiling_table.py: the tile extraction chose simulates within
10% of the best tile tried exhaustively (every matrix kernel of the BERT-base layer on
the datacenter preset, its two attention products on edge; the bench runs the rest)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import load_hardware
from tests.tiling.helpers import ROOT

_spec = importlib.util.spec_from_file_location("tiling_table", ROOT / "bench" / "tiling_table.py")
table = importlib.util.module_from_spec(_spec)
sys.modules["tiling_table"] = table  # dataclasses look their module up
_spec.loader.exec_module(table)


def test_datacenter_bert_layer_tiles_are_within_10_percent_of_the_best():
    graph = table.optimized_bert(load_hardware("datacenter"), 128)
    kernels = table.matrix_kernels(graph)
    # the projections (Q, K, V alike); the output projection carries the post-norm
    # layernorm in its epilogue, at the whole-row tiles eqsat/norm_epilogue.py plans, and
    # the FFN runs as one chained kernel that eqsat/chain_plan.py plans
    assert {k.op for k in kernels} >= {"matmul_bias"}
    for k in kernels:
        assert k.tile is not None, k.label
        row = table.compare("datacenter", k)
        assert row.gap <= table.TOLERANCE, (k.label, row)


def _attention_products(hw):
    """The BERT layer's two attention products, q @ kt and p @ v, tiled by extraction
    (in the layer itself the attention rules make them one attention kernel)."""
    b = GraphBuilder("products")
    q, kt, p, v = (
        b.leaf("input", name, TensorType(DType.F32, shape))
        for name, shape in (
            ("q", (1, 12, 128, 64)),
            ("kt", (1, 12, 64, 128)),
            ("p", (1, 12, 128, 128)),
            ("v", (1, 12, 128, 64)),
        )
    )
    b.output("s", b.add("matmul", [q, kt], {}, "s"))
    b.output("o", b.add("matmul", [p, v], {}, "o"))
    return optimize(b.graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph


@pytest.mark.parametrize("which", [0, 1])
def test_edge_attention_tiles_are_within_10_percent_of_the_best(which):
    graph = _attention_products(load_hardware("edge"))
    attention = [k for k in table.matrix_kernels(graph) if k.op == "matmul"]
    k = attention[which]
    assert k.tile is not None
    row = table.compare("edge", k)
    assert row.tried >= 20
    assert row.gap <= table.TOLERANCE, (k.label, row)
