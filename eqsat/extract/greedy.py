"""Greedy DAG extraction: each class takes the node whose term DAG is cheapest.

A node's DAG cost is its own cost plus the cost of the *union* of its children's
selected DAGs, so a subterm shared by two children is paid once (extraction-gym's
greedy-dag idea). The fixpoint is reached in a single pass by ordering the worklist
by cost (Knuth's generalisation of Dijkstra): a class is settled when its cheapest
candidate is the cheapest of all unsettled candidates; a node becomes a candidate
once all its child classes are settled. With costs >= 0 a node's DAG cost is at
least each child's, so a settled class can never improve later, every node is
priced once, and a class only uses classes settled before it, so the choice is
acyclic by construction, whatever cycles the e-graph has.

Selected DAGs are sets of classes held as Python-int bitsets indexed by settle rank
(bit r = the r-th settled class), so unions and differences are word operations.

Each class's DAG is priced on its own, so ties between candidates are broken blind to
what the rest of the extraction shares; ``improve`` then swaps single nodes while the
whole DAG from the roots gets cheaper (herbie/2232 of extraction-gym: 4544 -> 3072).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from eqsat.extract.dag import build_extraction
from eqsat.extract.egraph import EGraph
from eqsat.extract.errors import NoTermError
from eqsat.extract.improve import dag_classes, improve_choice
from eqsat.extract.result import HEURISTIC, Extraction

# Below this many set bits, summing weights bit by bit beats a trip through numpy.
_FEW_BITS = 16


def greedy_extract(
    egraph: EGraph,
    roots: Iterable[str] | None = None,
    tick: Callable[[], None] | None = None,
    joint: bool = False,
    seeds: Sequence[Mapping[str, str]] = (),
) -> Extraction:
    """Greedy DAG extraction from ``roots`` (class ids; default: the graph's roots).

    ``tick`` is called once per settled class: a caller's deadline check, which may
    raise to stop the extraction. ``seeds``: other extractions (class id -> node id)
    the local search also starts from, greedy's choice filling the classes a seed
    leaves open; the cheapest result is returned. Seeded with the input program, the
    answer is never costlier than the input: greedy prices each class's DAG on its
    own and can lose to it where much is shared (DenseNet's concatenations)."""
    start = time.perf_counter()
    root_idx = egraph.resolve_roots(roots)
    choice = greedy_choice(egraph, root_idx, tick)
    missing = [egraph.class_ids[r] for r in root_idx if choice[r] < 0]
    if missing:
        raise NoTermError(f"{egraph.source}: no finite acyclic term for root class(es) {missing}")
    best = improve_choice(egraph, choice, root_idx, tick=tick, joint=joint)
    best_cost = dag_classes(egraph, best, root_idx)
    for seed in seeds:
        seeded = seeded_choice(egraph, choice, seed)
        if seeded is None:
            continue
        # an invalid start (a gap, a cycle) comes back as it went in, and is priced None
        trial = improve_choice(egraph, seeded, root_idx, tick=tick, joint=joint)
        cost = dag_classes(egraph, trial, root_idx)
        if cost is not None and (best_cost is None or cost[0] < best_cost[0]):
            best, best_cost = trial, cost
    choice = best
    return build_extraction(
        egraph,
        choice,
        root_idx,
        extractor="greedy",
        status=HEURISTIC,
        seconds=time.perf_counter() - start,
    )


def seeded_choice(
    egraph: EGraph, choice: Sequence[int], seed: Mapping[str, str]
) -> list[int] | None:
    """``choice`` with the classes of ``seed`` (class id -> node id) taking its nodes;
    None if the seed names a node the extraction graph does not hold or cannot use."""
    out = list(choice)
    nodes = egraph.node_index
    usable = egraph.usable
    for c, n in seed.items():
        i = nodes.get(n)
        ci = egraph.class_index.get(c)
        if i is None or ci is None or not usable[i] or egraph.node_class[i] != ci:
            return None
        out[ci] = i
    return out


def greedy_choice(
    egraph: EGraph, roots: Sequence[int], tick: Callable[[], None] | None = None
) -> list[int]:
    """Class index -> chosen node index (-1: no finite acyclic term or not needed).

    Settles classes reachable from ``roots`` only, and stops once all roots are settled.
    """
    n_classes = egraph.n_classes
    relevant = egraph.reachable_classes(roots)
    usable = (egraph.usable & relevant[egraph.node_class]).tolist()
    kids = egraph.child_sets
    parents = egraph.parents
    node_class = egraph.node_class.tolist()
    costs = egraph.costs.tolist()

    pending = [len(k) for k in kids]
    choice = [-1] * n_classes
    settled = [False] * n_classes
    best = [math.inf] * n_classes
    set_cost = [0.0] * n_classes
    bits = [0] * n_classes
    weights = _Weights(n_classes)
    is_root = [False] * n_classes
    for r in roots:
        is_root[r] = True
    roots_left = sum(is_root)

    heap = [(costs[n], n) for n in range(egraph.n_nodes) if usable[n] and not kids[n]]
    heapq.heapify(heap)
    while heap and roots_left:
        value, n = heapq.heappop(heap)
        c = node_class[n]
        if settled[c]:
            continue
        if tick is not None:
            tick()
        settled[c] = True
        choice[c] = n
        set_cost[c] = value
        union = 0
        for d in kids[n]:
            union |= bits[d]
        bits[c] = union | (1 << weights.add(costs[n]))
        if is_root[c]:
            roots_left -= 1
        for p in parents[c]:
            pc = node_class[p]
            if not usable[p] or settled[pc]:
                continue
            pending[p] -= 1
            if pending[p]:
                continue
            price = costs[p] + _union_cost(kids[p], bits, set_cost, weights)
            if price < best[pc]:
                best[pc] = price
                heapq.heappush(heap, (price, p))
    return choice


def _union_cost(
    children: Sequence[int], bits: list[int], set_cost: list[float], weights: _Weights
) -> float:
    """Cost of the union of the children's selected DAGs (each class counted once)."""
    if len(children) == 1:
        return set_cost[children[0]]
    big = max(children, key=set_cost.__getitem__)
    acc = bits[big]
    total = set_cost[big]
    for d in children:
        if d == big:
            continue
        extra = bits[d] & ~acc
        if extra:
            total += weights.sum_over(extra)
            acc |= extra
    return total


class _Weights:
    """Own cost of the r-th settled class's node, addressable by a bitset of ranks."""

    def __init__(self, capacity: int) -> None:
        self.values: list[float] = []
        self.array = np.zeros(max(capacity, 1), dtype=np.float64)

    def add(self, cost: float) -> int:
        rank = len(self.values)
        self.values.append(cost)
        self.array[rank] = cost
        return rank

    def sum_over(self, mask: int) -> float:
        if mask.bit_count() <= _FEW_BITS:
            values, total = self.values, 0.0
            while mask:
                top = mask.bit_length() - 1
                total += values[top]
                mask ^= 1 << top
            return total
        raw = np.frombuffer(mask.to_bytes((mask.bit_length() + 7) // 8, "little"), np.uint8)
        ranks = np.flatnonzero(np.unpackbits(raw, bitorder="little"))
        return float(self.array[ranks].sum())
