"""`eqsat explain`: the rule that built each kernel (recorded during saturation) and why
the alternatives in its e-class lost."""

from __future__ import annotations

import json
import re

import pytest

from eqsat.cli import main
from eqsat.explain import INPUT, explain
from eqsat.ops import REGISTRY
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware
from tests.optimize_helpers import DATA, ROOT

# A matmul, then softmax written out: on the 16 KiB SRAM the fused softmax (which keeps
# whole 4,096-element rows resident) cannot run, so the five kernels stay.
SCORES = """
model scores {
  input q: f32[64, 64]
  input kt: f32[64, 4096]
  s = matmul(q, kt)
  m = reduce_max(s, axes=[1], keepdims=true)
  e = exp(sub(s, m))
  p = div(e, reduce_sum(e, axes=[1], keepdims=true))
  output p
}
"""


@pytest.fixture(scope="module")
def provenance_rules():
    return compile_rule_paths([DEFAULT_RULES_DIR], provenance=True)


def test_every_fused_kernel_of_bert_names_the_rule_that_built_it(provenance_rules) -> None:
    from frontend import load_model

    _, graph = load_model(ROOT / "examples" / "bert_layer.model")
    hw = load_hardware("edge")
    result = optimize(graph, provenance_rules, hw, keep_egraph=True)
    items = explain(result.original, result.graph, result.priced, hw)
    fused = [e for e in items if REGISTRY[e.op].composition is not None]
    assert {e.op for e in fused} >= {
        "attention",
        "matmul_bias",
        "matmul_bias_gelu",
        "matmul_bias_add",
    }
    for e in fused:
        assert e.built_by in provenance_rules.names, (e.name, e.built_by)
    # provenance is bookkeeping: the optimized program is the same without it
    plain = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw)
    assert plain.after.cycles == result.after.cycles


def test_fused_softmax_lost_for_sram_overflow_with_both_costs(provenance_rules) -> None:
    graph = check_model(parse_model(SCORES))
    hw = load_hardware(DATA / "tiny_sram.toml")
    result = optimize(graph, provenance_rules, hw, keep_egraph=True)
    assert not any(n.op == "softmax" for n in result.graph.nodes)
    items = explain(result.original, result.graph, result.priced, hw)
    lost = [(e, a) for e in items for a in e.alternatives if a.op == "softmax"]
    assert lost, [e.name for e in items]
    _kernel, alt = lost[0]
    assert alt.built_by == "softmax-stable"
    assert alt.why.startswith("SRAM overflow")
    costs = re.findall(r"([\d,]+) cycles", alt.why)
    assert len(costs) == 2 and all(int(c.replace(",", "")) > 0 for c in costs)
    # on the edge preset (256 KiB) the fused softmax wins instead
    edge = optimize(graph, provenance_rules, load_hardware("edge"))
    assert any(n.op == "softmax" for n in edge.graph.nodes)


def test_input_terms_are_the_model_as_written(provenance_rules) -> None:
    graph = check_model(parse_model(SCORES))
    hw = load_hardware(DATA / "tiny_sram.toml")
    result = optimize(graph, provenance_rules, hw, keep_egraph=True)
    items = {e.name: e for e in explain(result.original, result.graph, result.priced, hw)}
    assert items["reduce_max.m"].built_by == INPUT
    assert "m = reduce_max" in items["reduce_max.m"].covers


def test_explain_command(tmp_path, capsys) -> None:
    model = tmp_path / "scores.model"
    model.write_text(SCORES)
    out = tmp_path / "e.json"
    args = ["explain", str(model), "--hw", str(DATA / "tiny_sram.toml"), "-q"]
    assert main([*args, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert {d["kernel"] for d in data} == set(re.findall(r"^(\S+): ", text, re.M))
    assert "beat    softmax (softmax-stable): unrunnable; SRAM overflow" in text
    assert main([*args, "--kernel", "reduce_max.m"]) == 0
    assert capsys.readouterr().out.startswith("reduce_max.m: ")
    assert main([*args, "--kernel", "nope"]) == 1
    assert "no such kernel" in capsys.readouterr().err


def test_provenance_actions_are_compiled_only_on_request() -> None:
    plain = compile_rule_paths([DEFAULT_RULES_DIR])
    recorded = compile_rule_paths([DEFAULT_RULES_DIR], provenance=True)
    assert "Prov_" not in plain.text
    assert "(set (Prov_Softmax " in recorded.text and "softmax-stable" in recorded.text
    assert recorded.rulesets == plain.rulesets and recorded.names == plain.names


def test_dot_of_a_kernel_neighbourhood(tmp_path, capsys) -> None:
    pytest.importorskip("graphviz", reason="the [plot] extra is not installed")
    model = tmp_path / "scores.model"
    model.write_text(SCORES)
    out = tmp_path / "k.dot"
    args = ["explain", str(model), "-q", "--hw", str(DATA / "tiny_sram.toml")]
    args += ["--kernel", "reduce_max.m", "--dot", str(out)]
    assert main(args) == 0
    assert f"wrote the graphviz source to {out}" in capsys.readouterr().out
    text = out.read_text()
    assert text.startswith("digraph") and "subgraph" in text and "cluster_" in text
    assert "reduce_max" in text and "fillcolor=palegreen" in text
    svg = tmp_path / "k.svg"
    assert main([*args[:-1], str(svg)]) == 0
    said = capsys.readouterr().out
    assert svg.exists() or f"wrote its source to {svg.with_suffix('.dot')}" in said
