"""`eqsat profile`: per-kernel figures from the simulator's event record, and the
Chrome trace of the run. The model is built here (not a bundled example)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from backend import compile_graph
from eqsat.cli import main
from eqsat.interpreter import random_bindings
from eqsat.profile import profile_run
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate

MODEL = """
model gated_ffn {
  input x: f32[64, 96]
  param w: f32[96, 192]
  param b: f32[192]
  param v: f32[192, 96]
  h = relu(add(matmul(x, w), b))
  g = mul(h, sigmoid(h))
  y = softmax(matmul(g, v), axis=-1)
  output y
}
"""


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "gated_ffn.model"
    path.write_text(MODEL)
    return path


@pytest.fixture(scope="module")
def recorded():
    graph = check_model(parse_model(MODEL))
    hw = load_hardware("edge")
    compiled = compile_graph(graph, hw)
    result = simulate(compiled.program, hw, compiled.feeds(random_bindings(graph, 0)), record=True)
    return compiled.program, hw, result.report


def test_events_sum_to_the_busy_cycles(recorded) -> None:
    program, _, report = recorded
    busy = defaultdict(float)
    for e in report.events:
        assert 0 <= e.start <= e.end <= report.cycles
        busy[e.unit] += e.end - e.start
    assert dict(busy) == pytest.approx({u: v for u, v in report.busy.items() if v})
    assert len(report.events) == len(program.instrs)  # one per instruction and marker


def test_flows_are_the_tokens_waited_on(recorded) -> None:
    program, _, report = recorded
    waits = sum(len(ins.wait) for ins in program.instrs)
    assert len(report.flows) == waits > 0
    at = {e.index: e for e in report.events}
    for src, dst in report.flows:
        token = set(program.instrs[src].signal) & set(program.instrs[dst].wait)
        assert token, (src, dst)
        assert at[src].end <= at[dst].start + 1e-9


def test_kernels_cover_the_run_and_count_its_work(recorded) -> None:
    program, hw, report = recorded
    kernels = profile_run(program, hw, report)
    assert sum(k.cycles for k in kernels) == report.cycles
    assert [k.name for k in kernels] == [s.name for s in report.kernels]
    assert sum(sum(k.macs.values()) for k in kernels) == sum(report.macs.values())
    assert sum(k.vector_ops for k in kernels) == report.vector_ops
    assert sum(k.dram_bytes for k in kernels) == report.dram_bytes
    for k in kernels:
        assert sum(v for u, v in k.busy.items() if u != "launch") <= 3 * k.cycles
        assert k.bound in ("memory", "overhead", "compute (matrix)", "compute (vector)")
        assert 0 < k.roofline_share <= 1.0


def test_profile_needs_a_recorded_run(recorded) -> None:
    _program, hw, _ = recorded
    graph = check_model(parse_model(MODEL))
    compiled = compile_graph(graph, hw)
    plain = simulate(compiled.program, hw, compiled.feeds(random_bindings(graph, 0))).report
    with pytest.raises(ValueError, match="record=True"):
        profile_run(compiled.program, hw, plain)


def test_profile_command_table_json_and_trace(model_file, tmp_path, capsys) -> None:
    trace, prof = tmp_path / "trace.json", tmp_path / "profile.json"
    code = main(["profile", str(model_file), "-q", "--trace", str(trace), "--json", str(prof)])
    assert code == 0
    text = capsys.readouterr().out
    d = json.loads(prof.read_text())
    assert d["cycles"] == sum(k["cycles"] for k in d["kernels"])
    for k in d["kernels"]:
        assert k["name"] in text and f"{k['cycles']:,}" in text
    assert f"total {d['cycles']:,} cycles" in text

    t = json.loads(trace.read_text())
    events = t["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert set(lanes.values()) >= {"kernels", "load", "store", "matrix", "vector"}
    slices = [e for e in events if e["ph"] == "X"]
    us_per_cycle = 1 / (t["otherData"]["clock_ghz"] * 1e3)
    busy = defaultdict(float)
    for e in slices:
        assert e["dur"] >= 0 and e["ts"] >= 0
        if lanes[e["tid"]] != "kernels":
            busy[lanes[e["tid"]]] += e["args"]["cycles"]
            assert e["args"]["kernel"] in {k["name"] for k in d["kernels"]}
    run_cycles = t["otherData"]["cycles"]
    for lane, cycles in busy.items():
        assert cycles == pytest.approx(t["otherData"]["busy_cycles"][lane])
        assert cycles <= run_cycles  # no lane busier than the run
    starts = [e for e in events if e["ph"] == "s"]
    assert starts and len(starts) == len([e for e in events if e["ph"] == "f"])
    # one DRAM channel: the bandwidth counter never exceeds edge's 16 bytes per cycle
    rates = [e["args"]["bytes_per_cycle"] for e in events if e["ph"] == "C"]
    assert rates and max(rates) <= 16 + 1e-9 and min(rates) >= 0
    kernel_slices = [e for e in slices if lanes[e["tid"]] == "kernels"]
    assert {e["name"] for e in kernel_slices} == {k["name"] for k in d["kernels"]}
    for e in kernel_slices:  # every kernel has instruction slices inside its span
        inside = [
            s for s in slices
            if lanes[s["tid"]] != "kernels" and s["args"]["kernel"] == e["name"]
        ]  # fmt: skip
        assert inside
        assert e["dur"] == pytest.approx(e["args"]["cycles"] * us_per_cycle)


def test_profile_of_assembly_and_plain_output(model_file, tmp_path, capsys) -> None:
    asm = tmp_path / "p.asm"
    assert main(["compile", str(model_file), "-q", "--no-optimize", "-o", str(asm)]) == 0
    capsys.readouterr()
    assert main(["profile", str(asm), "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["kernel", "cycles", "share"]
    rows = lines[2 : lines.index(next(x for x in lines if x.startswith("total")))]
    assert len(rows) == 2


def test_diff_of_two_profiles(model_file, tmp_path, capsys) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["profile", str(model_file), "-q", "--no-optimize", "--json", str(a)]) == 0
    assert main(["profile", str(model_file), "-q", "--json", str(b)]) == 0
    capsys.readouterr()
    assert main(["diff", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    total = next(line for line in lines if line.startswith("total")).split()
    assert total[1:3] == [f"{da['cycles']:,}", f"{db['cycles']:,}"]
    names_a = {k["name"] for k in da["kernels"]}
    names_b = {k["name"] for k in db["kernels"]}
    for line in lines[3:-1]:
        name = line.split()[0]
        assert ("removed" in line) == (name in names_a - names_b)
        assert ("added" in line) == (name in names_b - names_a)


def test_diff_refuses_what_is_not_a_profile(tmp_path, capsys) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"nodes": {}}')
    assert main(["diff", str(bad), str(bad)]) == 1
    assert "not a profile" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "cycles"),
    [("2ms", 2e6), ("800us", 8e5), ("0.5", 5e8), ("41000cycles", 41000), ("7 cycle", 7)],
)
def test_parse_measured(text, cycles) -> None:
    from eqsat.measured import parse_measured

    assert parse_measured(text, clock_ghz=1.0) == pytest.approx(cycles)


@pytest.mark.parametrize("text", ["", "fast", "-1ms", "0s", "3 parsecs"])
def test_parse_measured_refuses(text) -> None:
    from eqsat.measured import parse_measured

    with pytest.raises(ValueError):
        parse_measured(text, clock_ghz=1.0)


def test_measured_runtime_is_explained_by_factors_that_add_up(recorded) -> None:
    from eqsat.measured import explain_measured

    program, hw, report = recorded
    kernels = profile_run(program, hw, report)
    measured = 1.6 * report.cycles
    exp = explain_measured(measured, report.cycles, kernels)
    groups = {"memory": 0.0, "compute": 0.0, "overhead": 0.0}
    for k in kernels:
        g = "memory" if k.bound == "memory" else "overhead" if k.bound == "overhead" else "compute"
        groups[g] += k.cycles
    for res, factor in exp.factors.items():
        if factor is not None:  # the other resources as simulated, this one scaled
            rest = sum(v for g, v in groups.items() if g != res)
            assert rest + factor * groups[res] == pytest.approx(measured)
    assert exp.ratio == pytest.approx(1.6)
    assert "1.60x" in exp.lines()[0]
    close = explain_measured(1.05 * report.cycles, report.cycles, kernels)
    assert "makes sense" in close.lines()[0]
