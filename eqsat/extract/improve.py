"""Local search on a valid extraction: swap one class's node while the DAG gets cheaper.

Greedy prices each class's best term DAG on its own; among candidates of equal or
near cost it cannot see which one shares more with the rest of the extraction (on
herbie's e-graphs, with many roots and integer costs, such ties are everywhere).
This pass looks at the whole DAG: for each class the DAG uses, each other node of
the class is tried in its place (its child classes take their current choices), and
the swap is kept when the DAG from the roots is valid (no cycle) and strictly
cheaper. A swap that keeps the cost equal is kept too, once per class: two classes
that both move off a shared child only pay off together (babble's list e-graphs),
and the first move alone costs nothing. What is returned is the cheapest choice seen,
and the input itself unless something strictly cheaper was found: sideways moves
that led nowhere do not change the answer (equal-cost terms stay as greedy chose them). Passes repeat until none helps; each trial
walks the whole DAG, so the work is capped (``max_visits`` classes walked in all:
about a second of Python) and the pass stops there with what it has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from eqsat.extract.egraph import EGraph

# Improvement must beat this relative margin, so float noise cannot loop forever.
_MARGIN = 1e-12


def dag_classes(
    egraph: EGraph, choice: Sequence[int], roots: Sequence[int]
) -> tuple[float, list[int]] | None:
    """(DAG cost, classes reached) of ``choice`` from ``roots``; None on a cycle or a gap."""
    kids = egraph.child_sets
    costs = egraph.costs
    state: dict[int, int] = {}
    reached: list[int] = []
    total = 0.0
    for root in roots:
        if state.get(root) == 2:
            continue
        if choice[root] < 0:
            return None
        state[root] = 1
        stack = [(root, iter(kids[choice[root]]))]
        while stack:
            c, it = stack[-1]
            for d in it:
                seen = state.get(d)
                if seen == 1:
                    return None
                if seen is None:
                    if choice[d] < 0:
                        return None
                    state[d] = 1
                    stack.append((d, iter(kids[choice[d]])))
                    break
            else:
                stack.pop()
                state[c] = 2
                reached.append(c)
                total += float(costs[choice[c]])
    return total, reached


def improve_choice(
    egraph: EGraph,
    choice: list[int],
    roots: Sequence[int],
    *,
    max_passes: int = 4,
    max_visits: int = 500_000,
    tick: Callable[[], None] | None = None,
    joint: bool = False,
) -> list[int]:
    """A choice at most as costly as ``choice`` (valid from ``roots``), by single swaps
    and, with ``joint``, by the joint swaps of `_partners` (eqsat's pipeline asks for
    them: its e-graphs hold TASO's merged products). A trial is priced by its change alone
    (`_Refs.delta`: the classes it makes reachable or unreachable); only one that looks
    no costlier walks the whole DAG, which checks it (no cycle) and prices it exactly."""
    best = dag_classes(egraph, choice, roots)
    if best is None:
        return choice
    cost, reached = best
    best_cost, best_choice = cost, choice
    usable = egraph.usable.tolist()
    class_nodes = egraph.class_nodes
    kids = egraph.child_sets
    costs = egraph.costs.tolist()
    current = list(choice)
    refs = _Refs(kids, costs, current, roots, reached)
    visits = 0
    moved_sideways: set[int] = set()

    def attempt(swaps: dict[int, int], sideways: int | None) -> bool:
        """Apply `swaps` (class -> node) if they make the DAG cheaper (or, for the
        class `sideways`, no costlier, once); else leave `current` as it was."""
        nonlocal cost, reached, best_cost, best_choice, visits
        change, walked = refs.delta(swaps)
        visits += walked
        margin = _MARGIN * max(1.0, abs(cost))
        cheaper = change < -margin
        if not cheaper and not (sideways is not None and change <= margin):
            return False
        saved = {d: current[d] for d in swaps}
        for d, p in swaps.items():
            current[d] = p
        visits += len(reached)
        trial = dag_classes(egraph, current, roots)
        if trial is not None and trial[0] < cost - margin:
            cost, reached = trial
            if cost < best_cost - _MARGIN * max(1.0, abs(best_cost)):
                best_cost, best_choice = cost, list(current)
        elif trial is not None and sideways is not None and trial[0] <= cost + margin:
            moved_sideways.add(sideways)
            reached = trial[1]
        else:
            for d, p in saved.items():
                current[d] = p
            return False
        refs.rebuild(current, roots, reached)
        return True

    for _ in range(max_passes):
        improved = False
        live = set(reached)
        for c in list(reached):
            if c not in live:
                continue
            for n in class_nodes[c]:
                if n == current[c] or not usable[n] or c in kids[n]:
                    continue
                if any(current[d] < 0 for d in kids[n]):
                    continue
                if costs[n] >= costs[current[c]] and set(kids[n]) >= set(kids[current[c]]):
                    # frees nothing and costs no less (another tile of the same product):
                    # alone it cannot gain (a joint move that needs n is tried from the
                    # partner's side, whose search finds n over the shared child)
                    continue
                if visits > max_visits:
                    return best_choice
                if tick is not None:
                    tick()
                sideways = c if c not in moved_sideways else None
                moved = attempt({c: n}, sideways)
                if not moved and joint:
                    partners = _partners(egraph, current, live, c, n)
                    moved = bool(partners) and attempt({c: n, **partners}, None)
                if moved:
                    improved = True
                    live = set(reached)
                    break
        if not improved:
            break
    return best_choice


class _Refs:
    """How many chosen nodes (and roots) use each class of the current DAG, so that a
    swap's change in DAG cost is found by walking only what it adds or frees."""

    def __init__(self, kids, costs, current: list[int], roots, reached) -> None:
        self.kids, self.costs, self.current = kids, costs, current
        self.rebuild(current, roots, reached)

    def rebuild(self, current: list[int], roots, reached) -> None:
        count = [0] * len(current)
        for r in roots:
            count[r] += 1
        for c in reached:
            for d in self.kids[current[c]]:
                count[d] += 1
        self.count = count

    def delta(self, swaps: dict[int, int]) -> tuple[float, int]:
        """(change of the DAG cost, classes walked) if `swaps` were made; inf when a
        class it would reach has no choice. The counts are restored before returning;
        a swap that closes a cycle is priced as if it did not (the caller's full walk
        rejects it)."""
        count, kids, costs, current = self.count, self.kids, self.costs, self.current
        old = {c: current[c] for c in swaps}
        touched: list[tuple[int, int]] = []
        change = 0.0
        walked = 0
        for c, n in swaps.items():
            change += costs[n] - costs[current[c]]
            current[c] = n
        stack = [d for n in swaps.values() for d in kids[n]]
        while stack:
            d = stack.pop()
            walked += 1
            touched.append((d, 1))
            count[d] += 1
            if count[d] == 1:
                if current[d] < 0:
                    change = math.inf
                    break
                change += costs[current[d]]
                stack.extend(kids[current[d]])
        if change != math.inf:
            stack = [d for c in swaps for d in kids[old[c]]]
            while stack:
                d = stack.pop()
                walked += 1
                touched.append((d, -1))
                count[d] -= 1
                if count[d] == 0:
                    change -= costs[current[d]]
                    stack.extend(kids[current[d]])
        for d, step in touched:
            count[d] -= step
        for c, n in old.items():
            current[c] = n
        return change, walked


def _partners(egraph: EGraph, current: list[int], live: set[int], c: int, n: int) -> dict[int, int]:
    """Swaps that go with putting node ``n`` in class ``c``: for each child class of
    ``n`` that the DAG does not use yet, every other class of the DAG with a usable node
    over that child takes that node. One such swap alone pays the new child in full;
    together they share it: the slices of one merged product (TASO's matmul merge, x@w1
    and x@w2 as slices of x@[w1 w2]) only pay off when every product moves to it."""
    usable = egraph.usable
    kids = egraph.child_sets
    cls = egraph.node_class
    swaps: dict[int, int] = {}
    for d in kids[n]:
        if d in live:
            continue
        for p in egraph.parents[d]:
            other = int(cls[p])
            if other == c or other not in live or other in swaps or current[other] == p:
                continue
            if not usable[p] or other in kids[p] or any(current[e] < 0 for e in kids[p]):
                continue
            swaps[other] = p
    return swaps
