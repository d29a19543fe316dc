"""Terms of a saturated e-graph as text, and the term of an e-class nearest to a
target program.

`nearest` is an extraction guided by a target term: in an e-class it takes the e-node
with the target's op and attributes when there is one (and recurses into its operands
with the target's operands), else the smallest term of the class. The target's nodes
it reproduces are its score; the rest is how far the class is from the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from eqsat.egraph.decode import DecodedEGraph, ENode
from eqsat.ir.graph import Graph
from eqsat.ops import REGISTRY

_NAMED_LEAVES = ("input", "param", "literal")
TEXT_LIMIT = 600  # characters of a term's text, about
TEXT_DEPTH = 64  # calls shown nested in it


@dataclass(frozen=True)
class Term:
    op: str
    attrs: tuple[tuple[str, object], ...]
    children: tuple[Term, ...]

    def text(self, limit: int = TEXT_LIMIT) -> str:
        """The term in the model language's call syntax (leaves by name), cut to about
        `limit` characters with `...` (a model's tree can be huge: each use of a shared
        value repeats it)."""
        out: list[str] = []
        budget = [limit]

        def put(piece: str) -> None:
            out.append(piece)
            budget[0] -= len(piece)

        def walk(t: Term, depth: int) -> None:
            if t.op in _NAMED_LEAVES:
                put(str(dict(t.attrs)["name"]))
                return
            if budget[0] <= 0 or depth > TEXT_DEPTH:
                put("...")
                return
            defaults = {a.name: a.default for a in REGISTRY[t.op].attrs}
            shown = [
                f"{k}={_value(v)}" for k, v in t.attrs if t.op == "const" or defaults.get(k) != v
            ]
            put(f"{t.op}(")
            for k, c in enumerate(t.children):
                if k:
                    put(", ")
                walk(c, depth + 1)
            put((", " if t.children and shown else "") + ", ".join(shown) + ")")

        walk(self, 0)
        return "".join(out)

    @cached_property
    def size(self) -> int:
        """Nodes of the tree (a shared subterm counted at each use)."""
        return 1 + sum(c.size for c in self.children)


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return f"{v:g}" if abs(v) < 1e16 else repr(v)
    return str(v)


def graph_term(graph: Graph, i: int) -> Term:
    """The tree of node `i` of a graph (shared nodes repeated)."""
    memo: dict[int, Term] = {}
    order = _post_order(graph, i)
    for j in order:
        node = graph.nodes[j]
        memo[j] = Term(node.op, node.attrs, tuple(memo[k] for k in node.inputs))
    return memo[i]


def _post_order(graph: Graph, root: int) -> list[int]:
    out, seen, stack = [], set(), [(root, False)]
    while stack:
        j, done = stack.pop()
        if done:
            out.append(j)
            continue
        if j in seen:
            continue
        seen.add(j)
        stack.append((j, True))
        stack.extend((k, False) for k in graph.nodes[j].inputs)
    return out


class TermFinder:
    """Smallest and target-guided terms of the e-classes of one decoded e-graph."""

    def __init__(self, decoded: DecodedEGraph):
        self.decoded = decoded
        self._size = self._smallest_sizes()
        self._memo: dict[tuple[str, int], tuple[Term, int]] = {}
        self._smallest: dict[str, Term | None] = {}

    def _smallest_sizes(self) -> dict[str, float]:
        size = dict.fromkeys(self.decoded.classes, math.inf)
        nodes = [n for ns in self.decoded.classes.values() for n in ns]
        changed = True
        while changed:
            changed = False
            for n in nodes:
                s = 1 + sum(size[c] for c in n.children)
                if s < size[n.eclass]:
                    size[n.eclass] = s
                    changed = True
        return size

    def _node_size(self, n: ENode) -> float:
        return 1 + sum(self._size[c] for c in n.children)

    def smallest(self, eclass: str) -> Term:
        """The term of fewest nodes of `eclass` (one Term per class: shared)."""
        if eclass not in self._smallest:
            node = min(self.decoded.classes[eclass], key=self._node_size)
            self._smallest[eclass] = None  # a cycle through here has a smaller term
            kids = tuple(self.smallest(c) for c in node.children)
            self._smallest[eclass] = Term(node.op, node.attrs, kids)
        return self._smallest[eclass]

    def nearest(self, eclass: str, target: Term) -> tuple[Term, int]:
        """The term of `eclass` most like `target` and how many of its nodes it shares."""
        return self._nearest(eclass, target, frozenset())

    def _nearest(self, eclass: str, target: Term, path: frozenset) -> tuple[Term, int]:
        key = (eclass, id(target))
        if key in self._memo:
            return self._memo[key]
        best: tuple[Term, int] | None = None
        if key not in path:
            inner = path | {key}
            for n in self.decoded.classes[eclass]:
                if n.op != target.op or len(n.children) != len(target.children):
                    continue
                if n.attrs != target.attrs:
                    continue
                kids = [
                    self._nearest(c, t, inner)
                    for c, t in zip(n.children, target.children, strict=True)
                ]
                score = 1 + sum(s for _, s in kids)
                term = Term(n.op, n.attrs, tuple(k for k, _ in kids))
                if best is None or score > best[1]:
                    best = (term, score)
        out = best if best is not None else (self.smallest(eclass), 0)
        self._memo[key] = out
        return out
