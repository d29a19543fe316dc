"""A fast subset of bench/tiling_table.py: the tile extraction chose simulates within
10% of the best tile tried exhaustively (every matrix kernel of the BERT-base layer on
the datacenter preset, its two attention products on edge; the bench runs the rest)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from hwsim import load_hardware
from tests.tiling.helpers import ROOT

_spec = importlib.util.spec_from_file_location("tiling_table", ROOT / "bench" / "tiling_table.py")
table = importlib.util.module_from_spec(_spec)
sys.modules["tiling_table"] = table  # dataclasses look their module up
_spec.loader.exec_module(table)


def test_datacenter_bert_layer_tiles_are_within_10_percent_of_the_best():
    graph = table.optimized_bert(load_hardware("datacenter"), 128)
    kernels = table.matrix_kernels(graph)
    assert len(kernels) == 6
    for k in kernels:
        assert k.tile is not None, k.label
        row = table.compare("datacenter", k)
        assert row.gap <= table.TOLERANCE, (k.label, row)


@pytest.mark.parametrize("which", [0, 1])
def test_edge_attention_tiles_are_within_10_percent_of_the_best(which):
    graph = table.optimized_bert(load_hardware("edge"), 128)
    attention = [k for k in table.matrix_kernels(graph) if k.op == "matmul"]
    k = attention[which]
    assert k.tile is not None
    row = table.compare("edge", k)
    assert row.tried >= 20
    assert row.gap <= table.TOLERANCE, (k.label, row)
