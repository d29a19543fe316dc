"""Hardware descriptions: presets and validated TOML files.

A `Hardware` is a plain frozen value. Everything that depends on the machine (the
simulator's timing, the analytic cost model, the backend's tiling) reads it, so one
file changes the machine for the whole compiler.

Units: sizes in bytes, time in cycles of `clock_ghz`. The matrix unit is a weight-
stationary systolic array of `array_rows x array_cols` MACs. `macs_per_cycle[d]` is
its peak rate for input dtype d; floating point may run at a fraction of the int8 rate
(multi-pass), so `rows*cols` must be a multiple of every rate and the pass count
`rows*cols // macs_per_cycle[d]` is how many cycles one row of A occupies the array.

A TOML file lists every field at top level plus a `[macs_per_cycle]` table, or says
`base = "edge"` (a preset name or a path relative to the file) and overrides some.

`[[instruction]]` tables declare custom vector instructions as data (hwsim/custom.py:
name, semantics, operand limits, cost, the patterns they replace); a file inherits its
base's and adds its own, and a name may be declared once.

`rounding` is how the requantizer (i32 -> i8 by a fixed-point multiplier and shift)
breaks ties: "even" (to the even neighbour, as Gemmini) or "away" (from zero, as
gemmlowp/TFLite). It may be left out (default "even"). Presets: edge "even",
datacenter "away". `weight_dtypes` (optional, default ["f32"]) lists the precisions
weights may be stored in: "i4" and "i8" are dequantized on the way into SRAM
(hwsim/wq.py, `--quantize w4a16|w8a16`), "bf16" needs bf16 MACs. `dram_capacity_bytes` (optional) is the device memory a model's
weights and live activations must fit (`eqsat roofline` checks it).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .custom import DeclarationError, Instruction, parse_instruction

PRESET_DIR = Path(__file__).parent / "presets"
PRESETS = ("edge", "datacenter")
MATRIX_DTYPES = ("i8", "bf16", "f32")
ROUNDINGS = ("even", "away")
# Precisions weights may be stored in: i4/i8 go through the load-path dequantizer
# (hwsim/wq.py), bf16/f32 are matrix dtypes (`--quantize w4a16|w8a16|bf16` checks them).
WEIGHT_DTYPES = ("i4", "i8", "fp8", "bf16", "f32")
# Fields a file may leave out, with their default (None: not known, not checked).
OPTIONAL: dict[str, Any] = {
    "rounding": "even",
    "dram_capacity_bytes": None,
    "weight_dtypes": ("f32",),
    # Host control of `if`/`loop` regions (hwsim/host.py): reading a condition or trip
    # count back from DRAM, and starting one program.
    "host_readback_cycles": 1000,
    "dispatch_cycles": 2000,
}


class HardwareError(Exception):
    """A hardware description that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Hardware:
    """One accelerator: matrix unit, vector unit, memories, DRAM and fixed overheads."""

    name: str
    clock_ghz: float
    array_rows: int
    array_cols: int
    macs_per_cycle: Mapping[str, int]
    vector_lanes: int
    sram_bytes: int
    acc_bytes: int
    dram_bytes_per_cycle: float
    dram_latency_cycles: int
    dma_engines: int
    launch_cycles: int
    issue_cycles: int
    rounding: str = "even"  # requantization ties: even | away
    dram_capacity_bytes: int | None = None  # what a model's weights and activations must fit
    weight_dtypes: tuple[str, ...] = ("f32",)  # precisions weights may be stored in
    host_readback_cycles: int = 1000  # host reads a region's condition back from DRAM
    dispatch_cycles: int = 2000  # host starts one program (a stage or a region body)
    instructions: tuple[Instruction, ...] = ()  # custom instructions ([[instruction]])

    def __post_init__(self) -> None:
        object.__setattr__(self, "macs_per_cycle", MappingProxyType(dict(self.macs_per_cycle)))

    def __hash__(self) -> int:
        macs = tuple(sorted(self.macs_per_cycle.items()))
        return hash(
            tuple(
                macs if f.name == "macs_per_cycle" else getattr(self, f.name)
                for f in dataclasses.fields(self)
            )
        )

    def instruction(self, name: str) -> Instruction | None:
        """The declared custom instruction `name`, or None."""
        return next((i for i in self.instructions if i.name == name), None)

    def passes(self, dtype: str) -> int:
        """Cycles one row of A spends in the array for `dtype` (1 at the native rate)."""
        return self.array_rows * self.array_cols // self.macs_per_cycle[dtype]


# name -> (python types accepted, description used in messages)
_INT = ((int,), "an integer")
_NUM = ((int, float), "a number")
FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "clock_ghz": _NUM,
    "array_rows": _INT,
    "array_cols": _INT,
    "macs_per_cycle": ((dict,), "a table"),
    "vector_lanes": _INT,
    "sram_bytes": _INT,
    "acc_bytes": _INT,
    "dram_bytes_per_cycle": _NUM,
    "dram_latency_cycles": _INT,
    "dma_engines": _INT,
    "launch_cycles": _INT,
    "issue_cycles": _INT,
    "host_readback_cycles": _INT,
    "dispatch_cycles": _INT,
    "rounding": ((str,), "a string"),
    "dram_capacity_bytes": _INT,
    "weight_dtypes": ((list,), "a list of dtype names"),
}
_SYNTAX_POS = re.compile(r"^(.*?)\s*\(at line (\d+), column (\d+)\)$")


def key_position(text: str, key: str, table: str | None = None) -> tuple[int, int] | None:
    """1-based (line, col) of `key = ...` in TOML text, inside `[table]` if given."""
    start = 0
    if table is not None:
        dotted = re.search(rf"^[ \t]*({re.escape(table)}\.{re.escape(key)})[ \t]*=", text, re.M)
        if dotted:
            return _line_col(text, dotted.start(1))
        header = re.search(rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\]", text, re.M)
        if header is None:
            return None
        start = header.end()
    pat = re.compile(rf"^([ \t]*)({re.escape(key)}|\"{re.escape(key)}\")[ \t]*=", re.M)
    for m in pat.finditer(text, start):
        if table is None and _section_at(text, m.start()) is not None:
            continue
        if table is not None and _section_at(text, m.start()) != table:
            break
        return _line_col(text, m.start(2))
    header = re.search(rf"^[ \t]*\[[ \t]*({re.escape(key)})[ \t]*\]", text, re.M)
    return _line_col(text, header.start(1)) if header and table is None else None


def _section_at(text: str, pos: int) -> str | None:
    headers = list(re.finditer(r"^[ \t]*\[[ \t]*([^\]\s]+)[ \t]*\]", text[:pos], re.M))
    return headers[-1].group(1) if headers else None


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


class _Source:
    """A TOML file being validated: turns problems into located HardwareErrors."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def error(self, msg: str, key: str | None = None, table: str | None = None) -> HardwareError:
        pos = key_position(self.text, key, table) if key else None
        where = f"{self.path}:{pos[0]}:{pos[1]}" if pos else f"{self.path}"
        return HardwareError(f"{where}: error: {msg}")


def _check_value(src: _Source, key: str, value: Any, table: str | None = None) -> None:
    types, desc = FIELDS[key] if table is None else _INT
    label = f"{table}.{key}" if table else key
    if isinstance(value, bool) or not isinstance(value, types):
        raise src.error(
            f"'{label}' must be {desc}, got {type(value).__name__} {value!r}; fix its value",
            key,
            table,
        )
    if key == "rounding" and table is None and value not in ROUNDINGS:
        raise src.error(
            f"'rounding' must be one of {', '.join(repr(r) for r in ROUNDINGS)}, got {value!r}",
            key,
        )
    if key == "weight_dtypes" and table is None:
        bad = [v for v in value if v not in WEIGHT_DTYPES]
        if bad:
            raise src.error(
                f"unknown weight dtype {bad[0]!r} in 'weight_dtypes'; use some of: "
                f"{', '.join(WEIGHT_DTYPES)}",
                key,
            )
    if isinstance(value, int | float) and value <= 0:
        raise src.error(f"'{label}' must be positive, got {value}; use a value > 0", key, table)


def _read_toml(path: Path) -> tuple[_Source, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise HardwareError(f"{path}: error: cannot read hardware file ({e.strerror})") from e
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise HardwareError(
            f"{path}:{line}: error: the file is not UTF-8 text (byte {e.start}); "
            "a hardware file is TOML text"
        ) from None
    src = _Source(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _SYNTAX_POS.match(str(e))
        where = f"{path}:{m.group(2)}:{m.group(3)}" if m else str(path)
        msg = m.group(1) if m else str(e)
        raise HardwareError(f"{where}: error: TOML syntax: {msg}; fix the file") from e
    return src, data


def _load_fields(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """All fields of a file, with `base` resolved and every value checked."""
    if path.resolve() in seen:
        raise HardwareError(f"{path}: error: 'base' chain loops back to this file")
    src, data = _read_toml(path)
    fields: dict[str, Any] = {}
    declared = data.pop("instruction", [])
    if "base" in data:
        base = data.pop("base")
        if not isinstance(base, str):
            raise src.error("'base' must be a preset name or a path string", "base")
        if base in PRESETS:
            fields = _load_fields(PRESET_DIR / f"{base}.toml", (*seen, path.resolve()))
        else:
            base_path = path.parent / base
            if not base_path.is_file():
                raise src.error(
                    f"'base' = {base!r} is neither a preset ({', '.join(PRESETS)}) "
                    "nor an existing file",
                    "base",
                )
            fields = _load_fields(base_path, (*seen, path.resolve()))
    for key, value in data.items():
        if key not in FIELDS:
            raise src.error(
                f"unknown key '{key}'; remove it or use one of: {', '.join(FIELDS)}", key
            )
        _check_value(src, key, value)
        if key == "macs_per_cycle":
            merged = dict(fields.get("macs_per_cycle", {}))
            for dt, rate in value.items():
                if dt not in MATRIX_DTYPES:
                    raise src.error(
                        f"unknown dtype '{dt}' in [macs_per_cycle]; use one of: "
                        f"{', '.join(MATRIX_DTYPES)}",
                        dt,
                        "macs_per_cycle",
                    )
                _check_value(src, dt, rate, "macs_per_cycle")
                merged[dt] = rate
            value = merged
        if key == "weight_dtypes":
            value = tuple(value)
        fields[key] = value
    fields["instructions"] = _instructions(src, declared, fields.get("instructions", ()))
    fields["_source"] = src
    return fields


INSTRUCTION_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*instruction[ \t]*\]\]", re.M)


def instruction_key_position(text: str, index: int, key: str) -> tuple[int, int] | None:
    """1-based (line, col) of `key = ...` in the index-th `[[instruction]]` table (the
    header itself when the key is not written there)."""
    headers = list(INSTRUCTION_HEADER.finditer(text))
    if index >= len(headers):
        return None
    start = headers[index].start()
    nxt = re.compile(r"^[ \t]*\[", re.M).search(text, headers[index].end())
    end = nxt.start() if nxt else len(text)
    m = re.compile(rf"^[ \t]*({re.escape(key)})[ \t]*=[ \t]*", re.M).search(text, start, end)
    return _line_col(text, m.start(1)) if m else _line_col(text, start + text[start:].index("["))


def _value_col(text: str, index: int, key: str) -> int | None:
    """Column of the first character inside the key's (single-line) string value."""
    pos = instruction_key_position(text, index, key)
    if pos is None:
        return None
    line = text.splitlines()[pos[0] - 1]
    m = re.match(rf"[ \t]*{re.escape(key)}[ \t]*=[ \t]*(\[?[ \t]*)?[\"']", line)
    return m.end() + 1 if m else None


def _instructions(
    src: _Source, declared: Any, inherited: tuple[Instruction, ...]
) -> tuple[Instruction, ...]:
    """The base's instructions plus this file's, each checked and located."""
    if not isinstance(declared, list):
        raise src.error("'instruction' must be an array of tables: write [[instruction]]")
    out = list(inherited)
    for index, data in enumerate(declared):
        try:
            ins = parse_instruction(data)
        except DeclarationError as e:
            pos = instruction_key_position(src.text, index, e.key)
            if pos is not None and e.col is not None:
                inner = _value_col(src.text, index, e.key)
                pos = (pos[0], inner + e.col - 1) if inner is not None else pos
            where = f"{src.path}:{pos[0]}:{pos[1]}" if pos else str(src.path)
            label = data.get("name") if isinstance(data, dict) else None
            what = f"instruction '{label}'" if isinstance(label, str) else "[[instruction]]"
            raise HardwareError(f"{where}: error: {what}: {e}") from None
        where = tuple(
            (key, p)
            for key in ("name", "operands", "semantics", "dtypes", "cost", "replaces")
            if (p := instruction_key_position(src.text, index, key)) is not None
        )
        ins = dataclasses.replace(ins, path=str(src.path), where=where)
        if any(other.name == ins.name for other in out):
            line, col = dict(where)["name"]
            raise HardwareError(
                f"{src.path}:{line}:{col}: error: instruction '{ins.name}' is declared twice "
                "(here and in this file or its base); give each instruction its own name"
            )
        out.append(ins)
    return tuple(out)


def _build(fields: dict[str, Any]) -> Hardware:
    src: _Source = fields.pop("_source")
    for key, default in OPTIONAL.items():
        fields.setdefault(key, default)
    fields.setdefault("instructions", ())
    for key in FIELDS:
        if key not in fields:
            raise src.error(
                f"missing key '{key}'; add `{key} = ...` or inherit it with `base = \"edge\"`"
            )
    macs = fields["macs_per_cycle"]
    cells = fields["array_rows"] * fields["array_cols"]
    for dt in MATRIX_DTYPES:
        if dt not in macs:
            raise src.error(f"missing key 'macs_per_cycle.{dt}'; add `{dt} = ...`")
        if macs[dt] > cells or cells % macs[dt]:
            raise src.error(
                f"'macs_per_cycle.{dt}' = {macs[dt]} must divide array_rows*array_cols = "
                f"{cells} (the array runs dtype {dt} in a whole number of passes)",
                dt,
                "macs_per_cycle",
            )
    return Hardware(**fields)


SWEEPABLE = (
    "clock_ghz",
    "array_rows",
    "array_cols",
    "vector_lanes",
    "sram_bytes",
    "acc_bytes",
    "dram_bytes_per_cycle",
    "dram_latency_cycles",
    "dma_engines",
    "launch_cycles",
    "issue_cycles",
)


def derive(hw: Hardware, changes: Mapping[str, int | float], where: str) -> Hardware:
    """`hw` with some numeric fields changed (design-space exploration), checked as a
    file's fields are. A new array size keeps each dtype's passes through the array:
    macs_per_cycle scales with array_rows * array_cols. `where` names the source of the
    changes in messages."""
    fields = {f.name: getattr(hw, f.name) for f in dataclasses.fields(hw)}
    for key, value in changes.items():
        if key not in SWEEPABLE:
            raise HardwareError(
                f"{where}: error: '{key}' is not a field that can be varied; use one of "
                + ", ".join(SWEEPABLE)
            )
        types, desc = FIELDS[key]
        if isinstance(value, bool) or not isinstance(value, types) or not value > 0:
            raise HardwareError(f"{where}: error: '{key}' must be {desc} > 0, got {value!r}")
        fields[key] = value
    cells = fields["array_rows"] * fields["array_cols"]
    if cells != hw.array_rows * hw.array_cols:
        fields["macs_per_cycle"] = {dt: cells // hw.passes(dt) for dt in hw.macs_per_cycle}
    for dt, macs in fields["macs_per_cycle"].items():
        if macs < 1 or cells % macs:
            raise HardwareError(
                f"{where}: error: an array of {fields['array_rows']}x{fields['array_cols']} "
                f"cannot run {dt} at {hw.passes(dt)} passes; choose sizes divisible by "
                f"{hw.passes(dt)}"
            )
    changed = ",".join(f"{k}={v}" for k, v in changes.items())
    fields["name"] = f"{hw.name}[{changed}]" if changed else hw.name
    return Hardware(**fields)


def load_hardware(spec: str | Path) -> Hardware:
    """A preset by name (`edge`, `datacenter`) or a TOML file by path."""
    text = str(spec)
    if text in PRESETS:
        return _build(_load_fields(PRESET_DIR / f"{text}.toml"))
    path = Path(text)
    if not path.is_file():
        raise HardwareError(
            f"{text}: error: unknown hardware; give a preset ({', '.join(PRESETS)}) "
            "or the path of a .toml file"
        )
    return _build(_load_fields(path))
