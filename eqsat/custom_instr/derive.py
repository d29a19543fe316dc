"""A hardware file's declared instruction -> a registry op.

The op's meaning is the declared composition of registry ops: type rules, numpy
reference and FLOPs come from that body exactly as for the built-in fused kernels
(eqsat/ops/fused.py), so the interpreter, verify-rules and --verify treat it like any
op. Its operand limits (dtypes, rank, broadcasting) are part of its type rule. What
is checked here, located in the TOML file: every function of the semantics is a
registry op (with a did-you-mean), elementwise, and one the vector unit can run; the
name is not a registry op already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from eqsat.errors import SourceError, closest_name
from eqsat.ir.types import TensorType
from eqsat.ops import REGISTRY, Attrs, OpDef, OpKind, OpTypeError
from eqsat.ops.base import broadcast_shapes
from eqsat.ops.fused import Call, _make, call
from hwsim.custom import (
    Apply,
    DeclarationError,
    Instruction,
    Roofline,
    applications,
    check_functions,
)


class InstructionError(SourceError):
    """A declared instruction eqsat cannot turn into an op (located in the TOML file)."""


@dataclass(frozen=True)
class InstructionOp(OpDef):
    """A registry op derived from a hardware file's `[[instruction]]`."""

    instruction: Instruction | None = None


def instruction_error(ins: Instruction, key: str, message: str, col: int | None = None):
    """An InstructionError at `key` of the instruction's table (col: inside its value)."""
    pos = dict(ins.where).get(key) or dict(ins.where).get("name") or (1, 1)
    line, kcol = pos
    if col is not None:
        kcol = _value_col(ins.path, line, key) + col - 1
    try:
        source = Path(ins.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        source = None
    return InstructionError(f"instruction '{ins.name}': {message}", ins.path, line, kcol, source)


def _value_col(path: str, line: int, key: str) -> int:
    """Column of the first character inside the key's string value on `line`."""
    try:
        text = Path(path).read_text(encoding="utf-8").splitlines()[line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return 1
    start = text.find("=", text.find(key))
    quote = min((i for i in (text.find('"', start), text.find("'", start)) if i >= 0), default=-1)
    return quote + 2 if quote >= 0 else 1


def _elementwise(op: OpDef) -> bool:
    if op.kind is OpKind.ELEMENTWISE:
        return True
    if op.kind is OpKind.FUSED and op.composition is not None:
        return all(REGISTRY[c.op].kind is OpKind.ELEMENTWISE for c in _calls(op.composition))
    return False


def _calls(body: Call | str) -> list[Call]:
    if isinstance(body, str):
        return []
    return [c for a in body.args for c in _calls(a)] + [body]


def _body(ins: Instruction) -> Call:
    """The semantics as a fused-op body, each function checked against the registry."""
    for a in applications(ins.semantics):
        op = REGISTRY.get(a.op)
        if op is None or isinstance(op, InstructionOp):
            guess = closest_name(a.op, [n for n in REGISTRY if not _is_instruction(n)])
            hint = f"; did you mean '{guess}'?" if guess else " (`eqsat ops` lists them)"
            raise instruction_error(
                ins, "semantics", f"unknown op '{a.op}' in semantics{hint}", a.col
            )
        if not _elementwise(op):
            raise instruction_error(
                ins,
                "semantics",
                f"'{a.op}' is a {op.kind.value} op; an instruction's semantics is a "
                "composition of elementwise ops (reductions, normalizations such as a "
                "softmax engine, and matrix products such as a sparse matmul are not "
                "supported as instructions)",
                a.col,
            )
        try:
            op.bind_attrs(dict(a.attrs))
        except OpTypeError as e:
            raise instruction_error(ins, "semantics", str(e), a.col) from None
    try:
        check_functions(ins.semantics)
    except DeclarationError as e:
        raise instruction_error(ins, e.key, str(e), e.col) from None
    return _to_call(ins.semantics)


def _to_call(e: Apply | str) -> Call | str:
    if isinstance(e, str):
        return e
    return call(e.op, *(_to_call(a) for a in e.args), **dict(e.attrs))


def _is_instruction(name: str) -> bool:
    return isinstance(REGISTRY.get(name), InstructionOp)


def derive_op(ins: Instruction) -> InstructionOp:
    """The registry op of a declared instruction (raises InstructionError)."""
    existing = REGISTRY.get(ins.name)
    if existing is not None and not (
        isinstance(existing, InstructionOp) and existing.instruction == ins
    ):
        raise instruction_error(
            ins,
            "name",
            f"'{ins.name}' is already an op of the registry ({existing.doc}); an instruction "
            "introduces a new op: give it its own name",
        )
    body = _body(ins)
    base = _make(ins.name, ins.operands, body, ())

    def infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
        _check_limits(ins, ts)
        return base.infer(ts, attrs)

    where = f"{Path(ins.path).name}:{dict(ins.where).get('name', (1, 1))[0]}" if ins.path else "?"
    values = {f.name: getattr(base, f.name) for f in fields(OpDef)}
    values.update(
        infer=infer,
        doc=f"instruction of {where}: {ins.semantics_text}; {_cost_text(ins)}",
    )
    return InstructionOp(**values, instruction=ins)


def _cost_text(ins: Instruction) -> str:
    if isinstance(ins.cost, Roofline):
        port = ins.cost.sram_bytes_per_cycle
        extra = f", {port:g} SRAM bytes a cycle" if port else ""
        return f"cost: {ins.cost.ops_per_element:g} lane ops an element{extra}"
    return f"cycles: {ins.cost.text}"


def _check_limits(ins: Instruction, ts: Sequence[TensorType]) -> None:
    """The declared operand limits, as type rules."""
    for name, t in zip(ins.operands, ts, strict=False):
        if t.dtype.value not in ins.dtypes:
            raise OpTypeError(
                f"'{ins.name}' operand {name} must be {' or '.join(ins.dtypes)}, got {t}"
            )
        if ins.max_rank is not None and t.rank > ins.max_rank:
            raise OpTypeError(
                f"'{ins.name}' operand {name} has rank {t.rank}; at most {ins.max_rank}"
            )
    if len({t.dtype for t in ts}) > 1:
        raise OpTypeError(
            f"'{ins.name}' needs operands of one dtype, got {', '.join(map(str, ts))}"
        )
    if not ins.broadcast and len({t.shape for t in ts}) > 1:
        shapes = broadcast_shapes(*(t.shape for t in ts))
        raise OpTypeError(
            f"'{ins.name}' does not broadcast its operands (broadcast = false): shapes "
            f"{', '.join(str(list(t.shape)) for t in ts)} (would be {list(shapes)})"
        )


def derive_ops(instructions: Sequence[Instruction]) -> list[InstructionOp]:
    return [derive_op(ins) for ins in instructions]
