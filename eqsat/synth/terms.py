"""Terms of the synthesizer: a variable is its name (a str), an application is a
tuple (op, operand, ...). Attributes are implied (shapes.FIXED_ATTRS)."""

from __future__ import annotations

from collections.abc import Mapping

from eqsat.synth.shapes import FIXED_ATTRS, Partition, Shape, infer, var_shape

Term = str | tuple

# How an identity comment writes an op (others are written as calls).
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2, "matmul": 3}


def size(t: Term) -> int:
    """Op applications (leaves are free)."""
    if isinstance(t, str):
        return 0
    return 1 + sum(size(c) for c in t[1:])


def variables(t: Term) -> list[str]:
    """Variables in order of first appearance."""
    out: list[str] = []

    def walk(u: Term) -> None:
        if isinstance(u, str):
            if u not in out:
                out.append(u)
        else:
            for c in u[1:]:
                walk(c)

    walk(t)
    return out


def ops(t: Term) -> set[str]:
    if isinstance(t, str):
        return set()
    return {t[0]}.union(*(ops(c) for c in t[1:]))


def rename(t: Term, names: Mapping[str, str]) -> Term:
    if isinstance(t, str):
        return names.get(t, t)
    return (t[0], *(rename(c, names) for c in t[1:]))


def typing(
    t: Term, ranks: Mapping[str, int], partition: Partition | None = None
) -> tuple[Shape, Partition] | None:
    """Shape and most general partition of `t` (variables of the given ranks), or None."""
    if partition is None:
        partition = Partition()
    if isinstance(t, str):
        return partition.canon(var_shape(t, ranks[t])), partition
    shapes = []
    for c in t[1:]:
        typed = typing(c, ranks, partition)
        if typed is None:
            return None
        shape, partition = typed
        shapes.append(shape)
    result = infer(t[0], tuple(partition.canon(s) for s in shapes), partition)
    if result is None:
        return None
    shape, partition = result
    return partition.canon(shape), partition


def rule_syntax(t: Term) -> str:
    """The term in the rule language (rules/README.md)."""
    if isinstance(t, str):
        return t
    args = [rule_syntax(c) for c in t[1:]]
    for key, value in FIXED_ATTRS.get(t[0], {}).items():
        text = "[" + ", ".join(str(v) for v in value) + "]" if isinstance(value, tuple) else value
        args.append(f"{key}={text}")
    return f"{t[0]}({', '.join(args)})"


def identity_text(t: Term, parent: int = 0) -> str:
    """Mathematical notation for the `# identity` comment: a + b, a @ b, a^T, -a."""
    if isinstance(t, str):
        return t
    op = t[0]
    if op in _INFIX:
        p = _PRECEDENCE[op]
        left = identity_text(t[1], p)
        right = identity_text(t[2], p + 1)
        text = f"{left} {_INFIX[op]} {right}"
        return f"({text})" if p < parent else text
    if op == "neg":
        text = f"-{identity_text(t[1], 9)}"
        return f"({text})" if parent >= 9 else text
    if op == "transpose":
        return f"{identity_text(t[1], 9)}^T"
    return f"{op}({', '.join(identity_text(c) for c in t[1:])})"
