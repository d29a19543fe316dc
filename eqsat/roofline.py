"""The roofline bound of a model, the same for every program compiled from it.

A program's own bound (hwsim's `roofline_cycles`: its instructions' MACs, lane ops and
DRAM bytes at peak rate) moves with the program: fusing kernels removes DRAM traffic,
so the optimized program's bound drops and its share can fall while it gets faster.
The model's bound does not move. It is the busiest of:

- the matrix unit running every contraction's MACs of the model as written at the
  peak rate of its dtype (`macs_per_cycle`);
- the vector unit running the other ops' lane passes at `vector_lanes` per cycle;
- DRAM moving what any program must move: the model's inputs, params and stored
  constants read once and its outputs written once; a table that is only gathered
  from (an embedding) counts the rows gathered, not the whole table.

Layout ops (transpose, slice, concat, ...) and reshapes compute nothing and count for
nothing; neither does the work of weights prepared at load time (eqsat/weights.py). A program may beat the bound by computing less than the model writes
(algebra) or in a faster dtype (int8 after quantization): its share is then above 1.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from eqsat.costs import kernel_work
from eqsat.ir.graph import Graph
from eqsat.weights import prepared_nodes
from hwsim.costmodel import roofline_terms
from hwsim.hardware import Hardware

_DRAM_LEAVES = ("input", "param", "literal")


@dataclass(frozen=True)
class Roofline:
    cycles: int
    bound: str  # which unit binds: "matrix", "vector" or "dram"
    macs: dict[str, int]  # per input dtype of the contractions
    vector_ops: int  # lane passes of everything else
    dram_bytes: int

    def fraction(self, cycles: int) -> float:
        """The share of the bound reached by a program that takes `cycles`."""
        return self.cycles / cycles if cycles else 0.0


def model_roofline(graph: Graph, hw: Hardware) -> Roofline:
    live = graph.live()
    prepared = prepared_nodes(graph)  # load-time work: not part of an inference
    macs: Counter[str] = Counter()
    vector_ops = dram = 0
    users = graph.users()
    for i, node in graph:
        if not live[i] or i in prepared:
            continue
        if node.is_leaf:
            if node.op in _DRAM_LEAVES:
                dram += _read_bytes(graph, i, [j for j in users[i] if live[j]])
            continue
        in_types = [graph.nodes[j].type for j in node.inputs]
        work = kernel_work(node.op, in_types, node.type, node.attr_dict)
        if work is None or work.kind == "layout":
            continue
        if work.kind in ("matmul", "conv"):
            macs[work.dtype] += work.macs
        vector_ops += work.vector_ops
    dram += sum(graph.nodes[i].type.nbytes for i in {i for _, i in graph.outputs})
    times = roofline_terms(hw, macs, vector_ops, dram)
    bound = max(times, key=times.__getitem__)
    return Roofline(math.ceil(times[bound]), bound, dict(macs), vector_ops, dram)


def _read_bytes(graph: Graph, i: int, users: list[int]) -> int:
    """Bytes of leaf i a program must read: all of it, or, for a table only gathered
    from (an embedding: a vocabulary of rows, a handful looked up), the rows gathered."""
    whole = graph.nodes[i].type.nbytes
    gathers = [graph.nodes[j] for j in users]
    if gathers and all(
        g.op == "gather" and g.inputs[0] == i and i not in g.inputs[1:] for g in gathers
    ):
        return min(whole, sum(g.type.nbytes for g in gathers))
    return whole


def memory_bound_cycles(roofline: Roofline, hw: Hardware) -> int:
    """The DRAM term of `roofline` alone: its bytes at the peak bandwidth. The bound of a
    memory-bound step (a decode step: weights and KV cache read, outputs written) even
    where another unit's term happens to be larger."""
    return math.ceil(roofline.dram_bytes / hw.dram_bytes_per_cycle)
