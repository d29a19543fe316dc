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
) -> list[int]:
    """A choice at most as costly as ``choice`` (valid from ``roots``), by single swaps."""
    best = dag_classes(egraph, choice, roots)
    if best is None:
        return choice
    cost, reached = best
    best_cost, best_choice = cost, choice
    usable = egraph.usable.tolist()
    class_nodes = egraph.class_nodes
    kids = egraph.child_sets
    current = list(choice)
    visits = 0
    moved_sideways: set[int] = set()
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
                if visits > max_visits:
                    return best_choice
                if tick is not None:
                    tick()
                visits += len(reached)
                old = current[c]
                current[c] = n
                trial = dag_classes(egraph, current, roots)
                margin = _MARGIN * max(1.0, abs(cost))
                if trial is not None and trial[0] < cost - margin:
                    cost, reached = trial
                    live = set(reached)
                    improved = True
                    if cost < best_cost - _MARGIN * max(1.0, abs(best_cost)):
                        best_cost, best_choice = cost, list(current)
                    break
                if trial is not None and trial[0] <= cost + margin and c not in moved_sideways:
                    moved_sideways.add(c)
                    reached = trial[1]
                    live = set(reached)
                    improved = True
                    break
                current[c] = old
        if not improved:
            break
    return best_choice
