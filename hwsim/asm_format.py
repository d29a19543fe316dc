"""Printing hwsim programs as assembly text (syntax: see asm.py)."""

from __future__ import annotations

from typing import Any

from .isa import (
    Binary,
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


def format_tile(t: Tile) -> str:
    stride = "" if t.stride is None else f"/{t.stride}"
    return f"{t.space}@{t.addr}:{t.rows}x{t.cols}{stride}:{t.dtype}"


def format_dram(r: DramRef) -> str:
    return f"{r.buffer}[{r.offset}:{r.rows}x{r.cols}/{r.stride}]"


def _operand(x: Any) -> str:
    if isinstance(x, Tile):
        return format_tile(x)
    if isinstance(x, DramRef):
        return format_dram(x)
    return repr(float(x))


def _queue(ins: Binary | Fma | Move | Unary | Reduce | Transpose) -> dict[str, str]:
    return {"queue": "vector"} if ins.vector_queue else {}


def _parts(ins: Instr) -> tuple[str, list[Any], list[Any], dict[str, Any]]:
    """(opcode, destinations, sources, options) of an instruction."""
    match ins:
        case Load() | Store():
            return type(ins).__name__.lower(), [ins.dst], [ins.src], {}
        case Gather():
            return "gather", [ins.dst], [ins.src, ins.index], {}
        case LoadDq():
            opts = {"bits": ins.bits, "group": ins.group, "phase": ins.phase, "fmt": ins.fmt}
            return "loaddq", [ins.dst], [ins.src, ins.scales], opts
        case Matmul():
            mode = {} if ins.mode == "overwrite" else {"mode": ins.mode}
            return "matmul", [ins.acc], [ins.a, ins.b], mode
        case Move():
            opts = {} if ins.act == "none" else {"act": ins.act}
            return "move", [ins.dst], [ins.src], {**opts, **_queue(ins)}
        case Unary():
            imm = [] if ins.imm is None else [ins.imm]
            return f"unary.{ins.op}", [ins.dst], [ins.src, *imm], _queue(ins)
        case Binary():
            b = ins.imm if ins.b is None else ins.b
            opts = {} if ins.bcast == "none" else {"bcast": ins.bcast}
            return f"binary.{ins.op}", [ins.dst], [ins.a, b], {**opts, **_queue(ins)}
        case Custom():
            return f"custom.{ins.name}", [ins.dst], list(ins.srcs), {}
        case Select():
            a = ins.imm_a if ins.a is None else ins.a
            b = ins.imm_b if ins.b is None else ins.b
            return "select", [ins.dst], [ins.cond, a, b], {}
        case Fma():
            b = ins.imm_b if ins.b is None else ins.b
            c = ins.imm_c if ins.c is None else ins.c
            return "fma", [ins.dst], [ins.a, b, c], _queue(ins)
        case Reduce():
            return f"reduce.{ins.op}", [ins.dst], [ins.src], _queue(ins)
        case Transpose():
            return "transpose", [ins.dst], [ins.src], _queue(ins)
        case Requantize():
            opts = {"mult": ins.multiplier, "shift": ins.shift, "zp": ins.zero_point}
            return "requantize", [ins.dst], [ins.src], {**opts, "round": ins.rounding}
    raise TypeError(f"cannot print {ins!r}")


def format_instr(ins: Instr) -> str:
    """One line of assembly for one instruction."""
    tokens = {"wait": ins.wait, "signal": ins.signal}
    deps = "".join(f"  {k}={','.join(v)}" for k, v in tokens.items() if v)
    if isinstance(ins, Kernel):
        return f"{'kernel':<11} {ins.name}{deps}"
    opcode, dsts, srcs, opts = _parts(ins)
    body = f"{', '.join(map(_operand, dsts))} <- {', '.join(map(_operand, srcs))}"
    keys = "".join(f"  {k}={v}" for k, v in opts.items())
    return f"{opcode:<11} {body}{keys}{deps}"


def format_program(program: Program) -> str:
    """The whole program as assembly text (header, blank line, instructions)."""
    width = max((len(b.name) for b in program.buffers), default=1)
    head = [
        f".{b.role:<8} {b.name:<{width}} {b.dtype} [{', '.join(map(str, b.shape))}]"
        for b in program.buffers
    ]
    return "\n".join([*head, "", *map(format_instr, program.instrs)]) + "\n"
