"""The legal range of numbers read from a user's files and flags.

Checked where a number is read (model and rules parsers, the model checker, the
assembly parser, flags), so a too-large value is a located error, never an
OverflowError or a huge allocation later on.

- Integers (attribute values, constants, rule literals) fit int64, as in ONNX.
- A side (a dimension's value, one entry of a shape) is at most 2^31 - 1, and a
  tensor has at most 2^48 elements: byte counts then stay below 2^53, exact in the
  float64 arithmetic the cost model uses.
- A tensor has at most 32 axes (numpy's own limit is 64).
- Floats are finite float64 values as written; inf and nan only where the syntax
  spells them out.
"""

from __future__ import annotations

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_SIDE = 2**31 - 1
MAX_ELEMENTS = 2**48
MAX_RANK = 32


def number_text(value: int | float | str) -> str:
    """A number as an error message shows it: long ones cut short (an int of more than
    4,300 digits has no str() in Python, so those are shown as a power of two)."""
    if isinstance(value, int) and value.bit_length() > 14000:
        return f"{'-' if value < 0 else ''}2^{value.bit_length() - 1} or more"
    text = str(value)
    digits = text.lstrip("-")
    if len(digits) <= 24:
        return text
    return f"{text[: len(text) - len(digits) + 12]}... ({len(digits)} digits)"


def int64_problem(value: int) -> str | None:
    """Why `value` is not a legal integer, or None."""
    if INT64_MIN <= value <= INT64_MAX:
        return None
    return f"integer {number_text(value)} does not fit in 64 bits"


def int_text_problem(text: str) -> str | None:
    """Why the integer written as `text` is not legal, or None; never converts a long
    text (Python refuses more than 4,300 digits)."""
    digits = text.strip().lstrip("+-").lstrip("0")
    if len(digits) > 19:
        sign = "-" if text.strip().startswith("-") else ""
        return f"integer {sign}{digits[:12]}... ({len(digits)} digits) does not fit in 64 bits"
    return int64_problem(int(text))


def side_problem(value: int) -> str | None:
    """Why `value` cannot be one entry of a shape (or a dimension's value), or None."""
    if value > MAX_SIDE:
        return f"dimension {number_text(value)} is larger than the limit {MAX_SIDE:,} (2^31 - 1)"
    return None


def shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why a tensor of `shape` is beyond the limits (rank, elements), or None."""
    if len(shape) > MAX_RANK:
        return f"a tensor has at most {MAX_RANK} axes, this one {len(shape)}"
    elements = 1
    for side in shape:
        elements *= side
    if elements > MAX_ELEMENTS:
        return (
            f"a tensor has at most 2^48 elements, this one {number_text(elements)} "
            f"(shape {list(shape)})"
        )
    return None
