"""Which identities of existing rule files do the synthesized rules derive?

The targets are read from the rule files through eqsat's loader: every exact rule
whose two sides use only the synthesized ops (no constants, one root). Each becomes an
identity in the synthesizer's shape domain: a variable is a rank-0 scalar where a
guard says `rank(x) == 0` and a matrix otherwise, `shape(x) == shape(y)` and
`dim(x, i) == dim(y, j)` guards unify dims, a `perm` (literal [1, 0] or a variable) is
[1, 0]. A rule that does not fit (another guard, another attribute, ill-typed on
matrices) is reported as not instantiable. The kept rules then try to merge both
sides in an e-graph (derive.Prover, a bounded run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eqsat.rules import Rule, load_rules
from eqsat.rules import ast as rast
from eqsat.synth.derive import Prover
from eqsat.synth.shapes import Partition, var_shape
from eqsat.synth.terms import Term, typing, variables

ROUNDS = 6


class NotInstantiable(Exception):
    pass


@dataclass(frozen=True)
class Target:
    rule: Rule
    lhs: Term
    rhs: Term
    ranks: tuple[tuple[str, int], ...]
    partition: Partition


@dataclass
class Rediscovery:
    targets: list[Target] = field(default_factory=list)
    rediscovered: list[str] = field(default_factory=list)  # rule names
    missed: list[str] = field(default_factory=list)
    not_instantiable: list[tuple[str, str]] = field(default_factory=list)  # (name, why)

    @property
    def total(self) -> int:
        return len(self.targets) + len(self.not_instantiable)


def _ops(term: rast.Term) -> set[str]:
    if isinstance(term, rast.Call):
        return {term.op}.union(*(_ops(a) for a in term.args))
    return set()


def in_scope(rule: Rule, ops: Iterable[str]) -> bool:
    """An exact rule whose sides use only `ops` (a const is not one of them)."""
    used = set().union(*(_ops(i.term) for i in rule.ast.lhs + rule.ast.rhs))
    return not rule.is_approx and bool(used) and used <= set(ops)


def _term(t: rast.Term) -> Term:
    if isinstance(t, rast.Var):
        return t.name
    if isinstance(t, rast.Wildcard):
        raise NotInstantiable("a wildcard")
    for a in t.attrs:
        perm_ok = t.op == "transpose" and a.key == "perm"
        literal = isinstance(a.value, rast.ListLit) and [
            getattr(v, "value", None) for v in a.value.items
        ] == [1, 0]
        if not (perm_ok and (literal or isinstance(a.value, rast.Name))):
            raise NotInstantiable(f"attribute {a.key} of {t.op}")
    return (t.op, *(_term(a) for a in t.args))


def _name(e: rast.Expr) -> str | None:
    return e.name if isinstance(e, rast.Name) else None


def _guards(guards: Sequence) -> tuple[dict[str, int], list[tuple[str, str]]]:
    ranks: dict[str, int] = {}
    pairs: list[tuple[str, str]] = []
    for g in guards:
        if not isinstance(g, rast.Guard) or g.op != "==":
            raise NotInstantiable("a guard other than ==")
        left, right = g.left, g.right
        if isinstance(left, rast.Func) and isinstance(right, rast.Func):
            if left.name == right.name == "shape":
                x, y = _name(left.args[0]), _name(right.args[0])
                if x and y:
                    pairs += list(zip(var_shape(x, 2), var_shape(y, 2), strict=True))
                    continue
            if left.name == right.name == "dim":
                (x, i), (y, j) = left.args, right.args
                if (
                    _name(x)
                    and _name(y)
                    and isinstance(i, rast.IntLit)
                    and isinstance(j, rast.IntLit)
                ):
                    pairs.append((f"{_name(x)}.{i.value % 2}", f"{_name(y)}.{j.value % 2}"))
                    continue
        if isinstance(left, rast.Func) and left.name == "rank" and isinstance(right, rast.IntLit):
            x = _name(left.args[0])
            if x and right.value in (0, 2):
                ranks[x] = right.value
                continue
        raise NotInstantiable("a guard outside the matrix/scalar domain")
    return ranks, pairs


def target(rule: Rule) -> Target:
    """The rule as an identity of the shape domain (raises NotInstantiable)."""
    if len(rule.ast.lhs) != 1 or len(rule.ast.rhs) != 1:
        raise NotInstantiable("several roots")
    lhs, rhs = _term(rule.ast.lhs[0].term), _term(rule.ast.rhs[0].term)
    given, pairs = _guards(rule.ast.guards)
    names = variables(lhs) + [v for v in variables(rhs) if v not in variables(lhs)]
    ranks = {v: given.get(v, 2) for v in names}
    partition = Partition().union((x, y) for x, y in pairs if x.split(".")[0] in ranks)
    typed = typing(lhs, ranks, partition)
    typed = typing(rhs, ranks, typed[1]) if typed else None
    if typed is None:
        raise NotInstantiable("ill-typed on matrices and scalars")
    lshape = typing(lhs, ranks, typed[1])
    if lshape is None or len(lshape[0]) != len(typed[0]):
        raise NotInstantiable("the sides differ in rank")
    partition = typed[1].union(zip(lshape[0], typed[0], strict=True))
    return Target(rule, lhs, rhs, tuple(ranks.items()), partition)


def default_target_files() -> list[Path]:
    from eqsat.rules import default_rules_dir

    return [default_rules_dir() / "algebra.rules", default_rules_dir() / "layout.rules"]


def rediscover(
    rule_texts: Sequence[str],
    ops: Iterable[str],
    files: Sequence[str | Path] | None = None,
    rounds: int = ROUNDS,
) -> Rediscovery:
    """Which in-scope identities of `files` (default algebra.rules and layout.rules)
    the rules `rule_texts` (rule-language text, one rule each) derive."""
    ops = set(ops)
    out = Rediscovery()
    for rule in load_rules(list(files or default_target_files())):
        if not in_scope(rule, ops):
            continue
        try:
            out.targets.append(target(rule))
        except NotInstantiable as why:
            out.not_instantiable.append((rule.name, str(why)))
    prover = Prover(rounds=rounds)
    for i, text in enumerate(rule_texts):
        prover.add(f"synth-target-{i + 1}", text)
    for t in out.targets:
        if prover.proves(t.lhs, t.rhs, dict(t.ranks), t.partition):
            out.rediscovered.append(t.rule.name)
        else:
            out.missed.append(t.rule.name)
    return out
