"""A quantized program is never estimated slower than the float one: `optimize
--quantize` also optimizes the float model (by blocks, as plain `optimize` does) and
keeps it where quantization does not pay."""

from __future__ import annotations

from pathlib import Path

import pytest

import eqsat.commands.optimize as optimize_command
from eqsat.cli import build_parser
from eqsat.loading import load_model
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim import load_hardware

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.model"


def _run(flags: list[str]):
    args = build_parser().parse_args(["optimize", str(MLP), *flags, "-q"])
    graph = load_model(MLP).graph
    return optimize_command.optimize_from_args(args, graph)[0]


@pytest.mark.parametrize("hw_name", ["datacenter"])  # where int8 pays least
def test_the_quantized_program_is_no_slower_than_the_float_one(hw_name):
    hw = load_hardware(hw_name)
    floats = optimize(load_model(MLP).graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw)
    result = _run(["--quantize", "int8", "--hw", hw_name])
    assert result.after.cycles <= floats.after.cycles


def test_a_quantized_extraction_that_loses_to_float_gives_the_float_program(monkeypatch, capsys):
    """Where the quantized e-graph's extraction comes out costlier (here: made to keep
    the program as written), the float optimization's program is the result."""
    real = optimize_command._optimize

    def as_written_when_quantized(args, graph, rules, hw, limits, progress, keep, quant):
        result = real(args, graph, rules, hw, limits, progress, keep, quant)
        if quant is not None:
            result.graph, result.after = result.original, result.before
        return result

    monkeypatch.setattr(optimize_command, "_optimize", as_written_when_quantized)
    args = build_parser().parse_args(["optimize", str(MLP), "--quantize", "int8", "--hw", "edge"])
    result = optimize_command.optimize_from_args(args, load_model(MLP).graph)[0]
    floats = optimize(
        load_model(MLP).graph, compile_rule_paths([DEFAULT_RULES_DIR]), load_hardware("edge")
    )
    assert result.after.cycles == floats.after.cycles < result.before.cycles
    assert not any(n.op in ("qmatmul", "quantize") for _, n in result.graph)
    assert "int8 does not pay here: the float program is kept" in capsys.readouterr().err
