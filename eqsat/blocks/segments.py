"""Cutting a graph into blocks, and the canonical form that finds the repeated ones.

A cut lies between two consecutive nodes of the topological order. The values that
cross it (computed before, used after) become outputs of the block before and inputs
of the block after. Cuts are placed where the fewest values cross (a transformer's
residual stream between layers) and never on an edge a rule could rewrite across
(eqsat.blocks.seams). Nodes that read no model input (weights prepared from params,
scalars computed from consts) are not cut at all: each block that uses one carries
its own copy, so a block sees its constants as the whole graph would.

A block's canonical form names its leaves by their order of first use (`in0` for a
value from an earlier block or a model input alike, `p0` for a param, `c0` for a
literal): two layers that differ only in the names of their weights have the same
form, and one optimization serves both.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from eqsat.blocks.seams import Nestings, spanning_rules
from eqsat.ir.graph import Graph, GraphBuilder, Node

LEAF_PREFIX = {"input": "in", "param": "p", "literal": "c"}


@dataclass(frozen=True)
class Cut:
    """A boundary between two blocks: after node `after` (an index of the graph)."""

    after: int
    crossing: tuple[int, ...]  # the nodes whose values cross it


@dataclass(frozen=True)
class LongRange:
    """A value crossing a cut that some rule pattern matches together with a consumer
    on the other side: a value that crosses every cut (a mask computed once, read by
    every layer), or one only a rule that rearranges or expands spans. A whole-graph
    run could rewrite there; the blocks cannot."""

    node: int
    consumer_op: str
    rules: tuple[str, ...]


@dataclass
class Block:
    """One block of the graph, in canonical form, with the way back to the graph."""

    nodes: tuple[int, ...]  # the graph's nodes it computes (not its copied constants)
    graph: Graph  # canonical form: leaves in0.., x0.., p0.., c0..; statements s0..
    key: str  # content hash of the canonical form
    leaves: dict[str, int]  # canonical leaf name -> node of the original graph
    outputs: dict[str, int]  # canonical output name (out0..) -> node of the original graph
    names: dict[str, str]  # canonical statement name (s0..) -> the model's name


@dataclass
class BlockPlan:
    blocks: list[Block]
    cuts: list[Cut]
    refused: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    long_range: list[LongRange] = field(default_factory=list)

    @property
    def distinct(self) -> dict[str, list[Block]]:
        out: dict[str, list[Block]] = {}
        for b in self.blocks:
            out.setdefault(b.key, []).append(b)
        return out

    @property
    def repeats(self) -> bool:
        return len(self.distinct) < len(self.blocks)


def static_nodes(graph: Graph) -> list[bool]:
    """Nodes whose value depends on no model input: params, consts, literals and
    what is computed from those only."""
    static = [False] * len(graph.nodes)
    for i, n in graph:
        static[i] = n.op != "input" if n.is_leaf else all(static[j] for j in n.inputs)
    return static


def plan_blocks(graph: Graph, nestings: Nestings) -> BlockPlan:
    """Cut `graph` where the fewest values cross and no rule nests across the cut."""
    live = graph.live()
    static = static_nodes(graph)
    order = [i for i, n in graph if live[i] and not static[i] and not n.is_leaf]
    pos = {i: k for k, i in enumerate(order)}
    users = graph.users()
    outputs = {i for _, i in graph.outputs}
    # last position (in `order`) where each value is read
    last = [pos[i] for i in order]
    for k, i in enumerate(order):
        later = [pos[u] for u in users[i] if u in pos]
        if later:
            last[k] = max(later)
    # How many values cross the boundary after each position: computed values, and the
    # model's inputs still to be read. Not counted: values that live across most of the
    # graph (a mask computed once and read by every layer), which cross every cut
    # wherever it is.
    span = len(order) // 2
    delta = [0] * (len(order) + 1)
    wide: set[int] = set()
    for k, i in enumerate(order):
        if k < last[k]:
            if last[k] - k <= span:
                delta[k] += 1
                delta[last[k]] -= 1
            else:
                wide.add(i)
    for i, n in graph:
        if n.op == "input" and live[i]:
            reads = [pos[u] for u in users[i] if u in pos]
            if reads and max(reads) <= span:
                delta[0] += 1
                delta[max(reads)] -= 1
    crossing_count, running = [], 0
    for k in range(len(order) - 1):
        running += delta[k]
        crossing_count.append(running)
    fewest = min(crossing_count, default=0)

    # Where consecutive positions qualify (an add, then the layernorm reading it), the
    # cut goes after the last of them: the small op stays with what precedes it.
    # The end of the graph counts as such a position: the model's last op (a final
    # layernorm) stays with the layer it follows.
    def qualifies(k: int) -> bool:
        return k >= len(crossing_count) or crossing_count[k] == fewest

    candidates = [k for k in range(len(crossing_count)) if qualifies(k) and not qualifies(k + 1)]
    cuts: list[Cut] = []
    refused: list[tuple[int, tuple[str, ...]]] = []
    long_range: dict[tuple[int, str], LongRange] = {}
    start, blocks_of = 0, []
    for k in candidates:
        crossing = [order[q] for q in range(k + 1) if last[q] > k]
        local = [i for i in crossing if pos[i] >= start and i not in wide]
        blocking = _nested_rules(graph, local, users, pos, k, nestings)
        if blocking:
            refused.append((order[k], blocking))
            continue
        for i in crossing:  # what the cut hides from a whole-graph run
            for op, rules in _nested_by_consumer(graph, i, users, pos, k, nestings, True):
                long_range.setdefault((i, op), LongRange(i, op, rules))
        cuts.append(Cut(order[k], tuple(crossing)))
        blocks_of.append(order[start : k + 1])
        start = k + 1
    blocks_of.append(order[start:])
    blocks = _canonical_blocks(graph, blocks_of, static, users, outputs)
    # Neighbours that both occur once gain nothing from being apart: join them (one
    # optimization instead of two, and no rewrite lost at their cut).
    keys = [b.key for b in blocks]
    once = {k for k in keys if keys.count(k) == 1}
    joined: list[list[int]] = []
    kept_cuts = []
    for b, nodes in enumerate(blocks_of):
        if b and keys[b] in once and keys[b - 1] in once:
            joined[-1] = joined[-1] + nodes
        else:
            if b:
                kept_cuts.append(cuts[b - 1])
            joined.append(nodes)
    if len(joined) < len(blocks_of):
        blocks = _canonical_blocks(graph, joined, static, users, outputs)
    return BlockPlan(blocks, kept_cuts, refused, list(long_range.values()))


def _canonical_blocks(graph, blocks_of, static, users, outputs) -> list[Block]:
    owner = {i: b for b, nodes in enumerate(blocks_of) for i in nodes}
    return [
        canonical_block(graph, nodes, static, users, outputs, owner, b)
        for b, nodes in enumerate(blocks_of)
    ]


def _nested_by_consumer(graph, i, users, pos, k, nestings, every=False):
    """(consumer op, rules) for the consumers after position k of node i that some
    rule pattern matches together with i."""
    for u in users[i]:
        if u in pos and pos[u] > k:
            rules = spanning_rules(graph, u, i, nestings, every)
            if rules:
                yield graph.nodes[u].op, rules


def _nested_rules(graph, crossing, users, pos, k, nestings) -> tuple[str, ...]:
    """Rules that may save work (eqsat.blocks.seams) matching over a value of `crossing` and a
    consumer after position k."""
    found: list[str] = []
    for i in crossing:
        for _, rules in _nested_by_consumer(graph, i, users, pos, k, nestings):
            found += [r for r in rules if r not in found]
    return tuple(found)


def canonical_block(
    graph: Graph,
    nodes: list[int],
    static: list[bool],
    users: list[list[int]],
    outputs: set[int],
    owner: dict[int, int],
    index: int,
) -> Block:
    """The block computing `nodes`, in canonical form (see the module docstring)."""
    b = GraphBuilder("block")
    env: dict[int, int] = {}
    leaves: dict[str, int] = {}
    counts = {"in": 0, "p": 0, "c": 0}

    def leaf_name(prefix: str, j: int) -> str:
        name = f"{prefix}{counts[prefix]}"
        counts[prefix] += 1
        leaves[name] = j
        return name

    def ref(j: int) -> int:
        if j in env:
            return env[j]
        n = graph.nodes[j]
        if n.op == "const":
            env[j] = b.add("const", (), dict(n.attrs))
        elif n.op == "literal":
            name = leaf_name("c", j)
            env[j] = b.literal(name, graph.constants[str(n.attr("name"))], n.type.dtype)
        elif n.is_leaf:
            env[j] = b.leaf(n.op, leaf_name(LEAF_PREFIX[n.op], j), n.type)
        elif static[j]:  # a constant computation: this block's own copy
            env[j] = b.add(n.op, tuple(ref(a) for a in n.inputs), dict(n.attrs))
        else:  # computed by an earlier block
            env[j] = b.leaf("input", leaf_name("in", j), n.type)
        return env[j]

    names: dict[str, str] = {}
    for k, i in enumerate(nodes):
        n = graph.nodes[i]
        env[i] = b.add(n.op, tuple(ref(a) for a in n.inputs), dict(n.attrs), name=f"s{k}")
        if n.name:
            names[f"s{k}"] = n.name
    outs: dict[str, int] = {}
    for i in nodes:
        if i in outputs or any(owner.get(u, index) != index for u in users[i]):
            name = f"out{len(outs)}"
            outs[name] = i
            b.output(name, env[i])
    return Block(tuple(nodes), b.graph, block_key(b.graph), leaves, outs, names)


def block_key(g: Graph) -> str:
    """A content hash of a canonical block: ops, operands, attributes, types, outputs
    and literal values (statement names are not part of it)."""
    h = hashlib.sha256()
    for n in g.nodes:
        h.update(repr(_node_key(n)).encode())
    h.update(repr(g.outputs).encode())
    for name, value in sorted(g.constants.items()):
        h.update(f"{name}:{value.dtype.str}:{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


def _node_key(n: Node) -> tuple:
    return (n.op, n.inputs, n.attrs, n.type.dtype.value, n.type.shape)
