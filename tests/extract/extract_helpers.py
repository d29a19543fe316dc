"""Random e-graphs and independent oracles for the extraction tests.

The oracles here deliberately share no code with eqsat.extract: a brute-force optimum
over every assignment and a plain recursive validity check.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from pathlib import Path

from hypothesis import strategies as st

from eqsat.extract import EGraph, NodeSpec

DATA = Path(__file__).parent / "data"


@st.composite
def egraphs(
    draw: st.DrawFn,
    max_classes: int = 6,
    max_nodes: int = 3,
    max_children: int = 2,
    max_cost: int = 10,
) -> EGraph:
    """Small random e-graphs: mostly forward edges plus back edges that make cycles."""
    k = draw(st.integers(1, max_classes))
    specs = []
    for c in range(k):
        for j in range(draw(st.integers(1, max_nodes))):
            forward = draw(st.lists(st.integers(0, c - 1), max_size=max_children)) if c else []
            back = draw(st.lists(st.integers(0, k - 1), max_size=1))
            cost = draw(st.integers(0, max_cost))
            kids = [f"c{d}" for d in forward + back]
            specs.append(NodeSpec(f"n{c}.{j}", f"op{j}", f"c{c}", kids, cost))
    roots = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=2, unique=True))
    return EGraph.from_nodes(specs, roots=[f"c{r}" for r in roots])


def class_nodes(egraph: EGraph) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {c: [] for c in egraph.class_ids}
    for n in range(egraph.n_nodes):
        out[egraph.class_ids[int(egraph.node_class[n])]].append(n)
    return out


def check_valid(egraph: EGraph, choice: Mapping[str, str], roots: list[str]) -> float:
    """Recursive check (gap, wrong class, cycle); returns the DAG cost. Raises AssertionError."""
    node_of = {nid: i for i, nid in enumerate(egraph.node_ids)}
    done: set[str] = set()

    def visit(c: str, path: frozenset[str]) -> None:
        assert c not in path, f"cycle through {c}"
        if c in done:
            return
        assert c in choice, f"class {c} used but not chosen"
        n = node_of[choice[c]]
        assert egraph.class_ids[int(egraph.node_class[n])] == c
        for d in egraph.children(n):
            visit(egraph.class_ids[d], path | {c})
        done.add(c)

    for r in roots:
        visit(r, frozenset())
    return sum(float(egraph.costs[node_of[choice[c]]]) for c in done)


def brute_force(egraph: EGraph, roots: list[str]) -> float:
    """Optimal DAG cost over all class->node assignments (inf when no acyclic term)."""
    members = class_nodes(egraph)
    classes = list(members)
    best = math.inf
    for combo in itertools.product(*(members[c] for c in classes)):
        pick = dict(zip(classes, combo, strict=True))
        cost = assignment_cost(egraph, pick, roots)
        best = min(best, cost)
    return best


def assignment_cost(egraph: EGraph, pick: dict[str, int], roots: list[str]) -> float:
    state: dict[str, int] = {}  # 1 = on path, 2 = done

    def visit(c: str) -> bool:
        if state.get(c) == 2:
            return True
        if state.get(c) == 1:
            return False
        state[c] = 1
        n = pick[c]
        if egraph.subsumed[n] or not math.isfinite(egraph.costs[n]):
            return False
        for d in egraph.children(n):
            if not visit(egraph.class_ids[d]):
                return False
        state[c] = 2
        return True

    if not all(visit(r) for r in roots):
        return math.inf
    return sum(float(egraph.costs[pick[c]]) for c, s in state.items() if s == 2)


def has_term(egraph: EGraph, root: str) -> bool:
    """Naive fixpoint: does ``root`` have a finite acyclic term?"""
    ok: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in range(egraph.n_nodes):
            c = egraph.class_ids[int(egraph.node_class[n])]
            if c in ok or egraph.subsumed[n] or not math.isfinite(egraph.costs[n]):
                continue
            if all(egraph.class_ids[d] in ok for d in egraph.children(n)):
                ok.add(c)
                changed = True
    return root in ok


def layered_egraph(n_classes: int, nodes_per_class: int, seed: int = 0) -> EGraph:
    """A big random acyclic-ish e-graph (layers, a few back edges) for timing."""
    rng = random.Random(seed)
    specs = []
    for c in range(n_classes):
        count = 1 if c < 20 else nodes_per_class
        for j in range(count):
            kids: list[str] = []
            if c >= 20:
                kids = [f"c{rng.randrange(max(0, c - 200), c)}" for _ in range(rng.randint(1, 3))]
                if rng.random() < 0.02:
                    kids.append(f"c{rng.randrange(c, min(n_classes, c + 50))}")
            specs.append(NodeSpec(f"n{c}.{j}", "op", f"c{c}", kids, rng.randint(1, 10)))
    return EGraph.from_nodes(specs, roots=[f"c{n_classes - 1}"])
