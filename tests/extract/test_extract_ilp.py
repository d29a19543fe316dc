"""Exact ILP extraction: optimal on small graphs, never worse than greedy."""

from __future__ import annotations

import pytest
from extract_helpers import DATA, brute_force, check_valid, egraphs
from hypothesis import given, settings

from eqsat.extract import (
    FELL_BACK,
    OPTIMAL,
    EGraph,
    NoTermError,
    greedy_extract,
    ilp_extract,
    load_egraph,
)
from eqsat.extract.highs_run import KILLED, _solve_in_child
from eqsat.extract.ilp import _Model
from eqsat.extract.prune import prune


def test_ilp_beats_greedy_on_shared_subterm() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    greedy = greedy_extract(g)
    ilp = ilp_extract(g)
    # Greedy: f(a, b) = 1 + 4 + 4 = 9. Optimal: f(g(s), h(s)) = 1 + 1 + 1 + 4 = 7.
    assert greedy.dag_cost == 9.0
    assert ilp.dag_cost == 7.0
    assert ilp.status == OPTIMAL
    assert ilp.choice == {"S": "s", "A": "a_of_s", "B": "b_of_s", "R": "root"}
    assert ilp.order[0] == "S" and ilp.order[-1] == "R"
    assert brute_force(g, ["R"]) == 7.0


def test_ilp_respects_cycles_and_subsumption() -> None:
    g = load_egraph(DATA / "cycle.json")
    ext = ilp_extract(g)
    assert ext.choice == {"X": "x_loop", "Y": "y_leaf"}
    assert ext.dag_cost == 3.0
    assert ext.status == OPTIMAL


def test_ilp_needs_acyclicity_constraints() -> None:
    # Zero-cost mutual recursion A <-> B is the cheapest "solution" without acyclicity.
    g = EGraph.from_classes(
        {
            "A": [("fa", ["B"], 0.0), ("a", [], 5.0)],
            "B": [("fb", ["A"], 0.0), ("b", [], 7.0)],
            "C": [("fc", ["C", "A"], 0.0), ("c", [], 1.0)],
            "R": [("r", ["A", "B", "C"], 1.0)],
        },
        roots=["R"],
    )
    ext = ilp_extract(g)
    assert ext.status == OPTIMAL
    assert ext.dag_cost == 1.0 + 5.0 + 0.0 + 1.0  # r, a, fb(A), c
    check_valid(g, ext.choice, ["R"])


def test_pruning_drops_dominated_self_loop_and_dead_nodes() -> None:
    g = EGraph.from_classes(
        {
            "X": [("x", [], 1.0)],
            "Y": [("y", [], 1.0)],
            "A": [
                ("f", ["X"], 2.0),
                ("g", ["X", "Y"], 2.0),  # dominated by f: same cost, more children
                ("h", ["A"], 0.0),  # self loop
                ("k", ["Z"], 0.0),  # Z has no acyclic term
            ],
            "Z": [("z", ["Z"], 1.0)],
        },
        roots=["A"],
    )
    kept = prune(g, [g.class_index["A"]])
    assert sorted(g.node_ids[n] for n in kept.nodes) == ["A.0", "X.0"]
    assert kept.removed["dominated"] == 1
    assert kept.removed["self_loop"] == 2  # h and z
    assert ilp_extract(g).dag_cost == 3.0


@settings(max_examples=120, deadline=None)
@given(egraphs(max_classes=5, max_nodes=3))
def test_ilp_is_optimal_against_brute_force(g: EGraph) -> None:
    roots = [g.class_ids[r] for r in g.roots]
    best = brute_force(g, roots)
    if best == float("inf"):
        with pytest.raises(NoTermError):
            ilp_extract(g)
        return
    ext = ilp_extract(g, time_limit=20)
    assert ext.status == OPTIMAL
    assert ext.dag_cost == pytest.approx(best)
    assert check_valid(g, ext.choice, roots) == pytest.approx(best)


@settings(max_examples=80, deadline=None)
@given(egraphs(max_classes=14, max_nodes=4, max_children=3))
def test_ilp_never_worse_than_greedy(g: EGraph) -> None:
    try:
        greedy = greedy_extract(g)
    except NoTermError:
        return
    ext = ilp_extract(g, time_limit=20)
    assert ext.dag_cost <= greedy.dag_cost + 1e-9
    check_valid(g, ext.choice, list(ext.roots))


def test_zero_time_limit_falls_back_to_greedy_or_reports_limit() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    ext = ilp_extract(g, time_limit=0.0)
    assert ext.status in {FELL_BACK, OPTIMAL, "time_limit"}
    assert ext.dag_cost <= 9.0
    if ext.status == FELL_BACK:
        assert ext.dag_cost == 9.0 and "greedy" in ext.detail


def test_isolated_solver_process_gives_the_same_answer() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    ext = ilp_extract(g, time_limit=30, isolate=True)
    assert ext.status == OPTIMAL and ext.dag_cost == 7.0


def test_hard_deadline_kills_the_solver_process() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    model = _Model(g, prune(g, list(g.roots)), list(g.roots))
    out = _solve_in_child(model.problem, {"time_limit": 10.0}, deadline=0.01)
    assert out.status == KILLED and out.x is None
    assert "hard deadline" in out.message
