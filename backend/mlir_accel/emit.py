"""A hwsim program as MLIR text in the `accel` dialect (defined in accel.irdl.mlir).

Pure text, in MLIR's generic op form (the only form an IRDL-defined dialect has), so
emitting needs no MLIR library; xDSL or iree-opt verify the result. The layout:

    builtin.module {
      func.func @mlp(%x: memref<64x784xf32> {accel.name = "x", accel.role = "input"}, ...) {
        %arena_f32 = "accel.dram_alloc"() {name = "arena_f32"} : () -> memref<4096xf32>
        "accel.kernel"() {name = "matmul", wait = [], signal = []} : () -> ()
        "accel.dma_load"(%x) {dst = #accel.tile<"sram", 0 : i64, 16 : i64, 16 : i64,
            16 : i64, f32>, src = #accel.window<0 : i64, 16 : i64, 16 : i64, 784 : i64>,
            wait = [], signal = ["k0.l0"]} : (memref<64x784xf32>) -> ()
        ...
        func.return
      }
    }

Inputs and outputs are the function's arguments in program order, scratch buffers
follow as accel.dram_alloc results; every instruction is one op, in program order.
"""

from __future__ import annotations

import math
import re
import struct

from hwsim.isa import (
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

# hwsim instruction class -> the accel ops that spell it (Unary with an immediate is
# accel.unary_imm: IRDL has no optional attributes). tests check this against the ISA
# and against the IRDL file.
OPS_OF_INSTR: dict[type[Instr], tuple[str, ...]] = {
    Load: ("dma_load",),
    Gather: ("dma_gather",),
    LoadDq: ("dma_load_dq",),
    Store: ("dma_store",),
    Matmul: ("matmul",),
    Move: ("move",),
    Unary: ("unary", "unary_imm"),
    Binary: ("binary",),
    Fma: ("fma",),
    Select: ("select",),
    Reduce: ("reduce",),
    Transpose: ("transpose",),
    Requantize: ("requantize",),
    Custom: ("custom",),
    Kernel: ("kernel",),
}

_BARE_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*")


def mlir_string(text: str) -> str:
    """`text` as an MLIR string literal: quotes, backslashes and non-printable bytes
    escaped as \\XX hex pairs of their UTF-8 encoding."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        out.append(ch if 0x20 <= byte < 0x7F and ch not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def mlir_float(value: float) -> str:
    """An f64 float attribute that reads back as exactly `value`: the shortest decimal
    with a '.', or the bit pattern in hex for inf and nan (MLIR has no literal for them)."""
    value = float(value)
    if not math.isfinite(value):
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        return f"0x{bits:016X} : f64"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}{e}{exponent} : f64"


def _int(n: int) -> str:
    return f"{int(n)} : i64"


def tile_attr(t: Tile) -> str:
    fields = [mlir_string(t.space), *(_int(n) for n in (t.addr, t.rows, t.cols, t.row_stride))]
    return f"#accel.tile<{', '.join(fields)}, {t.dtype}>"


def window_attr(r: DramRef) -> str:
    return f"#accel.window<{', '.join(_int(n) for n in (r.offset, r.rows, r.cols, r.stride))}>"


def memref_type(b: Buffer) -> str:
    return f"memref<{'x'.join(map(str, b.shape))}x{b.dtype}>"


def _tile_or_imm(tile: Tile | None, imm: float | None) -> str:
    return tile_attr(tile) if tile is not None else mlir_float(imm)  # type: ignore[arg-type]


def _tokens(names: tuple[str, ...]) -> str:
    return f"[{', '.join(map(mlir_string, names))}]"


def op_parts(ins: Instr) -> tuple[str, str | None, list[tuple[str, str]]]:
    """(accel op name, DRAM buffer operand or None, attributes in IRDL order) of one
    instruction (tokens not included)."""
    match ins:
        case Kernel():
            return "kernel", None, [("name", mlir_string(ins.name))]
        case Load():
            return (
                "dma_load",
                ins.src.buffer,
                [("dst", tile_attr(ins.dst)), ("src", window_attr(ins.src))],
            )
        case Gather():
            attrs = [("dst", tile_attr(ins.dst)), ("src", window_attr(ins.src))]
            return "dma_gather", ins.src.buffer, [*attrs, ("index", tile_attr(ins.index))]
        case LoadDq():
            attrs = [("dst", tile_attr(ins.dst)), ("src", window_attr(ins.src))]
            attrs.append(("scales", tile_attr(ins.scales)))
            ints = [(k, _int(getattr(ins, k))) for k in ("bits", "group", "phase")]
            return "dma_load_dq", ins.src.buffer, [*attrs, *ints, ("fmt", mlir_string(ins.fmt))]
        case Store():
            return (
                "dma_store",
                ins.dst.buffer,
                [("dst", window_attr(ins.dst)), ("src", tile_attr(ins.src))],
            )
        case Matmul():
            tiles = [(k, tile_attr(getattr(ins, k))) for k in ("acc", "a", "b")]
            return "matmul", None, [*tiles, ("mode", mlir_string(ins.mode))]
        case Move():
            tiles = [("dst", tile_attr(ins.dst)), ("src", tile_attr(ins.src))]
            return "move", None, [*tiles, ("act", mlir_string(ins.act)), _queue(ins)]
        case Unary():
            attrs = [
                ("op", mlir_string(ins.op)),
                ("dst", tile_attr(ins.dst)),
                ("src", tile_attr(ins.src)),
            ]
            if ins.imm is None:
                return "unary", None, [*attrs, _queue(ins)]
            return "unary_imm", None, [*attrs, ("imm", mlir_float(ins.imm)), _queue(ins)]
        case Binary():
            attrs = [
                ("op", mlir_string(ins.op)),
                ("dst", tile_attr(ins.dst)),
                ("a", tile_attr(ins.a)),
            ]
            b = ("b", _tile_or_imm(ins.b, ins.imm))
            return "binary", None, [*attrs, b, ("bcast", mlir_string(ins.bcast)), _queue(ins)]
        case Select():
            attrs = [("dst", tile_attr(ins.dst)), ("cond", tile_attr(ins.cond))]
            a, b = _tile_or_imm(ins.a, ins.imm_a), _tile_or_imm(ins.b, ins.imm_b)
            return "select", None, [*attrs, ("a", a), ("b", b)]
        case Fma():
            b, c = _tile_or_imm(ins.b, ins.imm_b), _tile_or_imm(ins.c, ins.imm_c)
            attrs = [("dst", tile_attr(ins.dst)), ("a", tile_attr(ins.a))]
            return "fma", None, [*attrs, ("b", b), ("c", c), _queue(ins)]
        case Reduce():
            attrs = [("op", mlir_string(ins.op)), ("dst", tile_attr(ins.dst))]
            return "reduce", None, [*attrs, ("src", tile_attr(ins.src)), _queue(ins)]
        case Transpose():
            tiles = [("dst", tile_attr(ins.dst)), ("src", tile_attr(ins.src))]
            return "transpose", None, [*tiles, _queue(ins)]
        case Requantize():
            attrs = [("dst", tile_attr(ins.dst)), ("src", tile_attr(ins.src))]
            ints = [(k, _int(getattr(ins, k))) for k in ("multiplier", "shift", "zero_point")]
            return "requantize", None, [*attrs, *ints, ("rounding", mlir_string(ins.rounding))]
        case Custom():
            srcs = f"[{', '.join(map(tile_attr, ins.srcs))}]"
            return (
                "custom",
                None,
                [("name", mlir_string(ins.name)), ("dst", tile_attr(ins.dst)), ("srcs", srcs)],
            )
    raise TypeError(f"no accel op for {type(ins).__name__}")


def _queue(ins: Binary | Fma | Move | Unary | Reduce | Transpose) -> tuple[str, str]:
    return "queue", mlir_string(ins.queue)


def _value_names(buffers: tuple[Buffer, ...]) -> dict[str, str]:
    """SSA value name of each DRAM buffer: its name with other characters as '_',
    made unique (cosmetic: the name itself travels in an attribute)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for b in buffers:
        base = re.sub(r"\W", "_", b.name)
        name, n = base, 1
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        names[b.name] = f"%{name}"
    return names


def emit_accel_mlir(program: Program, name: str = "main") -> str:
    """The program as an MLIR module of one func.func `name` in the accel dialect."""
    values = _value_names(program.buffers)
    types = {b.name: memref_type(b) for b in program.buffers}
    args = [
        f"{values[b.name]}: {types[b.name]} "
        f"{{accel.name = {mlir_string(b.name)}, accel.role = {mlir_string(b.role)}}}"
        for b in program.buffers
        if b.role != "scratch"
    ]
    symbol = name if _BARE_SYMBOL.fullmatch(name) else mlir_string(name)
    body = [
        f'    {values[b.name]} = "accel.dram_alloc"() {{name = {mlir_string(b.name)}}} '
        f": () -> {types[b.name]}"
        for b in program.buffers
        if b.role == "scratch"
    ]
    for ins in program.instrs:
        op, buffer, attrs = op_parts(ins)
        if buffer is not None and buffer not in values:
            raise ValueError(f"{type(ins).__name__} addresses undeclared DRAM buffer '{buffer}'")
        attrs += [("wait", _tokens(ins.wait)), ("signal", _tokens(ins.signal))]
        attr_text = ", ".join(f"{k} = {v}" for k, v in attrs)
        operand, operand_type = ("", "") if buffer is None else (values[buffer], types[buffer])
        body.append(f'    "accel.{op}"({operand}) {{{attr_text}}} : ({operand_type}) -> ()')
    lines = [
        "// hwsim program in the accel dialect (backend/mlir_accel/accel.irdl.mlir)",
        "builtin.module {",
        f"  func.func @{symbol}({', '.join(args)}) {{",
        *body,
        "    func.return",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"
