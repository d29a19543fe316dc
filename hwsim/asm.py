"""Assembly text for hwsim programs: a printer and a parser that round-trip.

One instruction a line, `#` starts a comment, a header declares the DRAM buffers:

    .input   x  f32 [64, 64]
    .output  y  f32 [64, 64]
    .scratch t  bf16 [4096]

    load        sram@0:16x16:f32 <- x[0:16x16/64]  signal=a0
    gather      sram@0:4x64:f32 <- emb[0:1000x64/64], sram@1024:4x1:i32
    loaddq      sram@0:128x16:f32 <- w[0:64x16/64], sram@8192:1x16:f32  bits=4  group=128
    matmul      acc@0:16x16:f32 <- sram@0:16x16:f32, sram@1024:16x16:f32  mode=accumulate  wait=a0
    binary.mul  sram@0:16x16:f32 <- sram@0:16x16:f32, 0.125
    fma         sram@0:8x16:f32 <- sram@512:8x16:f32, sram@0:8x1:f32, sram@0:8x16:f32  queue=vector
    select      sram@0:16x16:f32 <- sram@2048:16x16:i8, sram@0:16x16:f32, -inf
    custom.silu_mul sram@0:16x16:f32 <- sram@0:16x16:f32, sram@1024:1x16:f32
    kernel      softmax

`fma` is dst = a * b + c rounded once (b and c each a tile or a number; a tile of one
row or one column is broadcast over dst by its shape).
`custom.NAME` runs an instruction the hardware file declares (hwsim/custom.py).

Operands: a tile is `SPACE@ADDR:ROWSxCOLS[/STRIDE]:DTYPE` (byte address, stride in
elements); a DRAM reference is `NAME[OFFSET:ROWSxCOLS/STRIDE]` (elements); an
immediate is a number. The destination comes first, then `<-` and the sources, then
`key=value` options (`wait=`/`signal=` take comma-separated token names; `queue=vector`
puts a binary, fma or move on the vector queue, beside the compute queue: hwsim/isa.py).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from .asm_format import format_dram, format_instr, format_program, format_tile
from .dtypes import DTYPES, ITEMSIZE
from .isa import (
    ROLES,
    SPACES,
    Binary,
    Buffer,
    Custom,
    DramRef,
    Fma,
    Gather,
    Instr,
    Kernel,
    Load,
    LoadDq,
    Matmul,
    Move,
    Program,
    Reduce,
    Requantize,
    Select,
    Store,
    Tile,
    Transpose,
    Unary,
)
from .verify import program_problems

__all__ = [
    "AsmError",
    "format_dram",
    "format_instr",
    "format_program",
    "format_tile",
    "parse",
    "read_text",
]


class AsmError(Exception):
    """Malformed assembly; the message is `FILE:LINE:COL: error: MESSAGE`."""


# The legal range of numbers in assembly, checked as they are read (before anything is
# allocated): integers (addresses, sizes, strides, option values) fit int64; the DRAM
# buffers of one program hold at most MAX_DRAM_BYTES together, since the simulator
# keeps each in host memory (with its race-tracking state, several times the bytes).
# HWSIM_MAX_DRAM_BYTES overrides the default of 4 GiB.
MAX_INT = 2**63 - 1
MAX_RANK = 32
DEFAULT_MAX_DRAM_BYTES = 4 * 2**30


def max_dram_bytes() -> int:
    value = os.environ.get("HWSIM_MAX_DRAM_BYTES", "")
    return int(value) if value.isdigit() else DEFAULT_MAX_DRAM_BYTES


_TOKEN = re.compile(
    r"(?P<tile>(?P<space>[a-z]+)@(?P<addr>\d+):(?P<rows>\d+)x(?P<cols>\d+)"
    r"(?:/(?P<stride>\d+))?:(?P<dtype>\w+))"
    r"|(?P<dram>(?P<buf>[A-Za-z_][\w.]*)\[(?P<off>\d+):(?P<drows>\d+)x(?P<dcols>\d+)"
    r"/(?P<dstride>\d+)\])"
    r"|(?P<kv>(?P<key>[a-z_]+)=(?P<val>\S*))"
    r"|(?P<num>[-+]?(?:inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.]))"
    r"|(?P<arrow><-)|(?P<comma>,)|(?P<ws>\s+)|(?P<bad>\S+)"
)
_HEADER = re.compile(r"\.(\w+)\s+([A-Za-z_][\w.]*)\s+(\w+)\s*\[([\d,\s]*)\]\s*$")
_OPCODE = re.compile(r"\s*([a-z_]+)(?:\.([a-z_]+))?")
_OPTIONS = {
    "load": (),
    "gather": (),
    "loaddq": ("bits", "group", "phase", "fmt"),
    "store": (),
    "matmul": ("mode",),
    "move": ("act", "queue"),
    "unary": ("queue",),
    "binary": ("bcast", "queue"),
    "fma": ("queue",),
    "select": (),
    "reduce": ("queue",),
    "transpose": ("queue",),
    "requantize": ("mult", "shift", "zp", "round"),
    "kernel": (),
    "custom": (),
}
_INT_KEYS = ("mult", "shift", "zp", "bits", "group", "phase")


@dataclass
class _Line:
    """One instruction line being parsed; knows how to report an error at a column."""

    file: str
    lineno: int
    text: str

    def error(self, col: int, msg: str) -> AsmError:
        return AsmError(f"{self.file}:{self.lineno}:{col}: error: {msg}")


def _int(m: re.Match[str], group: str, at: _Line) -> int:
    """The integer of a match group; one beyond int64 is an error at its column."""
    text = m[group]
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19 or int(text) > MAX_INT or int(text) < -MAX_INT - 1:
        shown = text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"
        raise at.error(m.start(group) + 1, f"integer {shown} does not fit in 64 bits")
    return int(text)


def _tile(m: re.Match[str], at: _Line, col: int) -> Tile:
    if m["space"] not in SPACES:
        raise at.error(col, f"unknown memory '{m['space']}'; use sram or acc")
    if m["dtype"] not in DTYPES:
        raise at.error(col, f"unknown dtype '{m['dtype']}'; use one of {', '.join(DTYPES)}")
    stride = None if m["stride"] is None else _int(m, "stride", at)
    addr, rows, cols = (_int(m, g, at) for g in ("addr", "rows", "cols"))
    return Tile(m["space"], addr, rows, cols, m["dtype"], stride)


def _dram(m: re.Match[str], at: _Line) -> DramRef:
    off, rows, cols, stride = (_int(m, g, at) for g in ("off", "drows", "dcols", "dstride"))
    return DramRef(m["buf"], off, rows, cols, stride)


def _value(m: re.Match[str], at: _Line, col: int) -> Any:
    if m.lastgroup == "tile":
        return _tile(m, at, col)
    if m.lastgroup == "dram":
        return _dram(m, at)
    value = float(m.group())
    if math.isinf(value) and "inf" not in m.group():
        raise at.error(col, f"number {m.group()[:24]} is out of range (write inf or -inf)")
    return value


def _scan(text: str, at: _Line, start: int) -> tuple[list, list, dict[str, tuple[str, int]]]:
    """Destinations, sources (as (value, col)) and options of an instruction's operands."""
    dsts: list[tuple[Any, int]] = []
    srcs: list[tuple[Any, int]] = []
    opts: dict[str, tuple[str, int]] = {}
    side, expect_operand = dsts, True
    for m in _TOKEN.finditer(text, start):
        col, kind = m.start() + 1, m.lastgroup
        if kind == "ws":
            continue
        if kind == "bad" or (kind == "kv" and m["key"] in opts):
            raise at.error(col, f"unexpected '{m.group()}'")
        if kind == "kv":
            opts[m["key"]] = (m["val"], col + len(m["key"]) + 1)
        elif opts:
            raise at.error(col, "operands must come before key=value options")
        elif kind == "arrow":
            if side is srcs or not dsts:
                raise at.error(col, "expected 'DST <- SRC, ...'")
            side, expect_operand = srcs, True
        elif kind == "comma":
            if expect_operand:
                raise at.error(col, "expected an operand before ','")
            expect_operand = True
        else:
            if not expect_operand:
                raise at.error(col, "expected ',' between operands")
            side.append((_value(m, at, col), col))
            expect_operand = False
    if side is not srcs or expect_operand:
        raise at.error(len(text.rstrip()) + 1, "expected 'DST <- SRC, ...'")
    return dsts, srcs, opts


def _want(at: _Line, ops: list[tuple[Any, int]], kinds: str, what: str, col: int) -> list[Any]:
    """Check operand kinds against a pattern like 'tt' / 'tn' (t tile, d dram, n number)."""
    names = {"t": Tile, "d": DramRef, "n": float}
    if len(ops) != len(kinds):
        where = ops[0][1] if ops else col
        raise at.error(where, f"expected {len(kinds)} {what} operand(s), got {len(ops)}")
    for (value, c), k in zip(ops, kinds, strict=True):
        if not isinstance(value, names[k]):
            kind = {"t": "a tile", "d": "a DRAM reference", "n": "a number"}[k]
            raise at.error(c, f"expected {kind} here")
    return [v for v, _ in ops]


def _tokens(value: str, at: _Line, col: int) -> tuple[str, ...]:
    toks = tuple(value.split(","))
    if not all(toks):
        raise at.error(col, "empty token name")
    return toks


def _instr(text: str, at: _Line) -> Instr:
    m = _OPCODE.match(text)
    if m is None:
        col = len(text) - len(text.lstrip()) + 1
        raise at.error(col, f"expected an instruction, got '{text.strip()[:24]}'")
    op, sub = m[1], m[2]
    if op not in _OPTIONS:
        raise at.error(m.start(1) + 1, f"unknown instruction '{op}'")  # type: ignore[union-attr]
    has_sub = op in ("unary", "binary", "reduce", "custom")
    if has_sub != (sub is not None):
        form = f"'{op}.OP'" if has_sub else f"'{op}' without '.OP'"
        raise at.error(m.start(1) + 1, f"write {form}")  # type: ignore[union-attr]
    if op == "kernel":
        km = re.match(r"\s*kernel\s+([^\s=]+)", text)
        if km is None:
            raise at.error(m.end() + 1, "expected 'kernel NAME'")  # type: ignore[union-attr]
        found = list(_TOKEN.finditer(text, km.end()))
        opts = {t["key"]: (t["val"], t.start("val") + 1) for t in found if t.lastgroup == "kv"}
        rest = [t for t in found if t.lastgroup not in ("kv", "ws")]
        if rest:
            raise at.error(rest[0].start() + 1, f"unexpected '{rest[0].group()}'")
        dsts = srcs = []
    else:
        dsts, srcs, opts = _scan(text, at, m.end())  # type: ignore[union-attr]
    kw: dict[str, Any] = {}
    for key, (val, col) in opts.items():
        if key in ("wait", "signal"):
            kw[key] = _tokens(val, at, col)
        elif key not in _OPTIONS[op]:
            raise at.error(col - len(key) - 1, f"'{op}' takes no option '{key}'")
        elif key == "queue":
            if val not in ("compute", "vector"):
                raise at.error(col, f"queue must be compute or vector, got '{val}'")
            kw["vector_queue"] = val == "vector"
        elif key in _INT_KEYS:
            if not re.fullmatch(r"[-+]?\d+", val):
                raise at.error(col, f"'{key}' needs an integer")
            kw[key] = _option_int(val, at, col)
        else:
            kw[key] = val
    return _build(op, sub, dsts, srcs, kw, at, m.end() + 1)  # type: ignore[union-attr]


def _build(op: str, sub: str, dsts: list, srcs: list, kw: dict, at: _Line, col: int) -> Instr:
    deps = {k: kw.pop(k) for k in ("wait", "signal") if k in kw}
    if op == "kernel":
        return Kernel(name=at.text.split()[1], **deps)
    if op == "load":
        (dst,), (src,) = (
            _want(at, dsts, "t", "destination", col),
            _want(at, srcs, "d", "source", col),
        )
        return Load(dst=dst, src=src, **deps)
    if op == "store":
        (dst,), (src,) = (
            _want(at, dsts, "d", "destination", col),
            _want(at, srcs, "t", "source", col),
        )
        return Store(dst=dst, src=src, **deps)
    (dst,) = _want(at, dsts, "t", "destination", col)
    if op == "gather":
        src, index = _want(at, srcs, "dt", "source", col)
        return Gather(dst=dst, src=src, index=index, **deps)
    if op == "loaddq":
        src, scales = _want(at, srcs, "dt", "source", col)
        return LoadDq(dst=dst, src=src, scales=scales, **kw, **deps)
    if op == "matmul":
        a, b = _want(at, srcs, "tt", "source", col)
        return Matmul(acc=dst, a=a, b=b, **kw, **deps)
    if op == "unary":
        imm = len(srcs) == 2
        src, *rest = _want(at, srcs, "tn" if imm else "t", "source", col)
        return Unary(op=sub, dst=dst, src=src, imm=rest[0] if imm else None, **kw, **deps)
    if op == "binary":
        imm = len(srcs) == 2 and isinstance(srcs[1][0], float)
        a, b = _want(at, srcs, "tn" if imm else "tt", "source", col)
        bb, ii = (None, b) if imm else (b, None)
        return Binary(op=sub, dst=dst, a=a, b=bb, imm=ii, **kw, **deps)
    if op == "custom":
        tiles = _want(at, srcs, "t" * max(1, len(srcs)), "source", col)
        return Custom(name=sub, dst=dst, srcs=tuple(tiles), **deps)
    if op == "select":
        imms = ["n" if isinstance(v, float) else "t" for v, _ in srcs[1:]]
        kinds = "t" + "".join(imms) if len(srcs) == 3 else "ttt"
        cond, a, b = _want(at, srcs, kinds, "source", col)
        tile_or_imm = [(None, v) if isinstance(v, float) else (v, None) for v in (a, b)]
        (ta, ia), (tb, ib) = tile_or_imm
        return Select(dst=dst, cond=cond, a=ta, b=tb, imm_a=ia, imm_b=ib, **deps)
    if op == "fma":
        kinds = "t" + "".join("n" if isinstance(v, float) else "t" for v, _ in srcs[1:])
        kinds = kinds if len(srcs) == 3 else "ttt"
        a, b, c = _want(at, srcs, kinds, "source", col)
        (tb, ib), (tc, ic) = [(None, v) if isinstance(v, float) else (v, None) for v in (b, c)]
        return Fma(dst=dst, a=a, b=tb, c=tc, imm_b=ib, imm_c=ic, **kw, **deps)
    (src,) = _want(at, srcs, "t", "source", col)
    if op == "reduce":
        return Reduce(op=sub, dst=dst, src=src, **kw, **deps)
    if op == "transpose":
        return Transpose(dst=dst, src=src, **kw, **deps)
    if op == "move":
        return Move(dst=dst, src=src, **kw, **deps)
    names = {"mult": "multiplier", "shift": "shift", "zp": "zero_point", "round": "rounding"}
    for key in ("mult", "shift"):
        if key not in kw:
            raise at.error(col, f"requantize needs {key}=")
    return Requantize(dst=dst, src=src, **{names[k]: v for k, v in kw.items()}, **deps)


def _option_int(text: str, at: _Line, col: int) -> int:
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19 or not -MAX_INT - 1 <= int(text) <= MAX_INT:
        raise at.error(col, f"integer {text[:24]} does not fit in 64 bits")
    return int(text)


def _header(text: str, at: _Line) -> Buffer:
    m = _HEADER.match(text)
    if m is None:
        raise at.error(1, "expected '.ROLE NAME DTYPE [D0, D1, ...]'")
    role, name, dtype, dims = m.groups()
    if role not in ROLES:
        raise at.error(2, f"unknown role '.{role}'; use .input, .output or .scratch")
    if dtype not in DTYPES:
        raise at.error(m.start(3) + 1, f"unknown dtype '{dtype}'")
    texts = dims.replace(",", " ").split()
    if len(texts) > MAX_RANK:
        raise at.error(m.start(4) + 1, f"a buffer has at most {MAX_RANK} dims, got {len(texts)}")
    if any(len(d.lstrip("0")) > 19 for d in texts):
        raise at.error(m.start(4) + 1, "a dim does not fit in 64 bits")
    shape = tuple(int(d) for d in texts)
    if not shape or min(shape) < 1:
        raise at.error(m.start(4) + 1, "a buffer needs one or more positive dims")
    return Buffer(name, dtype, shape, role)


def _check_dram(buffers: list[Buffer], at: _Line, col: int) -> None:
    """The buffers declared so far fit MAX_DRAM_BYTES (checked before any allocation)."""
    limit = max_dram_bytes()
    total = sum(math.prod(b.shape) * ITEMSIZE[b.dtype] for b in buffers)
    if total > limit:
        last = buffers[-1]
        nbytes = math.prod(last.shape) * ITEMSIZE[last.dtype]
        raise at.error(
            col,
            f"buffer '{last.name}' ({_bytes(nbytes)}) does not fit: the program's DRAM "
            f"buffers would take {_bytes(total)}, over the simulator's limit of "
            f"{_bytes(limit)} (set HWSIM_MAX_DRAM_BYTES to raise it)",
        )


def _bytes(n: int) -> str:
    """n bytes in words; integer arithmetic above GiB (a sum of declared sizes may be
    far beyond float range)."""
    if n < 1024:
        return f"{n} B"
    for unit, shift in (("KiB", 10), ("MiB", 20), ("GiB", 30)):
        if n < 1 << (shift + 10):
            return f"{n / (1 << shift):.1f} {unit}"
    tib = n >> 40
    return f"{tib:,} TiB" if tib.bit_length() < 100 else f"2^{n.bit_length() - 1} B or more"


def read_text(path: str | os.PathLike[str]) -> str:
    """An assembly file's text; one that is not UTF-8 (a binary file) is an AsmError
    at the line and column of its first bad byte. OSError passes through."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        line_start = raw.rfind(b"\n", 0, err.start) + 1
        col = len(raw[line_start : err.start].decode("utf-8", "replace")) + 1
        raise AsmError(
            f"{os.fspath(path)}:{line}:{col}: error: the file is not UTF-8 text "
            f"(byte 0x{raw[err.start]:02x}); is it assembly?"
        ) from None


def parse(text: str, filename: str = "<asm>", verify: bool = True) -> Program:
    """Parse assembly text; with `verify`, also check shapes, dtypes, bounds and tokens."""
    buffers: list[Buffer] = []
    instrs: list[Instr] = []
    lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        at = _Line(filename, lineno, line)
        if line.lstrip().startswith("."):
            if instrs:
                raise at.error(1, "buffer declarations must come before instructions")
            buffers.append(_header(line.strip(), at))
            if any(b.name == buffers[-1].name for b in buffers[:-1]):
                raise at.error(1, f"buffer '{buffers[-1].name}' declared twice")
            _check_dram(buffers, at, line.index("[") + 1)
        else:
            instrs.append(_instr(line, at))
            lines.append(lineno)
    program = Program(tuple(buffers), tuple(instrs), tuple(lines), filename)
    if verify:
        for index, problem in program_problems(program):
            lineno = lines[index] if index >= 0 else 1
            raise AsmError(f"{filename}:{lineno}:1: error: {problem}")
    return program
