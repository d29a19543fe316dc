"""The local search's joint swaps (classes moved together onto a shared child, as the
slices of a TASO-merged product) and its incremental pricing of a swap."""

from __future__ import annotations

from extract_helpers import DATA, brute_force, egraphs
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.extract import EGraph, greedy_extract
from eqsat.extract.greedy import greedy_choice
from eqsat.extract.improve import _Refs, dag_classes, improve_choice
from eqsat.extract.serialized import load_egraph


def test_joint_swap_finds_the_shared_subterm() -> None:
    # A and B each cost 4 as leaves, 1 + s (4) over the shared s: either alone loses,
    # both together win (1 + 1 + 4 + root 1 = 7 against 9).
    g = load_egraph(DATA / "shared_subterm.json")
    assert greedy_extract(g).dag_cost == 9.0
    joint = greedy_extract(g, joint=True)
    assert joint.dag_cost == 7.0
    assert joint.choice == {"S": "s", "A": "a_of_s", "B": "b_of_s", "R": "root"}


def test_merged_product_is_taken_for_three_slices() -> None:
    # Three products of x (cost 10 each) or three slices (1 each) of one merged
    # product (cost 20): 23 against 30, only when all three move.
    g = EGraph.from_classes(
        {
            "X": [("x", [], 0.0)],
            "M": [("merged", ["X"], 20.0)],
            "Q": [("q", ["X"], 10.0), ("slice_q", ["M"], 1.0)],
            "K": [("k", ["X"], 10.0), ("slice_k", ["M"], 1.0)],
            "V": [("v", ["X"], 10.0), ("slice_v", ["M"], 1.0)],
            "R": [("attend", ["Q", "K", "V"], 1.0)],
        },
        roots=["R"],
    )
    assert greedy_extract(g).dag_cost == 31.0
    assert greedy_extract(g, joint=True).dag_cost == 24.0


@settings(max_examples=100, deadline=None)
@given(egraphs(max_classes=6, max_nodes=3, max_children=3))
def test_joint_search_is_valid_never_costlier_and_never_below_optimum(g: EGraph) -> None:
    roots = list(g.roots)
    choice = greedy_choice(g, roots)
    before = dag_classes(g, choice, roots)
    if before is None:
        return
    after = dag_classes(g, improve_choice(g, choice, roots, joint=True), roots)
    assert after is not None and after[0] <= before[0] + 1e-9
    assert after[0] >= brute_force(g, [g.class_ids[r] for r in roots]) - 1e-9


@settings(max_examples=100, deadline=None)
@given(egraphs(max_classes=8, max_nodes=3, max_children=3), st.data())
def test_a_swap_is_priced_by_its_change_alone(g: EGraph, data: st.DataObject) -> None:
    roots = list(g.roots)
    choice = greedy_choice(g, roots)
    before = dag_classes(g, choice, roots)
    if before is None:
        return
    cost, reached = before
    c = data.draw(st.sampled_from(reached))
    n = data.draw(st.sampled_from(g.class_nodes[c]))
    if any(choice[d] < 0 for d in g.child_sets[n]):
        return
    refs = _Refs(g.child_sets, g.costs.tolist(), choice, roots, reached)
    change, _ = refs.delta({c: n})
    assert refs.count == _Refs(g.child_sets, g.costs.tolist(), choice, roots, reached).count
    swapped = list(choice)
    swapped[c] = n
    after = dag_classes(g, swapped, roots)
    if after is not None:  # no cycle: the change is exactly the walk's difference
        assert abs(cost + change - after[0]) < 1e-6
