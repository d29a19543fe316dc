"""Greedy DAG extraction: valid, acyclic, DAG-priced, fast."""

from __future__ import annotations

import itertools
import time

import pytest
from extract_helpers import (
    DATA,
    assignment_cost,
    brute_force,
    check_valid,
    class_nodes,
    egraphs,
    has_term,
    layered_egraph,
)
from hypothesis import given, settings

from eqsat.extract import (
    HEURISTIC,
    EGraph,
    InvalidExtractionError,
    NoTermError,
    dag_cost,
    greedy_extract,
    load_egraph,
)


@settings(max_examples=300, deadline=None)
@given(egraphs(max_classes=12, max_nodes=4, max_children=3))
def test_greedy_is_valid_and_acyclic(g: EGraph) -> None:
    roots = [g.class_ids[r] for r in g.roots]
    if not all(has_term(g, r) for r in roots):
        with pytest.raises(NoTermError):
            greedy_extract(g)
        return
    ext = greedy_extract(g)
    assert ext.status == HEURISTIC
    assert check_valid(g, ext.choice, roots) == pytest.approx(ext.dag_cost)
    assert dag_cost(g, ext.choice, roots) == pytest.approx(ext.dag_cost)
    assert set(ext.order) == set(ext.choice)  # only the classes the DAG uses


@settings(max_examples=150, deadline=None)
@given(egraphs(max_classes=5, max_nodes=3))
def test_greedy_never_beats_brute_force(g: EGraph) -> None:
    roots = [g.class_ids[r] for r in g.roots]
    best = brute_force(g, roots)
    if best == float("inf"):
        with pytest.raises(NoTermError):
            greedy_extract(g)
        return
    assert greedy_extract(g).dag_cost >= best - 1e-9


def test_greedy_pays_shared_subterm_once_but_misses_sharing_across_classes() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    ext = greedy_extract(g)
    # A alone: g(s) costs 1 + 4 = 5 > 4, so greedy takes the leaves: 1 + 4 + 4.
    assert ext.choice == {"A": "a_leaf", "B": "b_leaf", "R": "root"}
    assert ext.dag_cost == 9.0


def test_greedy_counts_a_shared_child_once() -> None:
    # f(g(s), h(s)) vs f(a, b): with s shared the DAG costs 1+1+1+2 = 5 < 1+3+3 = 7.
    g = EGraph.from_classes(
        {
            "S": [("s", [], 2.0)],
            "P": [("p", ["S", "S"], 1.0), ("p_leaf", [], 10.0)],
            "R": [("f", ["P", "S"], 1.0)],
        },
        roots=["R"],
    )
    ext = greedy_extract(g)
    assert ext.dag_cost == 4.0  # f + p + s, s paid once though used three times
    assert ext.nodes == ["S.0", "P.0", "R.0"]


def test_greedy_avoids_cycles_and_subsumed_nodes() -> None:
    g = load_egraph(DATA / "cycle.json")
    ext = greedy_extract(g)
    assert ext.choice == {"X": "x_loop", "Y": "y_leaf"}
    assert ext.dag_cost == 3.0


def test_dag_cost_rejects_invalid_choices() -> None:
    g = load_egraph(DATA / "cycle.json")
    with pytest.raises(InvalidExtractionError, match="cycle"):
        dag_cost(g, {"X": "x_loop", "Y": "y_loop"})
    with pytest.raises(InvalidExtractionError, match="no choice"):
        dag_cost(g, {"X": "x_loop"})
    with pytest.raises(InvalidExtractionError, match="belongs to class"):
        dag_cost(g, {"X": "y_leaf"})
    with pytest.raises(InvalidExtractionError, match="cycle"):
        dag_cost(g, {"X": "x_self"})  # twice(X, X) uses its own class
    assert dag_cost(g, {"X": "x_leaf", "Y": "y_loop"}) == 5.0  # Y unused: not paid
    assert dag_cost(g, {"X": "x_loop", "Y": "y_leaf"}, roots=["Y"]) == 3.0


def test_root_without_term_is_typed() -> None:
    g = EGraph.from_classes({"A": [("f", ["A"], 1.0)]}, roots=["A"])
    with pytest.raises(NoTermError, match="'A'"):
        greedy_extract(g)


def test_greedy_50k_nodes_is_fast() -> None:
    g = layered_egraph(17_000, 3, seed=7)
    assert g.n_nodes > 50_000
    start = time.perf_counter()
    ext = greedy_extract(g)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, elapsed
    assert dag_cost(g, ext.choice) == pytest.approx(ext.dag_cost)


def test_a_seed_finds_the_sharing_greedy_misses() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    seed = {"R": "root", "A": "a_of_s", "B": "b_of_s", "S": "s"}  # g(s), h(s): s once
    ext = greedy_extract(g, seeds=[seed])
    assert ext.dag_cost == 7.0
    assert ext.choice == seed


def _best_assignment(g: EGraph, roots: list[str]) -> tuple[float, dict[str, str]]:
    """The optimal extraction by enumeration: (DAG cost, class -> node id it reaches)."""
    members = class_nodes(g)
    best: tuple[float, dict[str, str]] = (float("inf"), {})
    for combo in itertools.product(*members.values()):
        pick = dict(zip(members, combo, strict=True))
        cost = assignment_cost(g, pick, roots)
        if cost < best[0]:
            reached = _reached(g, pick, roots)
            best = (cost, {c: g.node_ids[pick[c]] for c in reached})
    return best


def _reached(g: EGraph, pick: dict[str, int], roots: list[str]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c not in seen:
            seen.add(c)
            stack += [g.class_ids[d] for d in g.children(pick[c])]
    return seen


@settings(max_examples=150, deadline=None)
@given(egraphs(max_classes=5, max_nodes=3))
def test_seeded_greedy_is_never_costlier_than_its_seed(g: EGraph) -> None:
    """Seeded with any valid extraction (here the optimum), the answer costs no more:
    what makes `optimize` seeded with its input never hand back a costlier program."""
    roots = [g.class_ids[r] for r in g.roots]
    cost, seed = _best_assignment(g, roots)
    if cost == float("inf"):
        return
    assert greedy_extract(g, seeds=[seed]).dag_cost == pytest.approx(cost)


def test_a_seed_naming_an_unknown_node_is_ignored() -> None:
    g = load_egraph(DATA / "shared_subterm.json")
    assert greedy_extract(g, seeds=[{"R": "no_such_node"}]).dag_cost == 9.0
