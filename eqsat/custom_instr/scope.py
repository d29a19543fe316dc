"""The ops of a hardware's declared instructions exist only while it is in use.

The registry is one table that everything reads (the e-graph datatype, the rule
compiler, the interpreter, the backend), and several hardwares may be used one after
another in one process (tests, sweeps). `instructions_in_use(hw)` registers the
derived ops on entry and removes them on exit, clearing the caches built from the
registry both times, so nothing of one hardware's instructions leaks into a run on
another. Nested uses of the same hardware are one use; a different hardware with
instructions while one is in use is an error (one machine at a time).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from eqsat.custom_instr.derive import InstructionOp, derive_ops
from eqsat.errors import UserError
from eqsat.ops import REGISTRY
from hwsim.hardware import PRESETS, Hardware, load_hardware

F = TypeVar("F", bound=Callable[..., Any])
_ACTIVE: list[Hardware] = []  # the hardware whose instruction ops are registered, per use


def clear_registry_caches(added: list[InstructionOp], removed: list[InstructionOp]) -> None:
    """Forget everything computed from the registry's contents; keep the tables built
    from it at import in step (the verify generators draw an instruction op from its
    composition, as any fused op)."""
    from eqsat.egraph import encoding
    from eqsat.rules import loader

    opcases = sys.modules.get("eqsat.verify.opcases")
    if opcases is not None:
        for op in removed:
            opcases.OP_GENERATORS.pop(op.name, None)
        opcases.OP_GENERATORS.update({op.name: opcases.FUSED for op in added})

    for fn in (
        encoding.op_of_constructor,
        encoding.program_prelude,
        loader.egglog_symbols,
        loader.prelude_rule_names,
        loader.checked_text,
    ):
        fn.cache_clear()


@contextmanager
def instructions_in_use(hw: Hardware | None) -> Iterator[list[InstructionOp]]:
    """Register hw's instruction ops for the duration (yields them)."""
    if hw is None or not hw.instructions:
        yield []
        return
    if _ACTIVE:
        if _ACTIVE[-1] != hw:
            raise UserError(
                f"hardware '{hw.name}' declares instructions while those of "
                f"'{_ACTIVE[-1].name}' are in use; use one hardware at a time"
            )
        _ACTIVE.append(hw)
        try:
            yield [REGISTRY[i.name] for i in hw.instructions]  # type: ignore[misc]
        finally:
            _ACTIVE.pop()
        return
    ops: list[InstructionOp] = []
    try:
        for op in derive_ops(hw.instructions):
            REGISTRY[op.name] = op  # derived in order: a later body may not use an earlier op
            ops.append(op)
        clear_registry_caches(ops, [])
        _ACTIVE.append(hw)
        yield ops
    finally:
        if _ACTIVE and _ACTIVE[-1] is hw:
            _ACTIVE.pop()
        for op in ops:
            if REGISTRY.get(op.name) is op:
                del REGISTRY[op.name]
        clear_registry_caches([], ops)


def instructions_in_use_for(param: str) -> Callable[[F], F]:
    """Decorate a function so that the hardware passed as its argument `param` has its
    instructions in use while it runs (the pipeline's entry points)."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            hw = signature.bind_partial(*args, **kwargs).arguments.get(param)
            with instructions_in_use(hw):
                return fn(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def hardware_of_spec(spec: str | Path | None) -> Hardware | None:
    """The hardware a --hw value names when it is a file (presets declare none)."""
    if spec is None or str(spec) in PRESETS:
        return None
    return load_hardware(spec)


def in_use() -> Hardware | None:
    """The hardware whose instructions are registered now, if any."""
    return _ACTIVE[-1] if _ACTIVE else None
