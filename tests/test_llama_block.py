"""examples/llama_block.model (RMSNorm, attention, residual, RMSNorm, SwiGLU FFN,
residual): `eqsat simulate --verify` of the optimized program matches the model, and
optimization gains what the bias-free epilogues and the gated product are for."""

from __future__ import annotations

import json

import pytest

from eqsat.cli import main
from tests.conftest import ROOT

MODEL = ROOT / "examples" / "llama_block.model"


def _simulate(tmp_path, hw: str, *flags: str) -> dict:
    report = tmp_path / f"{hw}{''.join(flags)}.json"
    assert main(["simulate", str(MODEL), "--hw", hw, "-q", "--report", str(report), *flags]) == 0
    return json.loads(report.read_text())


@pytest.mark.parametrize(("hw", "least_gain"), [("datacenter", 0.10), ("edge", 0.0)])
def test_llama_block_optimizes_verifies_and_gains(hw, least_gain, tmp_path):
    written = _simulate(tmp_path, hw, "--no-optimize")
    optimized = _simulate(tmp_path, hw, "--verify")
    gain = 1 - optimized["cycles"] / written["cycles"]
    assert gain > least_gain, f"{hw}: {written['cycles']} -> {optimized['cycles']}"
    names = [k["name"] for k in optimized["kernels"]]
    # the gated product and both residual adds run in matmul epilogues (the gated
    # product with the RMSNorm before it in its prologue where K fits one tile)
    gated = ("matmul_swiglu", "rmsnorm_matmul_swiglu")
    assert sum(n.startswith(gated) for n in names) == 1
    assert sum(n.startswith("matmul_add") for n in names) == 2
    assert not any(n.startswith(("sigmoid", "silu", "mul.", "add.")) for n in names)
