"""Exact DAG extraction as a 0-1 integer program solved by HiGHS (through highspy).

Variables: x[n] (node n chosen), y[c] (class c used), and for classes inside a
cycle of the class graph a continuous level l[c]. Constraints:
- y[root] = 1;
- sum of x over the nodes of c = y[c] (a used class has exactly one node);
- x[n] <= y[d] for each child class d of n;
- x[n] = 1 implies l[class(n)] >= l[d] + 1 for each child d in the same strongly
  connected component (big-M with M = component size), which forbids cycles.
Minimising sum cost[n] x[n] is the DAG cost: each used class is paid once.

Greedy runs first: its answer is HiGHS's MIP start (with levels that satisfy the
acyclicity rows), so the solver starts with an incumbent and a cutoff, and it is the
fallback: on any solver failure its extraction is returned with a status saying so,
and at the time limit the best incumbent is returned, never worse than greedy's.
The result carries HiGHS's lower bound, so the optimality gap of an answer returned
at the limit is known. HiGHS overruns its own time limit on hard models, so big ones
run in a child process that is killed at a hard deadline, keeping the incumbents it
reported (see ``highs_run``). The model is built on the pruned e-graph (see ``prune``):
only classes reachable from the roots, dominated nodes dropped, and level variables
only for classes on a cycle of the class graph.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np
from scipy.sparse import coo_matrix

from eqsat.extract.dag import build_extraction
from eqsat.extract.egraph import EGraph
from eqsat.extract.errors import InvalidExtractionError
from eqsat.extract.greedy import greedy_extract
from eqsat.extract.highs_run import OPTIMAL_STATUS, MilpProblem, solve_milp
from eqsat.extract.improve import improve_choice
from eqsat.extract.prune import Pruned, prune
from eqsat.extract.result import FELL_BACK, OPTIMAL, TIME_LIMIT, Extraction

# Relative tolerance when comparing the solver's cost with greedy's.
_COST_SLACK = 1e-9


def ilp_extract(
    egraph: EGraph,
    roots: Iterable[str] | None = None,
    *,
    time_limit: float | None = 60.0,
    mip_rel_gap: float | None = None,
    isolate: bool | None = None,
    tick: Callable[[], None] | None = None,
) -> Extraction:
    """Optimal DAG extraction, or the best found within about ``time_limit`` seconds.

    ``isolate`` runs HiGHS in a child process stopped at a hard deadline (default:
    for big models, see ``highs_run``).
    """
    start = time.perf_counter()
    root_idx = egraph.resolve_roots(roots)
    greedy = greedy_extract(egraph, [egraph.class_ids[r] for r in root_idx], tick)
    greedy_nodes = [egraph.node_index[n] for n in greedy.nodes]
    pruned = prune(egraph, root_idx, protect=greedy_nodes)
    model = _Model(egraph, pruned, root_idx, start=greedy_nodes)
    remaining = None if time_limit is None else max(time_limit - (time.perf_counter() - start), 0)
    res = solve_milp(model.problem, time_limit=remaining, mip_rel_gap=mip_rel_gap, isolate=isolate)
    size = f"{len(pruned.nodes)} nodes, {len(pruned.classes)} classes after pruning"

    def fall_back(why: str) -> Extraction:
        return replace(
            greedy,
            extractor="ilp",
            status=FELL_BACK,
            detail=f"{why}; {size}; greedy cost {greedy.dag_cost:g}",
            seconds=time.perf_counter() - start,
            lower_bound=None
            if (egraph.costs < 0).any()
            else min(_root_bound(egraph, root_idx), greedy.dag_cost),
        )

    if res.x is None:
        return fall_back(f"HiGHS gave no integer solution ({res.message})")
    choice = model.decode(res.x)
    if res.status != OPTIMAL_STATUS:  # an incumbent at the limit: polish it by local search
        choice = improve_choice(egraph, choice, root_idx, tick=tick)
    try:
        found = build_extraction(
            egraph,
            choice,
            root_idx,
            extractor="ilp",
            status=OPTIMAL if res.status == OPTIMAL_STATUS else TIME_LIMIT,
            seconds=time.perf_counter() - start,
        )
    except InvalidExtractionError as exc:
        return fall_back(f"HiGHS solution is not a valid DAG ({exc})")
    if found.dag_cost > greedy.dag_cost + _COST_SLACK * max(1.0, abs(greedy.dag_cost)):
        return fall_back(f"HiGHS solution costs {found.dag_cost:g}, more than greedy")
    if res.status == OPTIMAL_STATUS and res.dual_bound is None:
        lower = found.dag_cost
    elif (egraph.costs < 0).any():  # no bound from the roots' cheapest nodes then
        lower = res.dual_bound
    else:  # HiGHS's bound (optimal = within its mip_rel_gap), else the roots' cheapest nodes
        lower = max(res.dual_bound or 0.0, _root_bound(egraph, root_idx))
    found = replace(found, lower_bound=None if lower is None else min(lower, found.dag_cost))
    if res.status == OPTIMAL_STATUS:
        detail = f"proved optimal; {size}; greedy cost {greedy.dag_cost:g}"
    else:
        gap = "unknown" if found.gap is None else f"{found.gap:.4%}"
        detail = (
            f"{res.message}; best found {found.dag_cost:g}, lower bound {found.lower_bound}, "
            f"gap {gap}; {size}; greedy cost {greedy.dag_cost:g}"
        )
    return replace(found, detail=detail)


def _root_bound(egraph: EGraph, roots: list[int]) -> float:
    """A lower bound on any extraction (costs >= 0): each root class pays its cheapest node."""
    usable = egraph.usable
    total = 0.0
    for r in roots:
        members = [n for n in egraph.class_nodes[r] if usable[n]]
        total += float(egraph.costs[members].min()) if members else 0.0
    return total


class _Model:
    """The MILP matrices for the pruned e-graph; ``decode`` maps a solution back."""

    def __init__(
        self, egraph: EGraph, pruned: Pruned, roots: list[int], start: list[int] | None = None
    ) -> None:
        self.egraph = egraph
        self.nodes = pruned.nodes
        kids = egraph.child_sets
        node_class = egraph.node_class
        n_x = len(pruned.nodes)
        class_var = {c: n_x + i for i, c in enumerate(pruned.classes)}
        cyclic = [c for c in pruned.classes if pruned.component_size[c] > 1]
        level_var = {c: n_x + len(class_var) + i for i, c in enumerate(cyclic)}
        n_vars = n_x + len(class_var) + len(level_var)

        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        lower: list[float] = []
        upper_b: list[float] = []

        def row(entries: list[tuple[int, float]], lo: float, hi: float) -> None:
            r = len(lower)
            for col, val in entries:
                rows.append(r)
                cols.append(col)
                vals.append(val)
            lower.append(lo)
            upper_b.append(hi)

        members: dict[int, list[int]] = {c: [] for c in pruned.classes}
        for i, n in enumerate(pruned.nodes):
            members[int(node_class[n])].append(i)
        for c, xs in members.items():
            row([(i, 1.0) for i in xs] + [(class_var[c], -1.0)], 0.0, 0.0)
        if (egraph.costs[pruned.nodes] < 0).any() if n_x else False:
            # With negative costs a class must not be chosen for its reward alone: a
            # class other than a root is used only if a chosen node needs it.
            needed_by: dict[int, list[int]] = {c: [] for c in pruned.classes}
            for i, n in enumerate(pruned.nodes):
                for d in kids[n]:
                    if d in needed_by:
                        needed_by[d].append(i)
            root_set = set(roots)
            for c, users in needed_by.items():
                if c not in root_set:
                    row([(class_var[c], 1.0)] + [(i, -1.0) for i in users], -np.inf, 0.0)
        for i, n in enumerate(pruned.nodes):
            c = int(node_class[n])
            for d in kids[n]:
                row([(i, 1.0), (class_var[d], -1.0)], -np.inf, 0.0)
                if d in level_var and pruned.component[d] == pruned.component[c]:
                    big_m = float(pruned.component_size[c])
                    row([(level_var[c], 1.0), (level_var[d], -1.0), (i, -big_m)], 1 - big_m, np.inf)
        costs = egraph.costs[pruned.nodes] if n_x else np.zeros(0)

        objective = np.zeros(n_vars)
        objective[:n_x] = costs
        integrality = np.zeros(n_vars)
        integrality[: n_x + len(class_var)] = 1
        lo_var = np.zeros(n_vars)
        hi_var = np.ones(n_vars)
        for r in roots:
            lo_var[class_var[r]] = 1.0
        for c, v in level_var.items():
            hi_var[v] = float(pruned.component_size[c] - 1)
        matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), n_vars)).tocsr()
        self.problem = MilpProblem(
            c=objective,
            integrality=integrality,
            lb=lo_var,
            ub=hi_var,
            a=matrix,
            row_lb=np.array(lower),
            row_ub=np.array(upper_b),
            start=None
            if start is None
            else self._start(n_vars, start, class_var, level_var, pruned),
        )

    def _start(
        self,
        n_vars: int,
        chosen: list[int],
        class_var: dict[int, int],
        level_var: dict[int, int],
        pruned: Pruned,
    ) -> np.ndarray:
        """The point for a DAG of ``chosen`` nodes (children first): x and y set, and each
        level one more than its highest child in the same component (0 for none)."""
        x = np.zeros(n_vars)
        position = {n: i for i, n in enumerate(self.nodes)}
        node_class = self.egraph.node_class
        kids = self.egraph.child_sets
        level: dict[int, float] = {}
        for n in chosen:
            c = int(node_class[n])
            x[position[n]] = 1.0
            x[class_var[c]] = 1.0
            if c in level_var:
                same = [level[d] for d in kids[n] if pruned.component[d] == pruned.component[c]]
                level[c] = max(same, default=-1.0) + 1.0
                x[level_var[c]] = level[c]
        return x

    def decode(self, x: np.ndarray) -> list[int]:
        """Class index -> chosen node (the node with the largest x in each used class)."""
        choice = [-1] * self.egraph.n_classes
        weight = [0.5] * self.egraph.n_classes
        node_class = self.egraph.node_class
        for i, n in enumerate(self.nodes):
            c = int(node_class[n])
            if x[i] > weight[c]:
                weight[c] = x[i]
                choice[c] = n
        return choice
