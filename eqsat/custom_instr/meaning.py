"""A quick check, where the optimizer loads an instruction's rules, that its declared
semantics computes what it replaces: both evaluated by the registry's references on
one fixed set of small random operands. Only patterns that are plain compositions
of the operands are checked here (no guards, attribute variables or `_`); `eqsat
verify-rules --hw FILE` tests every pattern properly (hypothesis, shrinking)."""

from __future__ import annotations

import numpy as np

from eqsat.custom_instr.derive import InstructionOp, _to_call, instruction_error
from eqsat.ops import REGISTRY
from eqsat.ops.fused import _make
from hwsim.custom import DeclarationError, Instruction, applications, parse_semantics

SHAPE = (3, 7)


def _plain(pattern: str, ins: Instruction):
    """The pattern as a fused body, or None when it is not a plain composition."""
    try:
        tree = parse_semantics(pattern)
    except DeclarationError:
        return None
    for a in applications(tree):
        op = REGISTRY.get(a.op)
        if op is None or isinstance(op, InstructionOp):
            return None
    return _to_call(tree)


def check_meaning(ins: Instruction) -> None:
    """Raise an InstructionError at `replaces` if the semantics visibly differs."""
    rng = np.random.default_rng(0)
    args = [rng.uniform(-3, 3, SHAPE).astype(np.float32) for _ in ins.operands]
    declared = _make(ins.name, ins.operands, _to_call(ins.semantics), ()).ref(args, {})
    for pattern in ins.replaces:
        body = _plain(pattern, ins)
        if body is None:
            continue
        try:
            replaced = _make("replaced", ins.operands, body, ()).ref(args, {})
        except (KeyError, ValueError):  # names other than the operands: the rule check says
            continue
        with np.errstate(all="ignore"):
            same = np.allclose(declared, replaced, rtol=1e-3, atol=1e-4, equal_nan=True)
        if not same:
            diff = np.abs(np.asarray(declared, np.float64) - np.asarray(replaced, np.float64))
            at = np.unravel_index(int(np.nanargmax(diff)), diff.shape)
            values = ", ".join(
                f"{n}={float(a[at]):.4g}" for n, a in zip(ins.operands, args, strict=True)
            )
            raise instruction_error(
                ins,
                "replaces" if "replaces" in dict(ins.where) else "semantics",
                f"its semantics {ins.semantics_text} is not what it replaces, {pattern}: at "
                f"{values} they give {float(declared[at]):.6g} and {float(replaced[at]):.6g}; "
                "fix `semantics` or `replaces` (`eqsat verify-rules --hw FILE` tests it)",
            )
