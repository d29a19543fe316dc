"""Saturation limits hold on a rule set that explodes (associativity + commutativity
on a long add chain), and a valid, equivalent program is still extracted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from eqsat.budget import BYTES_PER_NODE, OutOfTime, current_rss, parse_size
from eqsat.cli import main
from eqsat.config import Limits
from eqsat.egraph.saturate import (
    ITERATION_LIMIT,
    MEMORY_LIMIT,
    NODE_LIMIT,
    RULES_SKIPPED,
    SATURATED,
    TIME_LIMIT,
)
from eqsat.extract.result import OUT_OF_TIME
from eqsat.interpreter import random_bindings
from eqsat.rulesets import compile_rule_paths
from frontend import load_model
from tests.optimize_helpers import DATA, assert_same_outputs, optimize_graph


@pytest.fixture(scope="module")
def chain():
    return load_model(DATA / "add_chain.model")[1]


@pytest.fixture(scope="module")
def explode():
    return compile_rule_paths([DATA / "explode.rules"])


@pytest.mark.parametrize("node_limit", [500, 5_000, 20_000])
def test_node_limit_stops_within_a_small_overshoot(chain, explode, node_limit) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=100, node_limit=node_limit))
    sat = result.saturation
    # Either the limit is reached, or the rules whose matches exceed their share of
    # the budget were skipped and nothing else grew the e-graph: the report says which.
    assert sat.stop_reason in (NODE_LIMIT, RULES_SKIPPED)
    if sat.stop_reason == NODE_LIMIT:
        assert sat.nodes >= node_limit
        assert f"node limit reached at {sat.nodes:,}" in sat.describe_stop()
    else:
        assert sat.nodes < node_limit and sat.skipped_rules
        assert set(sat.skipped_rules) <= {"add-comm", "add-assoc"}
        assert "rules skipped by the scheduler" in sat.describe_stop()
    # The back-off scheduler shares the remaining budget among the matching rules.
    assert sat.nodes <= 1.5 * node_limit
    assert_same_outputs(chain, result.graph, random_bindings(chain, 0))


def test_time_limit_stops_saturation(chain, explode) -> None:
    limit = 0.3
    result = optimize_graph(
        chain, explode, Limits(iter_limit=100, node_limit=10**9, time_limit=limit)
    )
    sat = result.saturation
    assert sat.stop_reason == TIME_LIMIT
    # A round predicted to overrun is not started; allow for a slow machine.
    assert sat.seconds < 10 * limit
    assert_same_outputs(chain, result.graph, random_bindings(chain, 1))


def test_iteration_limit(chain, explode) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=2, node_limit=10**9))
    assert result.saturation.stop_reason == ITERATION_LIMIT
    assert len(result.saturation.iterations) == 2


def test_small_rule_sets_saturate(chain) -> None:
    rules = compile_rule_paths([DATA / "fuse_only.rules"])
    result = optimize_graph(chain, rules)
    assert result.saturation.stop_reason == SATURATED


def test_each_round_reports_its_size(chain, explode) -> None:
    result = optimize_graph(chain, explode, Limits(iter_limit=4, node_limit=10**9))
    sizes = [it.nodes for it in result.saturation.iterations]
    assert sizes == sorted(sizes) and sizes[-1] > result.saturation.initial_nodes
    assert result.saturation.rules_fired["add-comm"] > 0
    assert result.saturation.rules_fired["add-assoc"] > 0


def test_time_limit_bounds_the_whole_optimization(chain, explode) -> None:
    """Saturation leaves room for extraction: the total, not only saturation, is bounded
    (bench/limits.py measures the 2T + 1 s acceptance figure)."""
    limit = 1.0
    result = optimize_graph(
        chain, explode, Limits(iter_limit=100, node_limit=10**9, time_limit=limit)
    )
    assert result.saturation.stop_reason == TIME_LIMIT
    assert result.times["total"] < 5 * limit
    assert_same_outputs(chain, result.graph, random_bindings(chain, 2))


def test_extraction_out_of_time_keeps_the_input(chain, explode, monkeypatch) -> None:
    import eqsat.pipeline as pipeline

    def expired(budget, every=1024):
        def tick() -> None:
            raise OutOfTime

        return tick

    monkeypatch.setattr(pipeline, "deadline_checker", expired)
    result = optimize_graph(chain, explode, Limits(iter_limit=2, node_limit=10**9))
    assert result.extraction.status == OUT_OF_TIME and result.kept_original
    assert result.graph is result.original
    assert result.after.cycles == result.before.cycles


def test_memory_limit_caps_the_egraph(chain, explode) -> None:
    # Room for about 1,000 more e-nodes than this process holds now.
    limit = current_rss() + 1_000 * BYTES_PER_NODE
    result = optimize_graph(
        chain, explode, Limits(iter_limit=100, node_limit=10**9, memory_limit=limit)
    )
    sat = result.saturation
    assert sat.stop_reason == MEMORY_LIMIT
    assert sat.nodes <= sat.initial_nodes + 2_000
    assert "memory limit" in sat.describe_stop()
    assert_same_outputs(chain, result.graph, random_bindings(chain, 3))


def test_memory_limit_flag_bounds_peak_rss(tmp_path) -> None:
    """The issue's case: unbounded node and time limits, --memory-limit 2GB."""
    # The address-space cap is a guard: were the limit broken, the child fails instead
    # of growing the e-graph to tens of GB.
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))\n"
        "from eqsat.cli import main\n"
        "code = main(sys.argv[1:])\n"
        # VmHWM: this process's own peak (ru_maxrss would include the forking
        # parent's, which getrusage keeps across exec)
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print(int(hwm.split()[1]) * 1024)\n"
        "sys.exit(code)\n"
    )
    args = [str(DATA / "add_chain.model"), "--rules", str(DATA / "explode.rules")]
    args += ["--node-limit", "100000000", "--time-limit", "600", "--memory-limit", "2GB", "-q"]
    proc = subprocess.run(
        [sys.executable, "-c", script, "optimize", *args, "-o", str(tmp_path / "o.model")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip().splitlines()[-1]) < 2 * 10**9
    assert "stopped: memory limit" in proc.stdout or "stopped: rules skipped" in proc.stdout


@pytest.mark.parametrize(
    ("text", "size"),
    [("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5g", 1_500_000_000), ("4096", 4096)],
)
def test_parse_size(text, size) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "2 parsecs", "-1GB", "0", "GB"])
def test_parse_size_refuses(text) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_bad_memory_limit_flag_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["optimize", str(DATA / "add_chain.model"), "--memory-limit", "lots"])
    assert exc.value.code == 2
    assert "--memory-limit" in capsys.readouterr().err


def test_out_of_memory_is_a_clean_error(monkeypatch, capsys) -> None:
    from eqsat.cli import build_parser

    def exhausted(args):
        raise MemoryError

    parser = build_parser()
    monkeypatch.setattr("eqsat.cli.build_parser", lambda: parser)
    for action in parser._actions:
        if action.dest == "command":
            action.choices["check"].set_defaults(func=exhausted)
    assert main(["check", str(DATA / "add_chain.model")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("eqsat check: error: out of memory") and "Traceback" not in err
