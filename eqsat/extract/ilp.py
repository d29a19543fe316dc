"""Exact DAG extraction as a 0-1 integer program solved by HiGHS (scipy.optimize.milp).

Variables: x[n] (node n chosen), y[c] (class c used), and for classes inside a
cycle of the class graph a continuous level l[c]. Constraints:
- y[root] = 1;
- sum of x over the nodes of c = y[c] (a used class has exactly one node);
- x[n] <= y[d] for each child class d of n;
- x[n] = 1 implies l[class(n)] >= l[d] + 1 for each child d in the same strongly
  connected component (big-M with M = component size), which forbids cycles;
- sum cost[n] x[n] <= greedy's cost (scipy 1.17's milp takes no initial solution, so
  greedy's answer is passed as an upper bound instead of a warm start).
Minimising sum cost[n] x[n] is the DAG cost: each used class is paid once.

Greedy runs first and is the fallback: on a time limit without a better integer
solution, or any solver failure, its extraction is returned with a status saying so.
HiGHS overruns its own time limit on hard models, so big ones run in a child
process that is killed at a hard deadline (see ``highs_run``).
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
from eqsat.extract.highs_run import MilpProblem, solve_milp
from eqsat.extract.prune import Pruned, prune
from eqsat.extract.result import FELL_BACK, OPTIMAL, TIME_LIMIT, Extraction

# Relative slack on greedy's cost bound so that greedy's own solution stays feasible.
_BOUND_SLACK = 1e-9


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
    pruned = prune(egraph, root_idx)
    model = _Model(egraph, pruned, root_idx, greedy.dag_cost)
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
        )

    if res.x is None:
        return fall_back(f"HiGHS gave no integer solution ({res.message})")
    try:
        found = build_extraction(
            egraph,
            model.decode(res.x),
            root_idx,
            extractor="ilp",
            status=OPTIMAL if res.status == 0 else TIME_LIMIT,
            seconds=time.perf_counter() - start,
        )
    except InvalidExtractionError as exc:
        return fall_back(f"HiGHS solution is not a valid DAG ({exc})")
    if found.dag_cost > greedy.dag_cost * (1 + _BOUND_SLACK) + _BOUND_SLACK:
        return fall_back(f"HiGHS solution costs {found.dag_cost:g}, more than greedy")
    if res.status == 0:
        detail = f"proved optimal; {size}; greedy cost {greedy.dag_cost:g}"
    else:
        detail = (
            f"{res.message}; lower bound {res.dual_bound}; {size}; greedy cost {greedy.dag_cost:g}"
        )
    return replace(found, detail=detail)


class _Model:
    """The MILP matrices for the pruned e-graph; ``decode`` maps a solution back."""

    def __init__(self, egraph: EGraph, pruned: Pruned, roots: list[int], upper: float) -> None:
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
        for i, n in enumerate(pruned.nodes):
            c = int(node_class[n])
            for d in kids[n]:
                row([(i, 1.0), (class_var[d], -1.0)], -np.inf, 0.0)
                if d in level_var and pruned.component[d] == pruned.component[c]:
                    big_m = float(pruned.component_size[c])
                    row([(level_var[c], 1.0), (level_var[d], -1.0), (i, -big_m)], 1 - big_m, np.inf)
        costs = egraph.costs[pruned.nodes] if n_x else np.zeros(0)
        if n_x:
            row(list(enumerate(costs.tolist())), -np.inf, upper * (1 + _BOUND_SLACK) + _BOUND_SLACK)

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
        )

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
