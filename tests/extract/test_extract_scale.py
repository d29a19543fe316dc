"""Extraction at scale: warm start, pruning, time limit, local search, the checker."""

from __future__ import annotations

import numpy as np
import pytest
from extract_helpers import DATA, brute_force, egraphs, layered_egraph
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from eqsat.extract import OPTIMAL, TIME_LIMIT, EGraph, NoTermError, greedy_extract, ilp_extract
from eqsat.extract.check import (
    CYCLE,
    MISSING_CHILD,
    MISSING_ROOT,
    UNKNOWN_NODE,
    WRONG_CLASS,
    CheckFailure,
    check_extraction,
)
from eqsat.extract.greedy import greedy_choice
from eqsat.extract.highs_run import (
    KILLED,
    LIMIT_STATUS,
    MilpProblem,
    _solve_in_child,
    solve_milp,
)
from eqsat.extract.ilp import _Model
from eqsat.extract.improve import dag_classes, improve_choice
from eqsat.extract.prune import Pruned, prune
from eqsat.extract.serialized import parse_json_dict, to_json_dict


def _greedy_nodes(g: EGraph, roots: list[int]) -> list[int] | None:
    try:
        ext = greedy_extract(g, [g.class_ids[r] for r in roots])
    except NoTermError:
        return None
    return [g.node_index[n] for n in ext.nodes]


def _feasible(problem: MilpProblem, x: np.ndarray) -> bool:
    """x within bounds, integral where flagged, every row within its bounds."""
    tol = 1e-9
    integral = problem.integrality != 0
    rows = problem.a @ x
    return bool(
        np.all(x >= problem.lb - tol)
        and np.all(x <= problem.ub + tol)
        and np.allclose(x[integral], np.round(x[integral]))
        and np.all(rows >= problem.row_lb - tol)
        and np.all(rows <= problem.row_ub + tol)
    )


@settings(max_examples=150, deadline=None)
@given(egraphs(max_classes=10, max_nodes=4, max_children=3))
def test_greedy_start_is_a_feasible_point_of_the_pruned_model(g: EGraph) -> None:
    # Random e-graphs with back edges, so level rows (cycles) are exercised too.
    roots = list(g.roots)
    start = _greedy_nodes(g, roots)
    if start is None:
        return
    model = _Model(g, prune(g, roots, protect=start), roots, start=start)
    x = model.problem.start
    assert x is not None and _feasible(model.problem, x)
    assert float(model.problem.c @ x) == pytest.approx(greedy_extract(g).dag_cost)


@settings(max_examples=60, deadline=None)
@given(egraphs(max_classes=12, max_nodes=4, max_children=3))
def test_warm_started_ilp_is_never_worse_than_greedy(g: EGraph) -> None:
    try:
        greedy = greedy_extract(g)
    except NoTermError:
        return
    for limit in (0.0, 20.0):
        ext = ilp_extract(g, time_limit=limit)
        assert ext.dag_cost <= greedy.dag_cost + 1e-9
        cost = check_extraction(to_json_dict(g), ext.choice, list(ext.roots))
        assert cost == pytest.approx(ext.dag_cost)
        assert ext.lower_bound is None or ext.lower_bound <= ext.dag_cost + 1e-9


def _unpruned(g: EGraph, roots: list[int]) -> Pruned:
    """Every usable node of the reachable classes, all in one "cyclic" component, so
    every edge (self loops too) gets a level row: the ILP without any pruning."""
    reach = g.reachable_classes(roots)
    nodes = [n for n in range(g.n_nodes) if g.usable[n] and reach[g.node_class[n]]]
    classes = sorted(
        {int(g.node_class[n]) for n in nodes} | {d for n in nodes for d in g.child_sets[n]}
    )
    label = np.zeros(g.n_classes, dtype=np.int64)
    size = np.full(g.n_classes, len(classes) + 1, dtype=np.int64)
    return Pruned(nodes, classes, label, size)


@settings(max_examples=80, deadline=None)
@given(egraphs(max_classes=6, max_nodes=3, max_children=2))
def test_pruning_keeps_the_optimum(g: EGraph) -> None:
    roots = list(g.roots)
    best = brute_force(g, [g.class_ids[r] for r in roots])
    if best == float("inf"):
        return
    pruned = _Model(g, prune(g, roots), roots).problem
    full = _Model(g, _unpruned(g, roots), roots).problem
    got_pruned = solve_milp(pruned, time_limit=20, isolate=False)
    got_full = solve_milp(full, time_limit=20, isolate=False)
    assert got_pruned.status == 0 and got_full.status == 0
    assert got_full.primal_bound == pytest.approx(best)
    assert got_pruned.primal_bound == pytest.approx(best)
    assert pruned.n_vars <= full.n_vars


def test_pruning_gives_level_rows_only_to_classes_on_cycles() -> None:
    g = EGraph.from_classes(
        {
            "L": [("l", [], 1.0)],
            "A": [("fa", ["B"], 1.0), ("a", ["L"], 5.0)],
            "B": [("fb", ["A"], 1.0), ("b", ["L"], 5.0)],
            "R": [("r", ["A", "L"], 1.0)],
        },
        roots=["R"],
    )
    kept = prune(g, [g.class_index["R"]])
    on_cycle = {g.class_ids[c] for c in kept.classes if kept.component_size[c] > 1}
    assert on_cycle == {"A", "B"}
    model = _Model(g, kept, [g.class_index["R"]])
    # 4 nodes + 4 classes + 2 levels (A and B only).
    assert model.problem.n_vars == len(kept.nodes) + 4 + 2


def hard_problem(start: bool) -> MilpProblem:
    """An integer program HiGHS does not finish within seconds; zero is feasible."""
    rng = np.random.default_rng(0)
    n, m = 300, 200
    return MilpProblem(
        c=-rng.random(n),
        integrality=np.ones(n),
        lb=np.zeros(n),
        ub=np.full(n, 5.0),
        a=csr_matrix(rng.integers(0, 10, (m, n)).astype(float)),
        row_lb=np.zeros(m),
        row_ub=np.full(m, 500.0),
        start=np.zeros(n) if start else None,
    )


def test_time_limit_returns_the_best_incumbent_in_process() -> None:
    got = solve_milp(hard_problem(start=True), time_limit=0.5, isolate=False)
    assert got.status == LIMIT_STATUS and got.x is not None
    assert got.primal_bound is not None and got.primal_bound <= 0.0  # no worse than the start
    assert got.dual_bound is not None and got.dual_bound <= got.primal_bound


def test_killed_solver_keeps_its_start_as_incumbent() -> None:
    # Killed long before HiGHS could report anything: the start is still an answer.
    got = _solve_in_child(hard_problem(start=True), {"time_limit": 30.0}, deadline=0.05)
    assert got.status == KILLED and got.x is not None
    assert np.array_equal(got.x, np.zeros(300)) and got.primal_bound == 0.0
    none = _solve_in_child(hard_problem(start=False), {"time_limit": 30.0}, deadline=0.05)
    assert none.status == KILLED and none.x is None


def test_ilp_at_its_limit_returns_a_valid_answer_with_a_gap() -> None:
    g = layered_egraph(600, 4, seed=3)
    greedy = greedy_extract(g)
    ext = ilp_extract(g, time_limit=0.0)
    assert ext.dag_cost <= greedy.dag_cost
    check_extraction(to_json_dict(g), ext.choice, list(ext.roots))
    if ext.status == TIME_LIMIT:
        assert ext.lower_bound is not None and 0.0 <= ext.gap <= 1.0
        assert "gap" in ext.detail
    else:
        assert ext.status == OPTIMAL and ext.gap == 0.0


@settings(max_examples=100, deadline=None)
@given(egraphs(max_classes=10, max_nodes=4, max_children=3))
def test_local_search_never_raises_the_cost_and_stays_valid(g: EGraph) -> None:
    roots = list(g.roots)
    choice = greedy_choice(g, roots)
    before = dag_classes(g, choice, roots)
    if before is None:
        return
    after = dag_classes(g, improve_choice(g, choice, roots), roots)
    assert after is not None and after[0] <= before[0]


def test_local_search_finds_the_shared_child() -> None:
    # Greedy settles D and E on their own (x and y tie at 3); R uses both S and D,
    # so D should take the node that shares S.
    g = EGraph.from_classes(
        {
            "S": [("s", [], 3.0)],
            "X": [("x", [], 3.0)],
            "D": [("dx", ["X"], 1.0), ("ds", ["S"], 1.0)],
            "R": [("r", ["S", "D"], 1.0)],
        },
        roots=["R"],
    )
    ext = greedy_extract(g)
    assert ext.choice["D"] == "D.1" and ext.dag_cost == 5.0


# ------------------------------------------------------------------ the checker

SHARED = {
    "nodes": {
        "s": {"op": "s", "children": [], "eclass": "S", "cost": 4.0},
        "a": {"op": "g", "children": ["s"], "eclass": "A", "cost": 1.0},
        "b": {"op": "h", "children": ["s"], "eclass": "B", "cost": 1.0},
        "b2": {"op": "h2", "children": ["a"], "eclass": "B", "cost": 1.0},
        "a2": {"op": "g2", "children": ["b2"], "eclass": "A", "cost": 1.0},
        "r": {"op": "f", "children": ["a", "b"], "eclass": "R", "cost": 1.0},
    },
    "root_eclasses": ["R"],
}
GOOD = {"R": "r", "A": "a", "B": "b", "S": "s"}


def test_checker_accepts_a_valid_dag_and_pays_shared_classes_once() -> None:
    assert check_extraction(SHARED, GOOD, ["R"]) == 1.0 + 1.0 + 1.0 + 4.0


@pytest.mark.parametrize(
    ("choice", "kind"),
    [
        ({k: v for k, v in GOOD.items() if k != "R"}, MISSING_ROOT),
        ({**GOOD, "A": "nope"}, UNKNOWN_NODE),
        ({**GOOD, "A": "b"}, WRONG_CLASS),
        ({k: v for k, v in GOOD.items() if k != "S"}, MISSING_CHILD),
        ({**GOOD, "A": "a2", "B": "b2"}, CYCLE),
    ],
    ids=["missing_root", "unknown_node", "wrong_class", "missing_child", "cycle"],
)
def test_checker_rejects_each_kind_of_broken_answer(choice: dict[str, str], kind: str) -> None:
    with pytest.raises(CheckFailure) as info:
        check_extraction(SHARED, choice, ["R"])
    assert info.value.kind == kind


def test_checker_agrees_with_the_extractors_on_the_sample_files() -> None:
    import json

    for name in ("shared_subterm.json", "cycle.json"):
        data = json.loads((DATA / name).read_text())
        g = parse_json_dict(data)
        for ext in (greedy_extract(g), ilp_extract(g)):
            assert check_extraction(data, ext.choice, list(ext.roots)) == ext.dag_cost


def test_bench_runs_over_a_data_folder(tmp_path, monkeypatch) -> None:
    import importlib.util
    import json
    import shutil
    import sys
    from pathlib import Path

    bench_path = Path(__file__).resolve().parents[2] / "bench" / "extraction_gym.py"
    spec = importlib.util.spec_from_file_location("extraction_gym", bench_path)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "extraction_gym", bench)  # dataclasses look it up
    spec.loader.exec_module(bench)
    data = tmp_path / "data" / "mine"
    data.mkdir(parents=True)
    shutil.copy(DATA / "shared_subterm.json", data)
    negative = json.loads((DATA / "shared_subterm.json").read_text())
    next(iter(negative["nodes"].values()))["cost"] = -1
    (data / "negative.json").write_text(json.dumps(negative))
    out = tmp_path / "rows.json"
    assert bench.main([str(tmp_path / "data"), "--time-limit", "5", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = {r["file"]: r for r in report["rows"]}
    shared = rows["mine/shared_subterm.json"]
    assert shared["greedy_cost"] == 9.0 and shared["fgd_cost"] == 9.0
    assert shared["ilp_cost"] == 7.0 and shared["ilp_status"] == OPTIMAL
    negative_row = rows["mine/negative.json"]
    assert negative_row["status"] == "ok" and negative_row["ilp_status"] == OPTIMAL
    assert negative_row["ilp_cost"] <= negative_row["greedy_cost"]
    assert report["summary"]["refused_negative_cost"] == 0
    assert report["summary"]["greedy_vs_fgd"]["greedy_costlier"] == 0


@settings(max_examples=60, deadline=None)
@given(egraphs(max_classes=6, max_nodes=3, max_children=2), st.floats(0.5, 6.0))
def test_negative_costs_the_ilp_finds_the_optimum_and_takes_no_unneeded_reward(
    g: EGraph, shift: float
) -> None:
    # maxsat's e-graphs reward some nodes (negative costs): a class must still be used
    # only when a chosen node needs it, or the ILP would collect rewards off the DAG.
    g = g.with_costs(g.costs - shift)
    roots = [g.class_ids[r] for r in g.roots]
    best = brute_force(g, roots)
    if best == float("inf"):
        return
    greedy = greedy_extract(g)
    ext = ilp_extract(g, time_limit=20)
    assert check_extraction(to_json_dict(g), ext.choice, list(ext.roots)) == pytest.approx(
        ext.dag_cost
    )
    assert ext.dag_cost <= greedy.dag_cost + 1e-9
    assert ext.status == OPTIMAL and ext.dag_cost == pytest.approx(best)
    # the model prices exactly the DAG: its bound is the optimum, not below it
    assert ext.lower_bound == pytest.approx(best, abs=1e-6)
