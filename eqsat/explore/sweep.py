"""`--sweep KEY=V1,V2,...`: the hardware points of an exploration."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from eqsat.budget import parse_size
from eqsat.flags import UsageError
from hwsim.hardware import FIELDS, SWEEPABLE

# `array=16,32` sets array_rows and array_cols together (a square array)
ALIASES = {"array": ("array_rows", "array_cols")}
SIZES = ("sram_bytes", "acc_bytes")  # accept 256KiB, 1MiB


def parse_sweep(text: str) -> tuple[str, list[int | float]]:
    """'sram_bytes=128KiB,256KiB' -> ('sram_bytes', [131072, 262144])."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not values.strip():
        raise UsageError(f"--sweep {text}: expected KEY=V1,V2,... (e.g. array=16,32)")
    if key not in SWEEPABLE and key not in ALIASES:
        raise UsageError(
            f"--sweep {text}: unknown hardware field '{key}'; use one of "
            + ", ".join((*ALIASES, *SWEEPABLE))
        )
    out: list[int | float] = []
    for raw in values.split(","):
        raw = raw.strip()
        try:
            out.append(_value(key, raw))
        except ValueError:
            what = "a size such as 256KiB" if key in SIZES else "a number"
            raise UsageError(f"--sweep {text}: '{raw}' is not {what}") from None
    if len(set(out)) != len(out):
        raise UsageError(f"--sweep {text}: a value is given twice")
    return key, out


def _value(key: str, raw: str) -> int | float:
    if key in SIZES:
        return parse_size(raw)
    field = ALIASES.get(key, (key,))[0]
    if FIELDS[field][0] == (int,):
        return int(raw)
    number = float(raw)
    return int(number) if number.is_integer() and "." not in raw else number


def expand_sweeps(
    sweeps: Sequence[tuple[str, list[int | float]]],
) -> list[tuple[str, dict[str, int | float]]]:
    """Every combination of the swept values: (label as the sweeps name it, e.g.
    "array=16,sram_bytes=131072"; hardware field changes)."""
    keys = [k for k, _ in sweeps]
    if len(set(keys)) != len(keys):
        raise UsageError("--sweep: the same field is swept twice; give its values in one --sweep")
    points = []
    for combo in itertools.product(*(values for _, values in sweeps)):
        changes: dict[str, int | float] = {}
        for key, value in zip(keys, combo, strict=True):
            for field in ALIASES.get(key, (key,)):
                changes[field] = value
        label = ",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True))
        points.append((label, changes))
    return points
