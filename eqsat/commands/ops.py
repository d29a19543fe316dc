"""`eqsat ops`: list the op registry."""

from __future__ import annotations

import argparse

from eqsat.ops import REGISTRY, OpKind


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ops",
        help="list the ops a model may use",
        description="List every op in the registry with its operands, attributes and meaning.",
    )
    p.add_argument(
        "--hw",
        default=None,
        metavar="FILE.toml",
        help="also list the ops derived from the instructions this hardware file declares",
    )
    p.set_defaults(func=run)


def format_signature(name: str) -> str:
    op = REGISTRY[name]
    parts = list(op.operands) + (["..."] if op.variadic else [])
    for spec in op.attrs:
        parts.append(spec.name if spec.required else f"{spec.name}={_default(spec.default)}")
    return f"{name}({', '.join(parts)})"


def _default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def run(args: argparse.Namespace) -> int:
    from eqsat.custom_instr import InstructionOp

    declared = sorted(n for n, op in REGISTRY.items() if isinstance(op, InstructionOp))
    for kind in OpKind:
        names = sorted(
            n
            for n, op in REGISTRY.items()
            if op.kind is kind and kind is not OpKind.LEAF and n not in declared
        )
        if not names:
            continue
        print(f"{kind.value}:")
        for name in names:
            print(f"  {format_signature(name):<44} {REGISTRY[name].doc}")
    if declared:  # in the registry while --hw FILE is in use (eqsat/cli.py)
        print(f"instructions of {args.hw}:")
        for name in declared:
            print(f"  {format_signature(name):<44} {REGISTRY[name].doc}")
    return 0
