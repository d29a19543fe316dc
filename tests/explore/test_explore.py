"""`eqsat explore`: hardware points, the Pareto front, serial and Dask runs agree."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.cli import main
from eqsat.explore import expand_sweeps, pareto_front, parse_sweep
from eqsat.flags import UsageError
from hwsim.hardware import HardwareError, derive, load_hardware
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")


@given(st.lists(st.tuples(*[st.integers(0, 5)] * 3), min_size=1, max_size=12))
def test_the_front_is_what_nothing_dominates(points):
    front = set(pareto_front(points))

    def dominates(q, p):
        pairs = list(zip(q, p, strict=True))
        return all(a <= b for a, b in pairs) and any(a < b for a, b in pairs)

    for i, p in enumerate(points):
        beaten = any(dominates(q, p) for q in points)
        assert (i in front) == (not beaten)


def test_sweeps_expand_to_every_combination_with_readable_labels():
    sweeps = [parse_sweep("array=8,16"), parse_sweep("sram_bytes=128KiB,1MiB")]
    points = expand_sweeps(sweeps)
    assert [label for label, _ in points] == [
        "array=8,sram_bytes=131072",
        "array=8,sram_bytes=1048576",
        "array=16,sram_bytes=131072",
        "array=16,sram_bytes=1048576",
    ]
    assert points[0][1] == {"array_rows": 8, "array_cols": 8, "sram_bytes": 131072}


def test_a_bigger_array_keeps_each_dtypes_passes():
    edge = load_hardware("edge")
    big = derive(edge, {"array_rows": 32, "array_cols": 32}, "--sweep")
    assert {dt: big.passes(dt) for dt in big.macs_per_cycle} == {
        dt: edge.passes(dt) for dt in edge.macs_per_cycle
    }
    assert big.macs_per_cycle["i8"] == 1024


@pytest.mark.parametrize(
    "text, message",
    [
        ("array", "expected KEY=V1,V2"),
        ("colour=1,2", "unknown hardware field 'colour'"),
        ("array=8,x", "'x' is not a number"),
        ("sram_bytes=lots", "'lots' is not a size such as 256KiB"),
        ("array=8,8", "a value is given twice"),
    ],
)
def test_bad_sweeps_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_sweep(text)


def test_a_hardware_point_that_cannot_exist_is_a_hardware_error():
    with pytest.raises(HardwareError, match="must be an integer > 0"):
        derive(load_hardware("edge"), {"sram_bytes": 0}, "--sweep")
    with pytest.raises(HardwareError, match="cannot run f32 at 4 passes"):
        derive(load_hardware("edge"), {"array_rows": 1, "array_cols": 2}, "--sweep")


def _points(path):
    rows = json.loads(path.read_text())
    return [{k: v for k, v in r.items() if k not in ("compile_seconds", "cached")} for r in rows]


def test_serial_and_dask_runs_give_the_same_points_and_the_plot_is_written(
    tmp_path, capsys, dask_address
):
    pytest.importorskip("matplotlib", reason="the [plot] extra is not installed")
    sweep = ["--sweep", "array=8,16"]
    serial, remote, plot = tmp_path / "s.json", tmp_path / "d.json", tmp_path / "p.png"
    base = ["explore", MLP, *sweep, "-q", "--no-cache"]
    assert main([*base, "-o", str(serial), "--plot", str(plot)]) == 0
    assert main([*base, "-o", str(remote), "--scheduler", dask_address]) == 0
    assert _points(serial) == _points(remote)
    assert len(_points(serial)) == 2 and any(r["pareto"] for r in _points(serial))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "mlp: 2 variants of edge, simulated cycles" in out


def test_a_rerun_resumes_from_the_cache(tmp_path, capsys):
    args = ["explore", MLP, "--sweep", "array=8,16", "--estimate", "-q"]
    args += ["--cache-dir", str(tmp_path)]
    assert main(args) == 0
    assert "from the cache" not in capsys.readouterr().out
    assert main(args) == 0
    assert "(2 points from the cache, marked c)" in capsys.readouterr().out


def test_output_and_plot_formats_are_checked_before_any_work(tmp_path, capsys):
    assert main(["explore", MLP, "--sweep", "array=8", "-o", str(tmp_path / "x.txt")]) == 1
    assert "write .csv or .json" in capsys.readouterr().err
    assert main(["explore", MLP, "--sweep", "array=8", "--plot", str(tmp_path / "x.gif")]) == 1
    assert "--plot" in capsys.readouterr().err
