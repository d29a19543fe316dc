"""The optimized BERT-base layer (sequence length 128) beats the unoptimized one in the
simulator, and liveness analysis shrinks its DRAM footprint."""

from __future__ import annotations

import pytest

from backend import compile_graph
from eqsat.interpreter import random_bindings
from hwsim import load_hardware, simulate
from tests.backend.conftest import example_graph


def _simulate(graph, hw_name):
    hw = load_hardware(hw_name)
    compiled = compile_graph(graph, hw)
    bindings = random_bindings(graph, 0)
    return simulate(compiled.program, hw, compiled.feeds(bindings), check_races=False).report


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_optimized_bert_takes_fewer_cycles_and_bytes(hw_name):
    plain = _simulate(example_graph("bert_layer", False, hw_name), hw_name)
    fused = _simulate(example_graph("bert_layer", True, hw_name), hw_name)
    assert fused.cycles < plain.cycles
    assert fused.dram_bytes < plain.dram_bytes


@pytest.mark.parametrize("optimized", [False, True])
def test_liveness_reuse_shrinks_bert_dram_footprint(optimized):
    graph = example_graph("bert_layer", optimized, "edge")
    fp = compile_graph(graph, load_hardware("edge")).footprint
    assert fp.planned_bytes < fp.naive_bytes
    scratch = sum(fp.arena_bytes.values())
    # the optimized layer (attention one kernel) keeps 11 intermediates of [128, 768],
    # at most 6 of them live at once (the FFN's 4-wide hidden, its input, its output)
    share = 0.6 if optimized else 0.5
    assert scratch < share * (fp.naive_bytes - (fp.planned_bytes - scratch))


def test_fused_kernels_apply_epilogues_on_chip():
    """matmul_bias_gelu writes its result once: no intermediate goes to DRAM."""
    graph = example_graph("bert_layer", True, "edge")
    compiled = compile_graph(graph, load_hardware("edge"))
    ops = {graph.nodes[k.node].op for k in compiled.kernels if k.role == "main"}
    assert {"matmul_bias_gelu", "matmul_bias_add"} <= ops
    assert "unary.gelu" in compiled.asm and "gelu " not in compiled.asm.split("kernel")[0]
