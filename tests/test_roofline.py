"""The model roofline: the bound of the model as written, one number for every program
compiled from it (eqsat/roofline.py), used by the simulate and optimize reports."""

from __future__ import annotations

import json
import math

import pytest

from backend import compile_graph
from eqsat.cli import main
from eqsat.loading import load_model
from eqsat.pipeline import optimize
from eqsat.roofline import model_roofline
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate

MLP = """
model m {
  input x: f32[64, 256]
  param w: f32[256, 128]
  param b: f32[128]
  y = relu(add(matmul(x, w), b))
  t = transpose(y, perm=[1, 0])
  output t
}
"""


@pytest.mark.parametrize("preset", ["edge", "datacenter"])
def test_the_bound_counts_the_models_work_once(preset):
    hw = load_hardware(preset)
    graph = check_model(parse_model(MLP))
    roof = model_roofline(graph, hw)
    assert roof.macs == {"f32": 64 * 256 * 128}
    assert roof.vector_ops == 2 * 64 * 128  # add and relu; the transpose computes nothing
    assert roof.dram_bytes == 4 * (64 * 256 + 256 * 128 + 128 + 64 * 128)
    times = {
        "matrix": roof.macs["f32"] / hw.macs_per_cycle["f32"],
        "vector": roof.vector_ops / hw.vector_lanes,
        "dram": roof.dram_bytes / hw.dram_bytes_per_cycle,
    }
    assert roof.bound == max(times, key=times.__getitem__)
    assert roof.cycles == math.ceil(max(times.values()))


EMBED = """
model e {
  input ids: i32[16]
  param table: f32[30000, 64]
  param w: f32[64, 64]
  h = gather(table, ids, axis=0)
  y = matmul(h, w)
  z = matmul(table, transpose(w, perm=[1, 0]))
  output y
}
"""


def test_an_embedding_table_counts_the_rows_gathered():
    # DistilBERT at 32 tokens was "255%" of a bound that read its 31 MB table whole
    graph = check_model(parse_model(EMBED))
    roof = model_roofline(graph, load_hardware("edge"))
    assert roof.dram_bytes == 4 * 16 + 16 * 64 * 4 + 4 * 64 * 64 + 4 * 16 * 64
    # a table that a product also reads in full counts whole
    graph = check_model(parse_model(EMBED.replace("output y", "output y, z")))
    roof = model_roofline(graph, load_hardware("edge"))
    assert roof.dram_bytes >= 4 * 30000 * 64


@pytest.mark.parametrize("preset", ["edge", "datacenter"])
def test_every_program_of_a_model_is_measured_against_one_bound(preset):
    """Fusion lowers the program's own bound (less DRAM traffic); the model's stays,
    and both programs take at least that long."""
    hw = load_hardware(preset)
    graph = load_model("examples/mlp.model").graph
    result = optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw)
    roof = model_roofline(graph, hw)
    bounds = []
    for g in (graph, result.graph):
        compiled = compile_graph(g, hw)
        report = simulate(
            compiled.program, hw, compiled.feeds(load_model("examples/mlp.model").bindings(0))
        ).report
        assert report.cycles >= roof.cycles
        bounds.append(report.roofline_cycles)
    assert bounds[1] < bounds[0]  # the program's own bound moved
    assert model_roofline(result.graph, hw).dram_bytes == roof.dram_bytes


def test_reports_give_the_model_bound(tmp_path, capsys):
    sim = tmp_path / "sim.json"
    assert main(["simulate", "examples/mlp.model", "-q", "--report", str(sim)]) == 0
    out = capsys.readouterr().out
    d = json.loads(sim.read_text())
    roof = model_roofline(load_model("examples/mlp.model").graph, load_hardware("edge"))
    assert d["roofline_of"] == "model" and d["roofline_cycles"] == roof.cycles
    assert d["roofline_fraction"] == pytest.approx(roof.cycles / d["cycles"])
    assert f"model roofline {roof.cycles:,}" in out
    opt = tmp_path / "opt.json"
    assert main(["optimize", "examples/mlp.model", "-q", "--report", str(opt)]) == 0
    o = json.loads(opt.read_text())
    assert o["roofline_cycles"] == roof.cycles and o["roofline_bound"] == roof.bound
    assert o["roofline_fraction"] == pytest.approx(roof.cycles / o["cost_after"])


def test_assembly_is_measured_against_its_own_bound(tmp_path, capsys):
    asm = tmp_path / "m.asm"
    assert main(["compile", "examples/mlp.model", "-q", "-o", str(asm)]) == 0
    report = tmp_path / "r.json"
    assert main(["simulate", str(asm), "--report", str(report)]) == 0
    d = json.loads(report.read_text())
    assert d["roofline_of"] == "program"
    assert d["roofline_cycles"] == d["program_roofline_cycles"]
