"""A peer compiler's kernel grouping, carried onto eqsat's graph and its simulator.

A peer (ONNX Runtime, TVM) decides which ops run as one kernel; the simulator runs
eqsat's registry kernels. `group_program` builds the eqsat program that runs each of
the peer's groups as the registry kernels that compute it: the group's ops, cut out
of the graph as a component of its own (values from outside enter as inputs), are
rewritten by eqsat's fusion rules alone and extracted under the hardware cost model,
so a group becomes one fused kernel where the registry has one of that composition
(`matmul_bias_relu`, `matmul_bias_gelu` from an erf-GELU chain, `conv2d_bias_add_relu`
...) and stays several kernels where it has none. Nothing crosses a group boundary:
the result fuses exactly what the peer fused, never more.

eqsat's ONNX import names every statement after the first output of the ONNX node
it came from (frontend/onnx/names.py), which is how `onnx_node_of` traces eqsat's
nodes back to the ONNX nodes a peer grouped.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.pipeline import CompiledRules, optimize
from frontend.onnx.names import sanitize
from hwsim.hardware import Hardware

_SUFFIX = re.compile(r"_\d+$")


def onnx_node_of(graph: Graph, node_outputs: Sequence[Sequence[str]]) -> list[int | None]:
    """For each node of `graph` (imported from an ONNX graph whose nodes have the
    given outputs), the index of the ONNX node it came from (None for leaves and
    for names that trace to no node)."""
    by_name: dict[str, int] = {}
    for k, outputs in enumerate(node_outputs):
        first = next((o for o in outputs if o), "")
        if first:
            by_name.setdefault(sanitize(first), k)
    out: list[int | None] = []
    for _, node in graph:
        name = node.name
        k = None
        if name and not node.is_leaf:
            k = by_name.get(name)
            if k is None:
                k = by_name.get(_SUFFIX.sub("", name))
        out.append(k)
    return out


@dataclass
class GroupKernels:
    """One peer group on the simulator: the ops it holds as written and the kernels
    (ops of the rewritten component) that run it."""

    label: str
    ops: list[str]
    kernels: list[str] = field(default_factory=list)

    @property
    def one_kernel(self) -> bool:
        return len(self.kernels) == 1


@dataclass
class GroupedProgram:
    graph: Graph
    groups: list[GroupKernels]
    split: list[str]  # groups run op by op because they are not convex in eqsat's graph


def group_program(
    graph: Graph,
    group_of: Sequence[int | None],
    labels: Sequence[str],
    fusion: CompiledRules,
    hw: Hardware,
) -> GroupedProgram:
    """`graph` with every group of two or more ops (`group_of[i]`: the group of node
    i, an index into `labels`) replaced by the registry kernels `fusion` finds for it
    on `hw`; ops in no group stay one kernel each, as written."""
    members: dict[int, list[int]] = {}
    for i, node in graph:
        g = group_of[i]
        if g is not None and not node.is_leaf:
            members.setdefault(g, []).append(i)
    users = graph.users()
    split = {g for g, ms in members.items() if len(ms) > 1 and not _convex(ms, users)}
    multi = {g: ms for g, ms in members.items() if len(ms) > 1 and g not in split}
    unit = list(range(len(graph.nodes)))  # unit id of each node: itself or its group's
    for g, ms in multi.items():
        for i in ms:
            unit[i] = -1 - g
    rewritten, outputs_of = _rewrite_components(graph, multi, users, fusion, hw)

    b = GraphBuilder(graph.name, graph.dims)
    b.graph.constants.update(graph.constants)
    b.graph.constants.update(rewritten.constants)
    built: dict[int, int] = {}
    leaf_cache: dict[tuple, int] = {}

    def leaf(node) -> int:
        key = (node.op, node.attrs)
        if key not in leaf_cache:
            leaf_cache[key] = b.add(node.op, (), node.attr_dict, node.name)
        return leaf_cache[key]

    report: dict[int, GroupKernels] = {
        g: GroupKernels(labels[g], [graph.nodes[i].op for i in ms]) for g, ms in multi.items()
    }
    for u in _unit_order(graph, unit):
        if u >= 0:
            node = graph.nodes[u]
            if node.is_leaf:
                built[u] = leaf(node)
            else:
                inputs = [built[j] for j in node.inputs]
                built[u] = b.add(node.op, inputs, node.attr_dict, node.name)
            continue
        g = -1 - u
        memo: dict[int, int] = {}
        ops: list[str] = []

        def copy(r: int, g: int = g, memo: dict = memo, ops: list = ops) -> int:
            if r in memo:
                return memo[r]
            rnode = rewritten.nodes[r]
            if rnode.op == "input" and str(rnode.attr("name")).startswith(_IN_PREFIX):
                j = int(str(rnode.attr("name")).rsplit("_", 1)[1])
                memo[r] = built[j]
            elif rnode.is_leaf:
                memo[r] = leaf(rnode)
            else:
                inputs = [copy(k) for k in rnode.inputs]
                memo[r] = b.add(rnode.op, inputs, rnode.attr_dict, rnode.name)
                ops.append(rnode.op)
            return memo[r]

        for i, r in outputs_of[g].items():
            built[i] = copy(r)
        report[g].kernels = ops
    for name, i in graph.outputs:
        b.output(name, built[i])
    return GroupedProgram(
        b.graph, [report[g] for g in sorted(report)], [labels[g] for g in sorted(split)]
    )


_IN_PREFIX = "peer_in_"


def _convex(nodes: list[int], users: list[list[int]]) -> bool:
    """No path leaves the group and comes back into it."""
    inside = set(nodes)
    last = max(nodes)
    stack = [u for i in nodes for u in users[i] if u not in inside and u < last]
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        for u in users[i]:
            if u in inside:
                return False
            if u < last:
                stack.append(u)
    return True


def _rewrite_components(
    graph: Graph,
    groups: dict[int, list[int]],
    users: list[list[int]],
    fusion: CompiledRules,
    hw: Hardware,
) -> tuple[Graph, dict[int, dict[int, int]]]:
    """All groups as disjoint components of one graph, rewritten in one e-graph;
    for each group, its nodes used outside it -> their node in the result."""
    b = GraphBuilder(f"{graph.name}_groups", graph.dims)
    graph_outputs = {i for _, i in graph.outputs}
    leaves: dict[int, int] = {}
    names: dict[int, dict[int, str]] = {}
    for g, ms in groups.items():
        inside = set(ms)
        local: dict[int, int] = {}
        for i in ms:
            node = graph.nodes[i]
            operands = []
            for j in node.inputs:
                if j in inside:
                    operands.append(local[j])
                elif graph.nodes[j].is_leaf:
                    if j not in leaves:
                        leaf = graph.nodes[j]
                        if leaf.op == "literal":
                            b.graph.constants[str(leaf.attr("name"))] = graph.constants[
                                str(leaf.attr("name"))
                            ]
                        leaves[j] = b.add(leaf.op, (), leaf.attr_dict, leaf.name)
                    operands.append(leaves[j])
                else:
                    key = -1 - j
                    if key not in local:
                        local[key] = b.leaf("input", f"{_IN_PREFIX}{g}_{j}", graph.nodes[j].type)
                    operands.append(local[key])
            local[i] = b.add(node.op, operands, node.attr_dict, node.name)
        names[g] = {}
        for i in ms:
            if i in graph_outputs or any(u not in inside for u in users[i]):
                name = f"peer_out_{g}_{i}"
                b.output(name, local[i])
                names[g][i] = name
    if not b.graph.outputs:
        return b.graph, {g: {} for g in groups}
    result = optimize(b.graph, fusion, hw).graph
    where = dict(result.outputs)
    return result, {g: {i: where[name] for i, name in outs.items()} for g, outs in names.items()}


def _unit_order(graph: Graph, unit: list[int]) -> list[int]:
    """Nodes and groups (negative ids) in an order that respects dataflow between
    them, as close to the graph's own order as it allows."""
    deps: dict[int, set[int]] = {}
    first: dict[int, int] = {}
    for i, node in graph:
        u = unit[i]
        first.setdefault(u, i)
        d = deps.setdefault(u, set())
        d.update(unit[j] for j in node.inputs if unit[j] != u)
    waiting = {u: len(d) for u, d in deps.items()}
    dependents: dict[int, list[int]] = {}
    for u, d in deps.items():
        for v in d:
            dependents.setdefault(v, []).append(u)
    ready = [(first[u], u) for u, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in dependents.get(u, ()):
            waiting[v] -= 1
            if waiting[v] == 0:
                heapq.heappush(ready, (first[v], v))
    if len(order) != len(deps):
        raise ValueError("peer groups form a cycle in the graph")
    return order


__all__ = ["GroupKernels", "GroupedProgram", "group_program", "onnx_node_of"]
