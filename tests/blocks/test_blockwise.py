"""Optimizing block by block: the same program as a whole-graph run, from the cache
on a second run, and on a Dask cluster."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqsat.blocks import CompileCache, optimize_blockwise, plan_blocks
from eqsat.cli import main
from eqsat.interpreter import evaluate, random_bindings
from eqsat.pipeline import optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from hwsim import load_hardware
from tests.blocks.models import stacked_model
from tests.conftest import ROOT

RULES = compile_rule_paths([DEFAULT_RULES_DIR])


@pytest.fixture(scope="module")
def stack():
    return check_model(parse_model(stacked_model(4)))


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_blockwise_equals_the_whole_graph_run_and_computes_the_same(stack, hw_name):
    hw = load_hardware(hw_name)
    whole = optimize(stack, RULES, hw)
    blocks = optimize_blockwise(stack, plan_blocks(stack, RULES.nestings), RULES, hw)
    assert blocks.after.cycles <= whole.after.cycles
    assert blocks.after.kernels == whole.after.kernels
    assert blocks.after.cycles < blocks.before.cycles  # the layers did get optimized
    bindings = random_bindings(stack, 3)
    want, got = evaluate(stack, bindings), evaluate(blocks.graph, bindings)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_a_second_run_reads_every_block_from_the_cache(stack, tmp_path):
    hw = load_hardware("edge")
    plan = plan_blocks(stack, RULES.nestings)
    first_cache = CompileCache(tmp_path)
    first = optimize_blockwise(stack, plan, RULES, hw, cache=first_cache)
    assert first.blocks.cache_hits == 0 and first_cache.misses == len(plan.distinct)
    second = optimize_blockwise(stack, plan, RULES, hw, cache=CompileCache(tmp_path))
    assert second.blocks.cache_hits == len(plan.distinct)
    assert second.graph.structure() == first.graph.structure()
    assert second.after == first.after


def test_a_changed_hardware_or_rule_set_misses_the_cache(stack, tmp_path):
    plan = plan_blocks(stack, RULES.nestings)
    optimize_blockwise(stack, plan, RULES, load_hardware("edge"), cache=CompileCache(tmp_path))
    other_hw = optimize_blockwise(
        stack, plan, RULES, load_hardware("datacenter"), cache=CompileCache(tmp_path)
    )
    assert other_hw.blocks.cache_hits == 0
    fewer = compile_rule_paths([DEFAULT_RULES_DIR / "algebra.rules"])
    other_rules = optimize_blockwise(
        stack, plan, fewer, load_hardware("edge"), cache=CompileCache(tmp_path)
    )
    assert other_rules.blocks.cache_hits == 0


def test_a_damaged_cache_entry_is_a_miss_not_an_error(stack, tmp_path):
    hw = load_hardware("edge")
    plan = plan_blocks(stack, RULES.nestings)
    first = optimize_blockwise(stack, plan, RULES, hw, cache=CompileCache(tmp_path))
    entries = sorted(tmp_path.glob("*/*.json"))
    assert len(entries) == len(plan.distinct)
    entries[0].write_text(entries[0].read_text()[:40])  # cut short
    entries[1].write_text(json.dumps({"key": "someone else's"}))
    again = optimize_blockwise(stack, plan, RULES, hw, cache=CompileCache(tmp_path))
    assert again.blocks.cache_hits == len(plan.distinct) - 2
    assert again.graph.structure() == first.graph.structure()


def test_the_cache_keeps_to_its_size_bound(tmp_path):
    cache = CompileCache(tmp_path, max_bytes=3000)
    for k in range(10):
        cache.put(f"{k:02d}" + "0" * 62, {"payload": "x" * 1000})
    sizes = [p.stat().st_size for p in tmp_path.glob("*/*.json")]
    assert sum(sizes) <= 3000 and len(sizes) >= 2
    assert cache.get("09" + "0" * 62) is not None  # the newest entry survives


def test_optimize_cli_reports_blocks_and_no_blocks_runs_the_whole_graph(tmp_path, capsys):
    model = tmp_path / "stack.model"
    model.write_text(stacked_model(3))
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["optimize", str(model), "-q", "--verify", *cache]) == 0
    out = capsys.readouterr().out
    assert "blocks: 4 blocks, 2 distinct" in out
    assert (
        "a whole-graph run could also apply add-assoc where add reads add across a cut (h0, h1)"
        in out
    )
    assert "verified" in out
    assert main(["optimize", str(model), "-q", *cache, "--report", str(tmp_path / "r.json")]) == 0
    assert "compile cache: 2 of 2 distinct blocks reused" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["blocks"]["distinct"] == 2 and report["blocks"]["cache_hits"] == 2
    assert main(["optimize", str(model), "-q", "--no-blocks"]) == 0
    assert "blocks:" not in capsys.readouterr().out


def test_scheduler_flag_errors_are_usage_errors(tmp_path, capsys):
    model = tmp_path / "stack.model"
    model.write_text(stacked_model(2))
    assert main(["optimize", str(model), "-q", "--no-cache", "--scheduler", "local:0"]) == 1
    err = capsys.readouterr().err
    assert "eqsat optimize: error: --scheduler local:0: the number of local workers" in err
    assert main(["optimize", str(model), "-q", "--no-cache", "--scheduler", "nowhere"]) == 1
    assert "expected local, local:N or a scheduler address" in capsys.readouterr().err


def test_a_dask_cluster_gives_the_serial_result(stack, dask_address):
    from eqsat.blocks.scheduler import dask_client

    hw = load_hardware("edge")
    plan = plan_blocks(stack, RULES.nestings)
    serial = optimize_blockwise(stack, plan, RULES, hw)
    with dask_client(dask_address) as client:
        remote = optimize_blockwise(stack, plan, RULES, hw, scheduler=client)
    assert remote.blocks.scheduler == f"dask at {dask_address} (2 workers)"
    assert remote.graph.structure() == serial.graph.structure()


def test_scheduler_specs_parse():
    from eqsat.blocks.scheduler import parse_scheduler

    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("local")[0] == "local"
    assert parse_scheduler("10.0.0.5:8786") == ("address", "tcp://10.0.0.5:8786")
    assert parse_scheduler("tls://h:1") == ("address", "tls://h:1")


def test_a_bad_scheduler_is_an_error_even_when_the_model_has_no_repeats(capsys):
    mlp = str(ROOT / "examples" / "mlp.model")
    assert main(["optimize", mlp, "-q", "--scheduler", "local:x"]) == 1
    assert "--scheduler local:x: the number of local workers" in capsys.readouterr().err
