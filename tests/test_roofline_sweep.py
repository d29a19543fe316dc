"""`eqsat roofline --sweep`: the model's roofline per batch size and the size to serve
at, checked against a hand computation on a model built here."""

from __future__ import annotations

import json

import pytest

from eqsat.batch_sweep import parse_sweep
from eqsat.cli import main

# y = x @ w with K = N = 256 in f32. FLOPs 2*B*K*N; DRAM 4*(B*K + K*N + B*N) bytes.
MODEL = """
model gemm {
  dim B = 1
  input x: f32[B, 256]
  param w: f32[256, 256]
  y = matmul(x, w)
  output y
}
"""
SWEEP = [1, 2, 4, 8, 16, 32, 64]


def hand(b: int, hw: dict) -> dict:
    flops = 2 * b * 256 * 256
    dram = 4 * (b * 256 + 256 * 256 + b * 256)
    matrix = b * 256 * 256 / hw["f32_macs"]
    memory = dram / hw["bw"]
    return {"flops": flops, "dram": dram, "compute_bound": matrix >= memory}


EDGE = {"f32_macs": 64, "bw": 16}  # hwsim/presets/edge.toml


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "gemm.model"
    path.write_text(MODEL)
    return path


def test_sweep_matches_a_hand_computation(model, tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    sweep = "B=" + ",".join(map(str, SWEEP))
    assert (
        main(["roofline", str(model), "--sweep", sweep, "--no-simulate", "-q", "--json", str(out)])
        == 0
    )
    d = json.loads(out.read_text())
    assert [p["value"] for p in d["points"]] == SWEEP
    for p in d["points"]:
        h = hand(p["value"], EDGE)
        assert p["flops"] == h["flops"] and p["dram_bytes"] == h["dram"]
        assert (p["bound"] != "dram") == h["compute_bound"]
        assert p["fits"] is True  # 2 GiB on edge
    # compute-bound from B >= 1024 * 16 / (1024 - 128) = 18.3: the first swept is 32
    smallest = min(b for b in SWEEP if hand(b, EDGE)["compute_bound"])
    assert smallest == 32 and d["chosen"]["value"] == 32
    assert d["ridge"] == pytest.approx(2 * 64 / 16)
    text = capsys.readouterr().out
    assert "serve at B=32: the smallest compute-bound value that fits" in text


def test_memory_capacity_limits_the_choice(model, tmp_path) -> None:
    # A device too small for B=32's buffers: nothing compute-bound fits, so the largest
    # value that fits is chosen.
    hw = tmp_path / "small.toml"
    hw.write_text('base = "edge"\ndram_capacity_bytes = 300000\n')
    out = tmp_path / "r.json"
    args = ["roofline", str(model), "--hw", str(hw), "--sweep", "B=8,16,32,64"]
    assert main([*args, "--no-simulate", "-q", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    fits = {p["value"]: p["fits"] for p in d["points"]}
    assert all(p["memory_bytes"] >= hand(p["value"], EDGE)["dram"] for p in d["points"])
    assert fits[64] is False
    chosen = max(v for v, ok in fits.items() if ok)
    assert d["chosen"]["value"] == chosen
    assert not any(p["bound"] != "dram" and p["fits"] for p in d["points"])
    assert d["reason"].startswith("no value is compute-bound")


def test_simulated_sweep_and_plot(model, tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="the [plot] extra is not installed")
    plot, out = tmp_path / "r.png", tmp_path / "r.json"
    args = ["roofline", str(model), "--sweep", "B=4,32", "-q", "--plot", str(plot)]
    assert main([*args, "--json", str(out)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for p in json.loads(out.read_text())["points"]:
        assert p["simulated_cycles"] > 0
        assert abs(p["expected_cycles"] / p["simulated_cycles"] - 1) < 0.15


@pytest.mark.parametrize("bad", ["B", "B=", "B=0", "B=1,x", "=4"])
def test_bad_sweep(bad) -> None:
    with pytest.raises(ValueError, match=r"NAME=V1,V2|between 1"):
        parse_sweep(bad)


def test_sweep_of_an_unknown_dimension(model, capsys) -> None:
    assert main(["roofline", str(model), "--sweep", "S=1,2", "--no-simulate", "-q"]) == 1
    assert "has no dimension 'S'" in capsys.readouterr().err
