"""One direction of a rule on a concrete graph: does its left-hand side match (the
e-matcher's question, asked in Python), and what does its right-hand side build?

The generator (generate.py) only proposes graphs shaped like the pattern; this module
is the oracle that decides, with the compiler's semantics, whether the rule would fire
on them: op names, repeated variables, canonical attribute values, guards and the
attribute expressions checked after them. The right-hand side is then built into the
same graph with GraphBuilder, so an ill-typed replacement is a type error here.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ops import REGISTRY, AttrType
from eqsat.rules import Rule, ast
from eqsat.rules.compiler import egglog_names
from eqsat.verify.guards import Facts, Pick, attr_value, check_deferred, holds, match_attr
from eqsat.verify.semantics import Env

ROOT = "root"  # the key of an unnamed (single) left-hand side root


@dataclass(frozen=True)
class Direction:
    """`NAME` (left to right) or `NAME-rev` (the way back of a `<=>` rule)."""

    rule: Rule
    name: str
    lhs: tuple[ast.Item, ...]
    rhs: tuple[ast.Item, ...]

    @property
    def guards(self) -> tuple:
        return self.rule.ast.guards

    @property
    def approx(self) -> float | None:
        return self.rule.approx

    @property
    def root_names(self) -> tuple[str, ...]:
        return tuple(item.name for item in self.lhs if item.name)


def directions(rule: Rule) -> tuple[Direction, ...]:
    decl = rule.ast
    names = egglog_names(decl)
    out = [Direction(rule, names[0], decl.lhs, decl.rhs)]
    if decl.bidirectional:
        out.append(Direction(rule, names[1], decl.rhs, decl.lhs))
    return tuple(out)


def root_key(item: ast.Item) -> str:
    return item.name or ROOT


# ------------------------------------------------------------------ matching


def match_lhs(
    direction: Direction,
    graph: Graph,
    roots: dict[str, int],
    facts: Facts | None = None,
    pick: Pick | None = None,
) -> Env | None:
    """The bindings with which the direction fires on `roots`, or None. `facts` are the
    rows of predicate guards; `pick` chooses among several matching rows."""
    env = Env(graph)
    for name in direction.root_names:
        env.tensors[name] = roots[name]
    deferred: list = []
    for item in direction.lhs:
        if not _match(item.term, roots[root_key(item)], env, deferred):
            return None
    if not all(holds(guard, env, facts, pick) for guard in direction.guards):
        return None
    return env if check_deferred(deferred, env) else None


def _match(term: ast.Term, node_id: int, env: Env, deferred: list) -> bool:
    if isinstance(term, ast.Wildcard):
        return True
    if isinstance(term, ast.Var):
        bound = env.tensors.setdefault(term.name, node_id)
        return bound == node_id
    node = env.graph.nodes[node_id]
    if node.op != term.op or len(node.inputs) != len(term.args):
        return False
    if not all(_match(a, i, env, deferred) for a, i in zip(term.args, node.inputs, strict=True)):
        return False
    given = {a.key: a.value for a in term.attrs}
    attrs = node.attr_dict
    for spec in REGISTRY[term.op].attrs:
        expr = given.get(spec.name)
        if expr is None:
            # An implementation choice left out matches only its default (an untiled matmul).
            if getattr(spec, "choice", False) and attrs[spec.name] != spec.default:
                return False
        elif not match_attr(spec, expr, attrs[spec.name], env, deferred):
            return False
    return True


# ------------------------------------------------------------------ building


@dataclass
class Replacement:
    """What the right-hand side built: LHS root key -> its replacement node."""

    roots: dict[str, int]
    first_node: int  # nodes from here on belong to the right-hand side


def build_rhs(direction: Direction, env: Env, builder: GraphBuilder) -> Replacement:
    """Build the right-hand side into `builder` (raises OpTypeError when it is
    ill-typed, Undefined when an expression has no value)."""
    env.in_rhs = True
    first = len(builder.graph.nodes)
    roots = set(direction.root_names)
    out: dict[str, int] = {}
    for item in direction.rhs:
        node = _build(item.term, env, builder)
        if item.name is None:
            out[root_key(direction.lhs[0])] = node
        elif item.name in roots:
            out[item.name] = node
        else:
            env.tensors[item.name] = node
    return Replacement(out, first)


def _build(term: ast.Term, env: Env, builder: GraphBuilder) -> int:
    if isinstance(term, ast.Var):
        return env.tensors[term.name]
    assert isinstance(term, ast.Call), term  # `_` is rejected on the RHS by the compiler
    op = REGISTRY[term.op]
    inputs = [_build(a, env, builder) for a in term.args]
    given = {a.key: a.value for a in term.attrs}
    attrs = {}
    for spec in op.attrs:
        expr = given.get(spec.name)
        if expr is not None:
            attrs[spec.name] = attr_value(spec, expr, env)
        elif (
            op.name == "slice"
            and spec.name == "axes"
            and isinstance(given.get("starts"), ast.ListLit)
        ):
            attrs["axes"] = tuple(range(len(given["starts"].items)))  # as the compiler fills it
        elif not spec.required:
            attrs[spec.name] = spec.default
    if op.name in ("input", "param") and "name" not in attrs:  # pragma: no cover - not in rules
        attrs["name"] = f"rhs{len(builder.graph.nodes)}"
    for spec in op.attrs:
        if spec.type is AttrType.STR and spec.name in attrs:
            attrs[spec.name] = str(attrs[spec.name])
    return builder.add(op.name, inputs, attrs)
