"""Static checks of a program: shapes, dtypes, buffer names, DRAM bounds, tokens.

Hardware-independent (capacity checks need a `Hardware` and live in the simulator).
Each check returns the problem as a sentence, or None, so the parser and the simulator
can both wrap it with their own location.
"""

from __future__ import annotations

import functools
import re

from .dtypes import DTYPES, INT_RANGE, is_float
from .isa import (
    ACTS,
    BCASTS,
    BINARY_OPS,
    MODES,
    REDUCE_OPS,
    ROLES,
    ROUNDINGS,
    SPACES,
    UNARY_OPS,
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

INT_OPS = (
    *("copy", "neg", "relu", "add", "sub", "mul", "max", "min", "sum"),
    *("abs", "not", "div", "pow", "eq", "lt", "le", "gt", "ge", "and", "or", "xor"),
)


@functools.lru_cache(maxsize=1 << 14)
def tile_problem(t: Tile) -> str | None:
    if t.space not in SPACES or t.dtype not in DTYPES:
        return f"bad tile space/dtype {t.space}/{t.dtype}"
    if t.rows < 1 or t.cols < 1 or t.addr < 0:
        return f"tile {t.space}@{t.addr} must have addr >= 0 and rows, cols >= 1"
    if t.row_stride < t.cols:
        return f"tile row stride {t.row_stride} is smaller than its {t.cols} columns"
    if t.addr % t.itemsize:
        return f"tile address {t.addr} is not aligned to its {t.itemsize}-byte {t.dtype} items"
    if t.space == "acc" and t.itemsize != 4:
        return f"accumulator tiles hold 4-byte entries (i32 or f32), not {t.dtype}"
    return None


def dram_problem(r: DramRef, buffers: dict[str, Buffer], write: bool) -> str | None:
    buf = buffers.get(r.buffer)
    if buf is None:
        return f"unknown DRAM buffer '{r.buffer}'; declare it in the header"
    if r.rows < 1 or r.cols < 1 or r.offset < 0 or r.stride < 0:
        return "DRAM access needs rows, cols >= 1 and offset, stride >= 0"
    if write and r.rows > 1 and r.stride < r.cols:
        return f"store row stride {r.stride} is smaller than its {r.cols} columns"
    if r.end > buf.size:
        return (
            f"out-of-bounds DRAM access: {r.buffer}[{r.offset}:{r.rows}x{r.cols}/{r.stride}] "
            f"reaches element {r.end} of a buffer of {buf.size}"
        )
    return None


def _shape(t: Tile) -> tuple[int, int]:
    return (t.rows, t.cols)


def _same(*tiles: Tile) -> str | None:
    shapes = {_shape(t) for t in tiles}
    if len(shapes) > 1:
        return "shape mismatch: " + ", ".join(f"{t.rows}x{t.cols}" for t in tiles)
    return None


def _load(ins: Load, bufs: dict[str, Buffer]) -> str | None:
    if (p := dram_problem(ins.src, bufs, False)) is not None:
        return p
    if bufs[ins.src.buffer].dtype != ins.dst.dtype:
        return f"load from {bufs[ins.src.buffer].dtype} buffer into {ins.dst.dtype} tile"
    if ins.src.rows > ins.dst.rows or ins.src.cols > ins.dst.cols:
        return f"load of {ins.src.rows}x{ins.src.cols} does not fit a {ins.dst.rows}x{ins.dst.cols} tile"
    return None


def _store(ins: Store, bufs: dict[str, Buffer]) -> str | None:
    if (p := dram_problem(ins.dst, bufs, True)) is not None:
        return p
    if bufs[ins.dst.buffer].dtype != ins.src.dtype:
        return f"store of {ins.src.dtype} tile into {bufs[ins.dst.buffer].dtype} buffer"
    if ins.dst.rows > ins.src.rows or ins.dst.cols > ins.src.cols:
        return f"store of {ins.dst.rows}x{ins.dst.cols} from a {ins.src.rows}x{ins.src.cols} tile"
    return None


def _gather(ins: Gather, bufs: dict[str, Buffer]) -> str | None:
    if (p := dram_problem(ins.src, bufs, False)) is not None:
        return p
    if bufs[ins.src.buffer].dtype != ins.dst.dtype:
        return f"gather from {bufs[ins.src.buffer].dtype} buffer into {ins.dst.dtype} tile"
    idx = ins.index
    if idx.dtype != "i32" or idx.cols != 1 or idx.space != "sram" or ins.dst.space != "sram":
        return "gather reads an i32 index column (rows x 1) in sram into an sram tile"
    if (ins.dst.rows, ins.dst.cols) != (idx.rows, ins.src.cols):
        return (
            f"gather of {idx.rows} rows of {ins.src.cols} writes {idx.rows}x{ins.src.cols}, "
            f"not {ins.dst.rows}x{ins.dst.cols}"
        )
    return None


def _load_dq(ins: LoadDq, bufs: dict[str, Buffer]) -> str | None:
    """Packed weights (i8 storage) into an f32/bf16 sram tile, scales an f32 or bf16
    sram tile with one row per group the tile's rows touch (hwsim/wq.py)."""
    if (p := dram_problem(ins.src, bufs, False)) is not None:
        return p
    dst, sc = ins.dst, ins.scales
    if bufs[ins.src.buffer].dtype != "i8" or dst.dtype not in ("f32", "bf16"):
        return "loaddq reads an i8 (packed) buffer into an f32 or bf16 tile"
    if ins.bits not in (4, 8) or ins.group < 1 or not 0 <= ins.phase < ins.group:
        return "loaddq needs bits 4 or 8, group >= 1 and 0 <= phase < group"
    if ins.fmt not in ("int", "e4m3") or (ins.fmt == "e4m3" and ins.bits != 8):
        return f"loaddq fmt is int or e4m3 (8 bits), got {ins.fmt} with bits {ins.bits}"
    if (ins.src.rows * 8, ins.src.cols) != (dst.rows * ins.bits, dst.cols):
        return (
            f"loaddq of {ins.src.rows}x{ins.src.cols} bytes of {ins.bits}-bit weights does "
            f"not fill a {dst.rows}x{dst.cols} tile"
        )
    groups = (ins.phase + dst.rows - 1) // ins.group + 1
    if sc.dtype not in ("f32", "bf16") or (sc.rows, sc.cols) != (groups, dst.cols):
        return f"loaddq scales must be an f32 or bf16 {groups}x{dst.cols} tile"
    if dst.space != "sram" or sc.space != "sram":
        return "loaddq reads its scales from and writes its tile to sram"
    return None


def _matmul(ins: Matmul) -> str | None:
    a, b, acc = ins.a, ins.b, ins.acc
    if ins.mode not in MODES:
        return f"matmul mode must be one of {', '.join(MODES)}"
    if a.space != "sram" or b.space != "sram" or acc.space != "acc":
        return "matmul reads a and b from sram and writes the accumulator"
    if a.dtype != b.dtype or a.dtype not in ("i8", "bf16", "f32"):
        return f"matmul inputs must share dtype i8, bf16 or f32; got {a.dtype}, {b.dtype}"
    want = "i32" if a.dtype == "i8" else "f32"
    if acc.dtype != want:
        return f"matmul of {a.dtype} accumulates in {want}, not {acc.dtype}"
    if a.cols != b.rows or acc.rows != a.rows or acc.cols != b.cols:
        return f"matmul shapes {a.rows}x{a.cols} @ {b.rows}x{b.cols} -> {acc.rows}x{acc.cols}"
    return None


def _unary(ins: Unary) -> str | None:
    if ins.op not in UNARY_OPS:
        return f"unknown unary op '{ins.op}'"
    if (ins.imm is None) == (ins.op == "scale"):
        return "unary.scale needs an immediate and other unary ops take none"
    if not is_float(ins.src.dtype) and ins.op not in INT_OPS:
        return f"unary.{ins.op} needs a float source; convert {ins.src.dtype} with unary.copy"
    return _same(ins.dst, ins.src)


def _binary(ins: Binary) -> str | None:
    a, b = ins.a, ins.b
    if ins.op not in BINARY_OPS or ins.bcast not in BCASTS:
        return f"unknown binary op '{ins.op}' or bcast '{ins.bcast}'"
    if (b is None) == (ins.imm is None):
        return "binary takes either a second tile or an immediate"
    if not is_float(a.dtype) and ins.op not in INT_OPS:
        return f"binary.{ins.op} needs float operands"
    if b is None:
        if ins.bcast != "none":
            return "an immediate operand cannot be broadcast"
        if not is_float(a.dtype) and not float(ins.imm).is_integer():  # type: ignore[arg-type]
            return "integer binary ops need an integral immediate"
        return _same(ins.dst, a)
    if is_float(a.dtype) != is_float(b.dtype):
        return f"binary operands must both be float or both integer: {a.dtype}, {b.dtype}"
    want = {"none": _shape(a), "row": (1, a.cols), "col": (a.rows, 1)}[ins.bcast]
    if _shape(b) != want:
        return f"bcast={ins.bcast} needs b of {want[0]}x{want[1]}, got {b.rows}x{b.cols}"
    return _same(ins.dst, a)


def _select(ins: Select) -> str | None:
    tiles = [t for t in (ins.a, ins.b) if t is not None]
    if (ins.a is None) == (ins.imm_a is None) or (ins.b is None) == (ins.imm_b is None):
        return "select takes a tile or an immediate for each of a and b"
    if len({is_float(t.dtype) for t in tiles}) > 1:
        a, b = tiles
        return f"select operands must both be float or both integer: {a.dtype}, {b.dtype}"
    kind = tiles[0].dtype if tiles else ins.dst.dtype
    imms = [v for v in (ins.imm_a, ins.imm_b) if v is not None]
    if not is_float(kind) and not all(float(v).is_integer() for v in imms):
        return "an integer select needs integral immediates"
    fits = {_shape(ins.dst), (1, ins.dst.cols), (ins.dst.rows, 1)}
    for t in (ins.cond, *tiles):
        if _shape(t) not in fits:
            return (
                f"select operand {t.rows}x{t.cols} is neither {ins.dst.rows}x{ins.dst.cols}, "
                f"a row nor a column of it"
            )
    return None


def _fma(ins: Fma) -> str | None:
    """A tile or an immediate for each of b and c; float tiles; a, b and c each dst's
    shape, one row or one column of it."""
    if (ins.b is None) == (ins.imm_b is None) or (ins.c is None) == (ins.imm_c is None):
        return "fma takes a tile or an immediate for each of b and c"
    tiles = [t for t in (ins.a, ins.b, ins.c, ins.dst) if t is not None]
    if not all(is_float(t.dtype) for t in tiles):
        return "fma works on float tiles, got " + ", ".join(t.dtype for t in tiles)
    fits = {_shape(ins.dst), (1, ins.dst.cols), (ins.dst.rows, 1)}
    for t in tiles[:-1]:
        if _shape(t) not in fits:
            return (
                f"fma operand {t.rows}x{t.cols} is neither {ins.dst.rows}x{ins.dst.cols}, "
                f"a row nor a column of it"
            )
    return None


def _requantize(ins: Requantize) -> str | None:
    if ins.src.dtype != "i32" or ins.dst.dtype not in ("i8", "i32"):
        return f"requantize maps i32 to i8 or i32, not {ins.src.dtype} to {ins.dst.dtype}"
    if not -(2**31) < ins.multiplier < 2**31 or not 0 <= ins.shift <= 62:
        return "requantize needs |multiplier| < 2**31 and 0 <= shift <= 62"
    lo, hi = INT_RANGE[ins.dst.dtype]
    if not lo <= ins.zero_point <= hi or ins.rounding not in ROUNDINGS:
        return (
            f"requantize needs zero_point in [{lo}, {hi}] ({ins.dst.dtype}) and rounding "
            f"in {ROUNDINGS}"
        )
    return _same(ins.dst, ins.src)


def _custom(ins: Custom) -> str | None:
    """Shapes and dtypes only: whether the hardware declares `name` is the simulator's
    check (it has the hardware)."""
    if not ins.name or any(c.isspace() for c in ins.name):
        return "custom instruction name must be one non-empty word"
    if not ins.srcs:
        return f"custom.{ins.name} needs at least one source tile"
    fits = {_shape(ins.dst), (1, ins.dst.cols), (ins.dst.rows, 1)}
    for t in (ins.dst, *ins.srcs):
        if not is_float(t.dtype):
            return f"custom.{ins.name} works on float tiles, got {t.dtype}"
    for t in ins.srcs:
        if _shape(t) not in fits:
            return (
                f"custom.{ins.name} operand {t.rows}x{t.cols} is neither "
                f"{ins.dst.rows}x{ins.dst.cols}, a row nor a column of it"
            )
    return None


_TOKEN_NAME = re.compile(r"[^\s,=#]+")


@functools.lru_cache(maxsize=1 << 12)
def _token_problem(tokens: tuple[str, ...]) -> str | None:
    for tok in tokens:
        if not _TOKEN_NAME.fullmatch(tok):
            return f"bad token name {tok!r}"
    return None


def _tokens_problem(ins: Instr) -> str | None:
    return _token_problem(ins.wait) or _token_problem(ins.signal)


def instr_problem(ins: Instr, buffers: dict[str, Buffer]) -> str | None:
    """The first thing wrong with one instruction, or None."""
    for t in _tiles(ins):
        if (p := tile_problem(t)) is not None:
            return p
    if (p := _tokens_problem(ins)) is not None:
        return p
    match ins:
        case Load():
            return _load(ins, buffers)
        case Store():
            return _store(ins, buffers)
        case Gather():
            return _gather(ins, buffers)
        case LoadDq():
            return _load_dq(ins, buffers)
        case Matmul():
            return _matmul(ins)
        case Move():
            return _same(ins.dst, ins.src) if ins.act in ACTS else f"unknown act '{ins.act}'"
        case Unary():
            return _unary(ins)
        case Binary():
            return _binary(ins)
        case Fma():
            return _fma(ins)
        case Select():
            return _select(ins)
        case Reduce():
            if ins.op not in REDUCE_OPS:
                return f"unknown reduction '{ins.op}'"
            return None if _shape(ins.dst) == (ins.src.rows, 1) else "reduce writes rows x 1"
        case Transpose():
            ok = _shape(ins.dst) == (ins.src.cols, ins.src.rows)
            return None if ok else "transpose of r x c writes c x r"
        case Requantize():
            return _requantize(ins)
        case Custom():
            return _custom(ins)
        case Kernel():
            bad = not ins.name or any(c.isspace() for c in ins.name)
            return "kernel name must be one non-empty word" if bad else None
    return f"unknown instruction {type(ins).__name__}"


def _tiles(ins: Instr) -> list[Tile]:
    return [v for v in vars(ins).values() if isinstance(v, Tile)]


def program_problems(program: Program) -> list[tuple[int, str]]:
    """(instruction index, problem) for every bad instruction; index -1 for the header."""
    out: list[tuple[int, str]] = []
    names: set[str] = set()
    for b in program.buffers:
        if b.name in names:
            out.append((-1, f"buffer '{b.name}' declared twice"))
        names.add(b.name)
        if b.dtype not in DTYPES or b.role not in ROLES or any(d < 1 for d in b.shape):
            out.append((-1, f"buffer '{b.name}' needs a dtype, a role and positive dims"))
    bufs = program.buffer_map
    for i, ins in enumerate(program.instrs):
        if (p := instr_problem(ins, bufs)) is not None:
            out.append((i, p))
    signalled = {t for ins in program.instrs for t in ins.signal}
    for i, ins in enumerate(program.instrs):
        for t in ins.wait:
            if t not in signalled:
                out.append((i, f"deadlock: waits on token '{t}' that no instruction signals"))
    return out
