"""Custom instructions end to end: a gated block optimized for a hardware that declares
`silu_mul` uses it, lowers to one `custom.silu_mul` per tile, simulates like the
reference interpreter at the declared cost (and the model prices it so), and the
commands (`optimize/simulate --verify`, `verify-rules --hw`, `ops --hw`) work on it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.cli import main
from eqsat.costs import op_cost
from eqsat.custom_instr import instructions_in_use
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import Custom, simulate
from hwsim.hardware import load_hardware
from hwsim.timing import instruction_cost
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.conftest import ROOT
from tests.strategies import scaled

EXAMPLE_HW = ROOT / "examples" / "hw" / "silu_mul.toml"
# A gated block whose gate and value are not products of one input (Mamba's output
# gate, silu(z) * y): no gated matmul kernel applies, the declared instruction pays.
# (A SwiGLU's silu(x@wg) * (x@wu) runs as one matmul_swiglu kernel, which beats it.)
GATED = """model gated {
  dim S = 16
  input z: f32[S, 128]
  input v: f32[S, 128]
  param w_out: f32[128, 64]
  h = mul(silu(z), v)
  y = matmul(h, w_out)
  output y
}
"""
WRONG = """base = "edge"
name = "edge-wrong"

[[instruction]]
name = "silu_mul"
semantics = "mul(gelu(a), b)"
cost = "issue + ceil(n / 32)"
replaces = "mul(silu(a), b)"
"""


def _cost_variant(tmp_path, extra: int):
    """The example hardware with `extra` cycles added to silu_mul's declared cost."""
    text = EXAMPLE_HW.read_text().replace(
        'cost = "issue + ceil(n / 32)"', f'cost = "issue + ceil(n / 32) + {extra}"'
    )
    assert str(extra) in text
    path = tmp_path / f"cost{extra}.toml"
    path.write_text(text.replace('base = "edge"', f'base = "{ROOT / "hwsim/presets/edge.toml"}"'))
    return load_hardware(path)


def _gated_graph():
    return check_model(parse_model(GATED))


def _custom_instrs(program) -> list[Custom]:
    return [ins for ins in program.instrs if isinstance(ins, Custom)]


def test_gate_uses_the_instruction_and_simulates_like_the_reference():
    hw = load_hardware(EXAMPLE_HW)
    graph = _gated_graph()
    with instructions_in_use(hw):
        result = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw)
        ops = [n.op for _, n in result.graph if not n.is_leaf]
        assert "silu_mul" in ops and "silu" not in ops and "sigmoid" not in ops
        bindings = random_bindings(graph, seed=2)
        got, report, compiled = run_backend(result.graph, str(EXAMPLE_HW), bindings)
        assert_matches(graph, got, reference(graph, bindings))
        customs = _custom_instrs(compiled.program)
        assert customs and all(c.name == "silu_mul" for c in customs)
        # one instruction per tile of the [16, 128] result, reading two tiles
        assert sum(c.dst.elements for c in customs) == 16 * 128
        assert all(len(c.srcs) == 2 for c in customs)
        # the vector unit is busy exactly as declared for the custom instructions
        declared = sum(hw.issue_cycles + math.ceil(c.dst.elements / 32) for c in customs)
        vector = sum(instruction_cost(hw, c)[1] for c in customs)
        assert vector == declared
        # the model prices the instruction's kernel as the simulator runs it
        i = next(i for i, n in result.graph if n.op == "silu_mul")
        node = result.graph.nodes[i]
        types = [result.graph.nodes[j].type for j in node.inputs]
        model = op_cost(hw, "silu_mul", types, node.type, {}).cycles
        spans = {k.name: k.cycles for k in report.kernels}
        sim = sum(spans[k.name] for k in compiled.kernels if k.node == i)
        assert abs(model - sim) <= 0.05 * sim, (model, sim)
    assert "silu_mul" not in REGISTRY


def test_declared_cost_changes_the_simulated_cycles(tmp_path):
    """The same program on two hardwares whose silu_mul differs only in its declared
    cost: the simulated cycles differ by that much per instruction (the kernel is then
    compute-bound: its instructions run back to back)."""
    graph = _gated_graph()
    bindings = random_bindings(graph, seed=0)
    cycles, counts = {}, {}
    for extra in (2000, 3000):
        hw = _cost_variant(tmp_path, extra)
        with instructions_in_use(hw):
            b = GraphBuilder("one", {})
            f32 = DType.F32
            a = b.leaf("input", "a", TensorType(f32, (16, 128)))
            u = b.leaf("input", "u", TensorType(f32, (16, 128)))
            b.output("y", b.add("neg", [b.add("silu_mul", [a, u], {}, "h")], {}, "r"))
            one = b.graph
            compiled = compile_graph(one, hw)
            inputs = {"a": bindings["z"], "u": np.ones((16, 128), np.float32)}
            report = simulate(compiled.program, hw, compiled.feeds(inputs)).report
            cycles[extra] = report.cycles
            counts[extra] = len(_custom_instrs(compiled.program))
            model = op_cost(
                hw, "silu_mul", [TensorType(f32, (16, 128))] * 2, TensorType(f32, (16, 128)), {}
            )
            assert model is not None and model.cycles > extra * counts[extra]
    assert counts[2000] == counts[3000] >= 1
    assert cycles[3000] - cycles[2000] == 1000 * counts[2000]


def test_cli_optimize_and_simulate_verify(tmp_path, capsys):
    model = tmp_path / "gated.model"
    model.write_text(GATED)
    out = tmp_path / "o.model"
    assert (
        main(["optimize", str(model), "--hw", str(EXAMPLE_HW), "--verify", "-q", "-o", str(out)])
        == 0
    )
    assert "silu_mul(" in out.read_text()
    assert "verified: the optimized model matches" in capsys.readouterr().out
    asm = tmp_path / "o.asm"
    assert main(["compile", str(model), "--hw", str(EXAMPLE_HW), "-q", "-o", str(asm)]) == 0
    assert "custom.silu_mul " in asm.read_text()
    capsys.readouterr()
    assert main(["simulate", str(model), "--hw", str(EXAMPLE_HW), "--verify", "-q"]) == 0
    text = capsys.readouterr().out
    assert "on edge-silu-mul" in text and "verified: the simulated program matches" in text
    # the assembly runs on its own, on the hardware that declares the instruction only
    assert main(["simulate", str(asm), "--hw", str(EXAMPLE_HW)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(asm), "--hw", "edge"]) == 1
    assert "declares no instruction 'silu_mul'" in capsys.readouterr().err
    assert "silu_mul" not in REGISTRY  # nothing of the command stays in the registry
    from backend.lowering import LOWER

    assert "silu_mul" not in LOWER


def test_verify_rules_catches_a_wrong_meaning(tmp_path, capsys):
    assert main(["verify-rules", "--hw", str(EXAMPLE_HW), "--examples", "20", "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "PASS  instr-silu-mul " in out and "PASS  instr-silu-mul-2 " in out
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(WRONG)
    args = ["verify-rules", "--hw", str(wrong), "--examples", "50", "-j", "1", "--seed", "1"]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert "FAIL  instr-silu-mul" in captured.out
    assert f"rule instr-silu-mul at {wrong}:8:1" in captured.out
    assert f"unsound rules: instr-silu-mul (instruction 'silu_mul' of {wrong})" in captured.err


def test_ops_lists_the_derived_op(capsys):
    assert main(["ops", "--hw", str(EXAMPLE_HW)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-2] == f"instructions of {EXAMPLE_HW}:"
    assert out.splitlines()[-1].split() == [
        "silu_mul(a,",
        "b)",
        "instruction",
        "of",
        "silu_mul.toml:7:",
        "mul(silu(a),",
        "b);",
        "cycles:",
        "issue",
        "+",
        "ceil(n",
        "/",
        "32)",
    ]


@pytest.mark.parametrize("b_shape", [(128,), (16, 1)], ids=["row", "column"])
def test_broadcast_operands_lower_to_one_instruction(b_shape):
    hw = load_hardware(EXAMPLE_HW)
    with instructions_in_use(hw):
        b = GraphBuilder("bcast", {})
        f32 = DType.F32
        a = b.leaf("input", "a", TensorType(f32, (16, 128)))
        v = b.leaf("input", "v", TensorType(f32, b_shape))
        b.output("y", b.add("neg", [b.add("silu_mul", [a, v], {}, "h")], {}, "r"))
        graph = b.graph
        bindings = random_bindings(graph, seed=5)
        got, _, compiled = run_backend(graph, str(EXAMPLE_HW), bindings)
        assert_matches(graph, got, reference(graph, bindings))
        (first, *_) = _custom_instrs(compiled.program)
        assert first.srcs[1].elements < first.dst.elements  # loaded as a row or column


GELU_HW = Path(__file__).parent / "gelu_mul.toml"


@settings(max_examples=scaled(12), deadline=None)
@given(
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=3).map(tuple),
    form=st.sampled_from(["full", "row", "column", "scalar", "left"]),
    dtype=st.sampled_from([DType.F32, DType.BF16]),
    seed=st.integers(0, 2**16),
)
def test_any_broadcast_simulates_like_the_reference_at_the_modelled_cost(shape, form, dtype, seed):
    """gelu_mul(a, b) for b of a's shape, a row, a column, a scalar, or a broadcast
    first operand: the simulated kernel equals the reference and costs what the
    cost model says."""
    other = {
        "full": shape,
        "row": shape[-1:],
        "column": (*shape[:-1], 1),
        "scalar": (),
        "left": shape,
    }[form]
    a_shape, b_shape = (shape[-1:], shape) if form == "left" else (shape, other)
    hw = load_hardware(GELU_HW)
    with instructions_in_use(hw):
        b = GraphBuilder("g", {})
        a = b.leaf("input", "a", TensorType(dtype, a_shape))
        v = b.leaf("input", "v", TensorType(dtype, b_shape))
        b.output("y", b.add("neg", [b.add("gelu_mul", [a, v], {}, "h")], {}, "r"))
        graph = b.graph
        bindings = random_bindings(graph, seed=seed)
        got, report, compiled = run_backend(graph, str(GELU_HW), bindings, races=False)
        assert_matches(graph, got, reference(graph, bindings))
        i = next(i for i, n in graph if n.name == "h")
        node = graph.nodes[i]
        spans = {k.name: k.cycles for k in report.kernels}
        sim = sum(spans[k.name] for k in compiled.kernels if k.node == i)
        types = [graph.nodes[j].type for j in node.inputs]
        assert op_cost(hw, "gelu_mul", types, node.type, {}).cycles == sim
        assert _custom_instrs(compiled.program)
