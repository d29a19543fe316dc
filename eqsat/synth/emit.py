"""Synthesized rules as rule-language text: guards from the shape domain, names,
`# identity` docs, and the documented file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eqsat.synth.shapes import Partition, var_shape
from eqsat.synth.terms import Term, identity_text, ops, rule_syntax, size, variables

RULESET = "synthesized"


def domain_guards(
    names: Sequence[str], ranks: Mapping[str, int], partition: Partition
) -> list[str]:
    """Guards that hold exactly on the identity's shape domain: each variable's rank
    and the dim equalities of the partition (`shape(x) == shape(y)` where all dims agree)."""
    guards = [f"rank({v}) == {ranks[v]}" for v in names]
    said = Partition()
    matrices = [v for v in names if ranks[v] > 0]
    for i, x in enumerate(matrices):
        for y in matrices[i + 1 :]:
            sx, sy = var_shape(x, ranks[x]), var_shape(y, ranks[y])
            same = len(sx) == len(sy) and all(
                partition.find(p) == partition.find(q) for p, q in zip(sx, sy, strict=True)
            )
            if same and not all(said.find(p) == said.find(q) for p, q in zip(sx, sy, strict=True)):
                guards.append(f"shape({x}) == shape({y})")
                said = said.union(zip(sx, sy, strict=True))
    symbols = [d for v in names for d in var_shape(v, ranks[v])]
    for cls in partition.classes:
        members = [d for d in symbols if d in cls]
        for d in members[1:]:
            if said.find(d) != said.find(members[0]):
                guards.append(f"{_dim(members[0])} == {_dim(d)}")
                said = said.union([(members[0], d)])
    return guards


def _dim(d: str) -> str:
    name, _, index = d.rpartition(".")
    return f"dim({name}, {index})"


@dataclass(frozen=True)
class SynthRule:
    """A candidate identity (lhs -> rhs, both ways when they share their variables)."""

    lhs: Term
    rhs: Term
    ranks: tuple[tuple[str, int], ...]  # of the rule's variables
    partition: Partition

    @property
    def bidirectional(self) -> bool:
        """`<=>` needs an op pattern on both sides (a bare variable matches no root)."""
        same = set(variables(self.lhs)) == set(variables(self.rhs))
        return same and not isinstance(self.rhs, str)

    @property
    def names(self) -> list[str]:
        return variables(self.lhs)

    @property
    def size(self) -> int:
        return max(size(self.lhs), size(self.rhs))

    def guards(self) -> list[str]:
        return domain_guards(self.names, dict(self.ranks), self.partition)

    def identity(self) -> str:
        return f"{identity_text(self.lhs)} = {identity_text(self.rhs)}"

    def text(self, name: str, guarded: bool) -> str:
        arrow = "<=>" if self.bidirectional else "=>"
        line = f"{name}: {rule_syntax(self.lhs)} {arrow} {rule_syntax(self.rhs)}"
        guards = self.guards() if guarded else []
        if guards:
            line += "\n    if " + ", ".join(guards)
        return f"# {self.identity()}\n{line}\n"


def rule_name(index: int, rule: SynthRule) -> str:
    """`syn-<n>-<ops of the rule>`: kebab-case, unique by its number."""
    used = sorted(ops(rule.lhs) | ops(rule.rhs))
    return f"syn-{index}-" + "-".join(op.replace("_", "-") for op in used)


def rule_file(header: Sequence[str], rules: Sequence[str]) -> str:
    """The file: `#` header lines, the ruleset, then each rule (with its doc line)."""
    lines = [f"# {h}" if h else "#" for h in header]
    return "\n".join(lines) + f"\nruleset {RULESET}\n\n" + "\n".join(rules)
