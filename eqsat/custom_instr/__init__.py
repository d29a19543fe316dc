"""Custom instructions declared in a hardware file, as compiler data.

A hardware file's `[[instruction]]` (hwsim/custom.py) becomes, here, a registry op
whose meaning is its declared composition (derive.py), the rules that introduce it
(rules.py, checked by verify-rules), its price (price.py: the streaming kernel with
the declared cost per tile); backend/lowering.py lowers it to one `custom.NAME`
instruction per tile. The ops exist only while their hardware is in use (scope.py).
"""

from eqsat.custom_instr.derive import InstructionError, InstructionOp, derive_op
from eqsat.custom_instr.rules import instruction_rules, instruction_rules_text
from eqsat.custom_instr.scope import (
    hardware_of_spec,
    in_use,
    instructions_in_use,
    instructions_in_use_for,
)

__all__ = [
    "InstructionError",
    "InstructionOp",
    "derive_op",
    "hardware_of_spec",
    "in_use",
    "instruction_rules",
    "instruction_rules_text",
    "instructions_in_use",
    "instructions_in_use_for",
]
