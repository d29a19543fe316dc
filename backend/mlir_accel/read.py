"""Accel MLIR back to a hwsim program: the inverse of emit.py.

It proves that the dialect loses nothing: emit, read back, and the program is equal to
the original (same buffers, instructions, tokens), so it simulates to the same cycles
and outputs. The text is verified against the IRDL definition first (verify.py), so
this module only maps verified ops to instructions; names come from attributes, so
text re-printed by iree-opt or mlir-opt (values renamed %arg0, %0, ...) reads back too.
"""

from __future__ import annotations

from xdsl.dialects import builtin, func
from xdsl.ir import Attribute, Operation, SSAValue

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

from .verify import AccelMlirError, parse_accel_mlir

_DTYPES = {builtin.f32: "f32", builtin.bf16: "bf16", builtin.i8: "i8", builtin.i32: "i32"}


def _str(attr: Attribute) -> str:
    if not isinstance(attr, builtin.StringAttr):
        raise AccelMlirError(f"expected a string, got {attr}")
    return attr.data


def _int(attr: Attribute) -> int:
    if not isinstance(attr, builtin.IntegerAttr):
        raise AccelMlirError(f"expected an integer, got {attr}")
    return attr.value.data


def _tile(attr: Attribute) -> Tile:
    if attr.name != "accel.tile":
        raise AccelMlirError(f"expected #accel.tile, got {attr}")
    space, addr, rows, cols, stride, dtype = attr.parameters  # type: ignore[attr-defined]
    sizes = (_int(addr), _int(rows), _int(cols))
    return Tile(_str(space), *sizes, _DTYPES[dtype], _int(stride))


def _window(attr: Attribute, buffer: str) -> DramRef:
    offset, rows, cols, stride = (_int(p) for p in attr.parameters)  # type: ignore[attr-defined]
    return DramRef(buffer, offset, rows, cols, stride)


def _tile_or_imm(attr: Attribute) -> tuple[Tile | None, float | None]:
    if isinstance(attr, builtin.FloatAttr):
        return None, float(attr.value.data)
    return _tile(attr), None


def _tokens(attr: Attribute) -> tuple[str, ...]:
    if not isinstance(attr, builtin.ArrayAttr):
        raise AccelMlirError(f"expected an array of token names, got {attr}")
    return tuple(_str(a) for a in attr.data)


def _buffer(value: SSAValue, names: dict[SSAValue, str]) -> str:
    if value not in names:
        raise AccelMlirError("a DMA operand is not a function argument or accel.dram_alloc")
    return names[value]


def _instr(op: Operation, names: dict[SSAValue, str]) -> Instr:
    """The instruction of one verified accel op."""
    a = op.attributes
    deps = {"wait": _tokens(a["wait"]), "signal": _tokens(a["signal"])}
    kind = op.name.removeprefix("accel.")
    if kind in ("dma_load", "dma_gather", "dma_store", "dma_load_dq"):
        buffer = _buffer(op.operands[0], names)
        if kind == "dma_store":
            return Store(dst=_window(a["dst"], buffer), src=_tile(a["src"]), **deps)
        src, dst = _window(a["src"], buffer), _tile(a["dst"])
        if kind == "dma_gather":
            return Gather(dst=dst, src=src, index=_tile(a["index"]), **deps)
        if kind == "dma_load_dq":
            ints = {k: _int(a[k]) for k in ("bits", "group", "phase")}
            fmt = _str(a["fmt"])
            return LoadDq(dst=dst, src=src, scales=_tile(a["scales"]), **ints, fmt=fmt, **deps)
        return Load(dst=dst, src=src, **deps)
    match kind:
        case "kernel":
            return Kernel(name=_str(a["name"]), **deps)
        case "matmul":
            tiles = {k: _tile(a[k]) for k in ("acc", "a", "b")}
            return Matmul(**tiles, mode=_str(a["mode"]), **deps)
        case "move":
            vq = _str(a["queue"]) == "vector"
            return Move(
                dst=_tile(a["dst"]),
                src=_tile(a["src"]),
                act=_str(a["act"]),
                vector_queue=vq,
                **deps,
            )
        case "unary" | "unary_imm":
            imm = float(a["imm"].value.data) if kind == "unary_imm" else None  # type: ignore[attr-defined]
            vq = _str(a["queue"]) == "vector"
            tiles = {"dst": _tile(a["dst"]), "src": _tile(a["src"])}
            return Unary(op=_str(a["op"]), **tiles, imm=imm, vector_queue=vq, **deps)
        case "binary":
            b, imm = _tile_or_imm(a["b"])
            ops = {"op": _str(a["op"]), "dst": _tile(a["dst"]), "a": _tile(a["a"])}
            vq = _str(a["queue"]) == "vector"
            return Binary(**ops, b=b, imm=imm, bcast=_str(a["bcast"]), vector_queue=vq, **deps)
        case "select":
            (ta, ia), (tb, ib) = _tile_or_imm(a["a"]), _tile_or_imm(a["b"])
            dst, cond = _tile(a["dst"]), _tile(a["cond"])
            return Select(dst=dst, cond=cond, a=ta, b=tb, imm_a=ia, imm_b=ib, **deps)
        case "fma":
            (tb, ib), (tc, ic) = _tile_or_imm(a["b"]), _tile_or_imm(a["c"])
            dst, src = _tile(a["dst"]), _tile(a["a"])
            vq = _str(a["queue"]) == "vector"
            return Fma(dst=dst, a=src, b=tb, c=tc, imm_b=ib, imm_c=ic, vector_queue=vq, **deps)
        case "reduce":
            vq = _str(a["queue"]) == "vector"
            tiles = {"dst": _tile(a["dst"]), "src": _tile(a["src"])}
            return Reduce(op=_str(a["op"]), **tiles, vector_queue=vq, **deps)
        case "transpose":
            vq = _str(a["queue"]) == "vector"
            tiles = {"dst": _tile(a["dst"]), "src": _tile(a["src"])}
            return Transpose(**tiles, vector_queue=vq, **deps)
        case "requantize":
            ints = {k: _int(a[k]) for k in ("multiplier", "shift", "zero_point")}
            tiles = {"dst": _tile(a["dst"]), "src": _tile(a["src"])}
            return Requantize(**tiles, **ints, rounding=_str(a["rounding"]), **deps)
        case "custom":
            srcs = tuple(_tile(t) for t in a["srcs"].data)  # type: ignore[attr-defined]
            return Custom(name=_str(a["name"]), dst=_tile(a["dst"]), srcs=srcs, **deps)
    raise AccelMlirError(f"'{op.name}' is not an instruction")


def _memref_buffer(name: str, role: str, memref: Attribute) -> Buffer:
    if not isinstance(memref, builtin.MemRefType) or memref.element_type not in _DTYPES:
        raise AccelMlirError(f"buffer '{name}': expected a memref of f32, bf16, i8 or i32")
    return Buffer(name, _DTYPES[memref.element_type], tuple(memref.get_shape()), role)


def read_accel_mlir(text: str, name: str = "<accel-mlir>") -> tuple[str, Program]:
    """(function name, program) of accel MLIR text with one func.func."""
    module = parse_accel_mlir(text, name)
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(funcs) != 1:
        raise AccelMlirError(f"expected one func.func, found {len(funcs)}")
    (fn,) = funcs
    buffers: list[Buffer] = []
    names: dict[SSAValue, str] = {}
    arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    for arg, attrs in zip(fn.body.block.args, arg_attrs, strict=True):
        if "accel.name" not in attrs.data or "accel.role" not in attrs.data:
            raise AccelMlirError("every argument needs accel.name and accel.role")
        buf_name, role = _str(attrs.data["accel.name"]), _str(attrs.data["accel.role"])
        buffers.append(_memref_buffer(buf_name, role, arg.type))
        names[arg] = buf_name
    instrs: list[Instr] = []
    for op in fn.body.block.ops:
        if op.name == "accel.dram_alloc":
            buf_name = _str(op.attributes["name"])
            buffers.append(_memref_buffer(buf_name, "scratch", op.results[0].type))
            names[op.results[0]] = buf_name
        elif op.name.startswith("accel."):
            instrs.append(_instr(op, names))
        elif not isinstance(op, func.ReturnOp):
            raise AccelMlirError(f"unexpected op '{op.name}' in an accel program")
    return fn.sym_name.data, Program(tuple(buffers), tuple(instrs))
