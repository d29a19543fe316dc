"""The rules that introduce a hardware's declared instructions.

Each pattern an instruction `replaces` (rule-language text over its operand names;
default: its semantics) becomes one rule `PATTERN => NAME(operands)`, guarded by the
declared limits (one rule per allowed dtype: the rule language has no `or`), in the
ruleset `instructions`. They are compiled and checked like any rules file, and
`eqsat verify-rules --hw FILE` tests them against the reference semantics derived
from `semantics`: a declaration whose meaning differs from what it replaces fails
there. Errors point into the TOML file.
"""

from __future__ import annotations

import dataclasses

from eqsat.custom_instr.derive import instruction_error
from eqsat.rules.errors import RuleError
from eqsat.rules.library import RuleFile
from eqsat.rules.loader import check_file
from eqsat.rules.parser import parse_rules
from hwsim.custom import DeclarationError, Instruction, operand_names, parse_semantics
from hwsim.hardware import Hardware

RULESET = "instructions"


def rule_name(ins: Instruction, pattern: int, dtype: str) -> str:
    """instr-silu-mul, instr-silu-mul-2 (second pattern), ...-bf16 (other dtypes)."""
    name = "instr-" + ins.name.replace("_", "-")
    if pattern:
        name += f"-{pattern + 1}"
    if dtype != ins.dtypes[0]:
        name += f"-{dtype}"
    return name


def _guards(ins: Instruction, dtype: str) -> list[str]:
    guards = [f"dtype({a}) == {dtype}" for a in ins.operands]
    if ins.max_rank is not None:
        guards += [f"rank({a}) <= {ins.max_rank}" for a in ins.operands]
    if not ins.broadcast:
        first = ins.operands[0]
        guards += [f"shape({a}) == shape({first})" for a in ins.operands[1:]]
    return guards


def instruction_rules_text(hw: Hardware) -> tuple[str, dict[int, tuple[Instruction, int]]]:
    """The rules file text, and which (instruction, pattern) each rule line comes from."""
    lines = [f"ruleset {RULESET}", ""]
    origin: dict[int, tuple[Instruction, int]] = {}
    for ins in hw.instructions:
        for k, pattern in enumerate(ins.replaces):
            for dtype in ins.dtypes:
                lines.append(f"# {pattern} is the instruction {ins.name}: {ins.semantics_text}")
                origin[len(lines) + 1] = (ins, k)
                rhs = f"{ins.name}({', '.join(ins.operands)})"
                lines.append(
                    f"{rule_name(ins, k, dtype)}: {pattern} => {rhs} if {', '.join(_guards(ins, dtype))}"
                )
    return "\n".join(lines) + "\n", origin


def _check_operands(ins: Instruction) -> None:
    """A pattern written as a plain composition binds exactly the operands."""
    for pattern in ins.replaces:
        try:
            names = operand_names(parse_semantics(pattern))
        except DeclarationError:
            continue  # not plain (guards, attribute variables, `_`): the rule compiler checks
        if set(names) != set(ins.operands):
            raise instruction_error(
                ins,
                "replaces" if "replaces" in dict(ins.where) else "semantics",
                f"replaces pattern {pattern!r} uses the names {', '.join(names)}, but the "
                f"operands are {', '.join(ins.operands)}: a pattern binds each operand, by "
                "the name the semantics gives it",
            )


def instruction_rules(hw: Hardware) -> RuleFile | None:
    """The checked rules of hw's instructions (their ops must be in use), located at
    each instruction's `replaces` key; None if it declares none."""
    if not hw.instructions:
        return None
    for ins in hw.instructions:
        _check_operands(ins)
    text, origin = instruction_rules_text(hw)
    try:
        checked = check_file(parse_rules(text, f"<instructions of {hw.name}>"))
    except RuleError as e:
        ins, k = origin.get(e.line, (None, 0))
        if ins is None:
            raise
        pattern = ins.replaces[k]
        raise instruction_error(
            ins,
            "replaces" if "replaces" in dict(ins.where) else "semantics",
            f"replaces pattern {pattern!r} (rule `{pattern} => {ins.name}"
            f"({', '.join(ins.operands)})`): {e.message}",
        ) from None
    rules = []
    for rule in checked.rules:
        ins, _ = origin[rule.line]
        line, col = dict(ins.where).get("replaces") or dict(ins.where).get("name", (1, 1))
        rules.append(dataclasses.replace(rule, file=ins.path, line=line, col=col))
    return RuleFile(checked.path, checked.ruleset, tuple(rules))
