"""Which producer -> consumer edges a rule can rewrite across.

A cut between two blocks turns the value crossing it into an input of the second
block. A rule can then no longer match a pattern that contains both the consumer and
the producer of that value: a left-hand side `relu(add(?x, ?b))` needs the `add` under
the `relu`. A rule whose pattern only has a variable there (`relu(?x)`) matches the
input leaf just as well. So the rewrites a cut can lose are those of rules whose
patterns nest the consumer's op directly over the producer's op and match the graph
there; this module lists such nestings from the rules' syntax trees and matches them
against the graph at a cut (operators and operand positions; attributes and guards are
not evaluated, which errs on the side of "could match").

A rule that only rearranges (both sides hold the same ops, as associativity and
commutativity do) or expands (more ops after than before, as distributing a product
over a sum does) saves no work by itself; its matches across a cut are reported but do
not keep the cut out, or no residual stream could ever be cut (each layer's add reads
the previous layer's add, and `add(add(a, b), c)` matches there; an RMSNorm squares
the residual, and `mul(a, add(b, c))` matches there).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from eqsat.ir.graph import Graph
from eqsat.rules import ast
from eqsat.rules.library import Rule


@dataclass(frozen=True)
class Nesting:
    """A rule pattern `parent(..., child(...), ...)` with the child at operand `arg`."""

    rule: str
    parent: ast.Call
    arg: int
    saves: bool  # fewer ops after, or other ops as many: the rewrite itself may save work


Nestings = dict[tuple[str, str], tuple[Nesting, ...]]
"""(consumer op, producer op) -> the rule patterns that nest them."""


def rule_nestings(rules: Iterable[Rule]) -> Nestings:
    """Every (parent op, child op) nesting of some rule's matched side (both sides of
    a `<=>` rule are matched)."""
    found: dict[tuple[str, str], list[Nesting]] = defaultdict(list)
    for rule in rules:
        decl = rule.ast
        sides = [(decl.lhs, decl.rhs)]
        if decl.bidirectional:
            sides.append((decl.rhs, decl.lhs))
        for matched, built in sides:
            before, after = _ops(matched), _ops(built)
            moves = before == after or sum(after.values()) > sum(before.values())
            for pair, nesting in _nestings(rule.name, matched, not moves):
                found[pair].append(nesting)
    return {pair: tuple(ns) for pair, ns in found.items()}


def spanning_rules(
    graph: Graph, consumer: int, producer: int, nestings: Nestings, every: bool = False
) -> tuple[str, ...]:
    """Rules whose patterns match at `consumer` with `producer` under it. Rules that
    only rearrange or expand are left out unless `every`."""
    c, p = graph.nodes[consumer], graph.nodes[producer]
    names: list[str] = []
    for n in nestings.get((c.op, p.op), ()):
        if not n.saves and not every:
            continue
        if n.arg >= len(c.inputs) or c.inputs[n.arg] != producer:
            continue
        if n.rule not in names and _match(graph, n.parent, consumer, {}):
            names.append(n.rule)
    return tuple(names)


def _ops(items: tuple[ast.Item, ...]) -> Counter[str]:
    ops: Counter[str] = Counter()

    def walk(term: ast.Term) -> None:
        if isinstance(term, ast.Call):
            if term.op not in ("const", "param", "literal", "input"):
                ops[term.op] += 1
            for a in term.args:
                walk(a)

    for item in items:
        walk(item.term)
    return ops


def _nestings(name: str, items: tuple[ast.Item, ...], saves: bool):
    """(pair, Nesting) of one rule side. A variable naming another item of the side
    (`t = matmul(?a, ?b)`, then `add(t, ?c)`) nests that item's root: its parent is
    matched by ops only (the item's own pattern is not followed)."""
    roots = {
        item.name.lstrip("?"): item.term
        for item in items
        if item.name and isinstance(item.term, ast.Call)
    }

    def walk(term: ast.Term):
        if not isinstance(term, ast.Call):
            return
        for k, arg in enumerate(term.args):
            if isinstance(arg, ast.Call):
                yield (term.op, arg.op), Nesting(name, term, k, saves)
                yield from walk(arg)
            elif isinstance(arg, ast.Var) and arg.name.lstrip("?") in roots:
                child = roots[arg.name.lstrip("?")]
                yield (term.op, child.op), Nesting(name, term, k, saves)

    for item in items:
        yield from walk(item.term)


def _match(graph: Graph, term: ast.Term, i: int, env: dict[str, int]) -> bool:
    """Does `term` match the graph at node i (ops, arity, repeated variables)?"""
    if isinstance(term, ast.Wildcard):
        return True
    if isinstance(term, ast.Var):
        bound = env.setdefault(term.name, i)
        return bound == i
    node = graph.nodes[i]
    if node.op != term.op:
        return False
    if node.is_leaf:
        return True
    if len(term.args) != len(node.inputs):
        return False
    return all(_match(graph, a, j, env) for a, j in zip(term.args, node.inputs, strict=True))
