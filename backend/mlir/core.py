"""The text builder every emitter writes through: SSA names from the model, MLIR
types, constants, locations, and linalg.generic regions with scalar bodies; and
`Apply`, the op application every emitter is given."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import ml_dtypes
import numpy as np


class MlirEmitError(Exception):
    """A graph (or an op of it) this emitter cannot express in upstream MLIR."""


@dataclass(frozen=True)
class Val:
    """A tensor SSA value: its name (with %), shape and element type (f32, bf16, i8, i32)."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Apply:
    """One op application to emit: op, canonical attributes, result shape and dtype,
    and the name hint of its SSA value."""

    op: str
    attrs: Mapping
    shape: tuple[int, ...]
    dtype: str
    hint: str


def tensor_type(shape: Sequence[int], dtype: str) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


INT_RANGE = {"i8": (-128, 127), "i32": (-(2**31), 2**31 - 1)}


def f32(b: Body, v: tuple[str, str]) -> str:
    """A scalar (ssa, element type) as f32."""
    return b.to_float(v[0], v[1])


def is_float(dtype: str) -> bool:
    return dtype in ("f32", "bf16", "f64")


_SAFE = re.compile(r"[^A-Za-z0-9_$.]")


def ssa_safe(hint: str) -> str:
    """A model name as an MLIR suffix-id (letters, digits, _ $ . ; not starting with a digit)."""
    text = _SAFE.sub("_", hint) or "v"
    return text if not text[0].isdigit() else f"v{text}"


def float_literal(value: float, dtype: str) -> str:
    """A scalar float as MLIR text: decimal when finite (exact for f32 through repr of
    the rounded value), the bit pattern for inf and nan."""
    if dtype == "bf16":
        bits = np.array(value, dtype=ml_dtypes.bfloat16).view(np.uint16)
        if not math.isfinite(value):
            return f"0x{int(bits):04X}"
        return repr(float(np.array(value, dtype=ml_dtypes.bfloat16).astype(np.float32)))
    if not math.isfinite(value):
        return f"0x{int(np.array(value, dtype=np.float32).view(np.uint32)):08X}"
    return repr(float(np.float32(value)))


def scalar_literal(value: float | int, dtype: str) -> str:
    if is_float(dtype):
        return float_literal(float(value), dtype)
    return str(int(value))


def dense_attr(values: np.ndarray, dtype: str) -> str:
    """dense<...> for a constant tensor: a splat when all elements are equal, else
    the nested list of its elements (exact decimals, inf and nan as bit patterns)."""
    flat = np.asarray(values).reshape(-1)
    if (flat.size and np.all(flat == flat[0])) or flat.size == 1:
        return f"dense<{scalar_literal(flat[0].item(), dtype)}>"
    if flat.size == 0:
        return "dense<>"
    items = ", ".join(scalar_literal(v.item(), dtype) for v in flat)
    shape = np.asarray(values).shape
    return f"dense<{_nest(items.split(', '), shape)}>"


def _nest(items: list[str], shape: tuple[int, ...]) -> str:
    if not shape:
        return items[0]
    if len(shape) == 1:
        return "[" + ", ".join(items) + "]"
    step = len(items) // shape[0]
    return (
        "["
        + ", ".join(_nest(items[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))
        + "]"
    )


def affine_map(n_dims: int, results: Sequence[str]) -> str:
    dims = ", ".join(f"d{i}" for i in range(n_dims))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


def broadcast_map(shape: Sequence[int], out_shape: Sequence[int]) -> str:
    """The indexing map reading an operand of `shape` numpy-broadcast to `out_shape`."""
    n = len(out_shape)
    offset = n - len(shape)
    results = [
        "0" if d == 1 and out_shape[offset + i] != 1 else f"d{offset + i}"
        for i, d in enumerate(shape)
    ]
    return affine_map(n, results)


def identity_map(n: int) -> str:
    return affine_map(n, [f"d{i}" for i in range(n)])


class Body:
    """The scalar region of a linalg.generic: block arguments in, one value yielded."""

    def __init__(self, func: Func, args: list[tuple[str, str]]) -> None:
        self.func, self.args = func, args  # (ssa name, element type)
        self.lines: list[str] = []

    def op(self, text: str, hint: str = "s") -> str:
        name = self.func.fresh(hint)
        self.lines.append(f"{name} = {text}")
        return name

    def const(self, value: float | int, dtype: str) -> str:
        return self.op(f"arith.constant {scalar_literal(value, dtype)} : {dtype}", "cst")

    def to_float(self, value: str, dtype: str, target: str = "f32") -> str:
        if dtype == target:
            return value
        if is_float(dtype):
            kind = "extf" if _fbits(dtype) < _fbits(target) else "truncf"
            return self.op(f"arith.{kind} {value} : {dtype} to {target}")
        return self.op(f"arith.sitofp {value} : {dtype} to {target}")

    def from_float(self, value: str, target: str) -> str:
        if target == "f32":
            return value
        return self.op(f"arith.truncf {value} : f32 to {target}")


def _fbits(dtype: str) -> int:
    return {"bf16": 16, "f32": 32, "f64": 64}[dtype]


class _Lines(list):
    """The body's lines; those appended inside `Func.indented()` are indented, so that
    a loop's body reads as nested."""

    depth = 0

    def append(self, line: str) -> None:
        super().append("  " * self.depth + line)

    def extend(self, lines) -> None:
        for line in lines:
            self.append(line)


class Func:
    """One func.func being written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = _Lines()
        self.used: set[str] = set()
        self.loc: str = ""  # the location suffix of ops being emitted now
        self.sizes: dict[object, str] = {}  # SSA index value of each dynamic extent

    def define_dims(self, args: Sequence[Val]) -> None:
        """Read each dynamic dimension's value off the first argument that has it
        (`tensor.dim`, divided by the axis's constant factor), at the top of the body."""
        for v in args:
            for axis, d in enumerate(v.shape):
                if isinstance(d, int) or len(d.names) != 1:
                    continue
                base = type(d)(1, d.names)
                if base in self.sizes:
                    continue
                c = self.emit(f"arith.constant {axis} : index", "c")
                extent = self.emit(f"tensor.dim {v.name}, {c} : {v.type}", d.names[0])
                if d.coef != 1:
                    self.sizes[d] = extent
                    k = self.emit(f"arith.constant {d.coef} : index", "c")
                    extent = self.emit(f"arith.divui {extent}, {k} : index", d.names[0])
                self.sizes[base] = extent

    def size(self, d) -> str:
        """An extent as an SSA index value (a constant for a static one)."""
        if isinstance(d, int):
            return self.emit(f"arith.constant {d} : index", "c")
        if d not in self.sizes:
            value = None
            for name in d.names:
                base = type(d)(1, (name,))
                if base not in self.sizes:
                    raise MlirEmitError(
                        f"dimension {name} is dynamic but no argument has it as an axis of "
                        "its own: its value cannot be read at run time"
                    )
                value = (
                    self.sizes[base]
                    if value is None
                    else self.emit(f"arith.muli {value}, {self.sizes[base]} : index", "size")
                )
            if d.coef != 1:
                k = self.emit(f"arith.constant {d.coef} : index", "c")
                value = self.emit(f"arith.muli {value}, {k} : index", "size")
            self.sizes[d] = value
        return self.sizes[d]

    def fresh(self, hint: str) -> str:
        base = ssa_safe(hint)
        name, n = base, 1
        while name in self.used:
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return f"%{name}"

    @contextmanager
    def indented(self) -> Iterator[None]:
        """Lines emitted inside are one level deeper (a loop's body)."""
        self.lines.depth += 1
        try:
            yield
        finally:
            self.lines.depth -= 1

    def emit(self, text: str, hint: str) -> str:
        name = self.fresh(hint)
        self.lines.append(f"{name} = {text}{self.loc}")
        return name

    # ------------------------------------------------------------- tensors

    def empty(self, shape: Sequence[int], dtype: str) -> str:
        dynamic = ", ".join(self.size(d) for d in shape if not isinstance(d, int))
        return self.emit(f"tensor.empty({dynamic}) : {tensor_type(shape, dtype)}", "empty")

    def scalar(self, value: float | int, dtype: str) -> str:
        return self.emit(f"arith.constant {scalar_literal(value, dtype)} : {dtype}", "cst")

    def filled(self, value: float | int, shape: Sequence[int], dtype: str) -> str:
        """An accumulator: tensor.empty filled with `value` (linalg.fill)."""
        init = self.empty(shape, dtype)
        scalar = self.scalar(value, dtype)
        t = tensor_type(shape, dtype)
        return self.emit(f"linalg.fill ins({scalar} : {dtype}) outs({init} : {t}) -> {t}", "fill")

    def constant(self, values: np.ndarray, dtype: str, hint: str) -> Val:
        shape = tuple(np.shape(values))
        t = tensor_type(shape, dtype)
        return Val(
            self.emit(f"arith.constant {dense_attr(values, dtype)} : {t}", hint), shape, dtype
        )

    def generic(
        self,
        ins: Sequence[Val],
        in_maps: Sequence[str],
        out_shape: Sequence[int],
        out_dtype: str,
        iterators: Sequence[str],
        body: Callable[[Body], str],
        hint: str,
        init: str | None = None,
        out_map: str | None = None,
    ) -> Val:
        """A linalg.generic with one result. `body(b)` writes the scalar ops (the block
        arguments are b.args: the inputs', then the output's) and returns the yielded
        value."""
        out_t = tensor_type(out_shape, out_dtype)
        init = init if init is not None else self.empty(out_shape, out_dtype)
        n = len(iterators)
        maps = [*in_maps, out_map or identity_map(n)]
        args = [(self.fresh("in"), v.dtype) for v in ins] + [(self.fresh("out"), out_dtype)]
        b = Body(self, args)
        result = body(b)
        ins_text = ", ".join(v.name for v in ins)
        ins_types = ", ".join(v.type for v in ins)
        its = ", ".join(f'"{i}"' for i in iterators)
        block = ", ".join(f"{a}: {t}" for a, t in args)
        head = (
            f"linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
            + (f"ins({ins_text} : {ins_types}) " if ins else "")
            + f"outs({init} : {out_t}) {{"
        )
        name = self.fresh(hint)
        self.lines.append(f"{name} = {head}")
        self.lines.append(f"^bb0({block}):")
        self.lines.extend(f"  {line}" for line in b.lines)
        self.lines.append(f"  linalg.yield {result} : {out_dtype}")
        self.lines.append(f"}} -> {out_t}{self.loc}")
        return Val(name, tuple(out_shape), out_dtype)
