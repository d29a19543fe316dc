"""Parse and verify accel MLIR in xDSL against the dialect's IRDL definition."""

from __future__ import annotations

import functools

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Dialect
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

from . import IRDL_PATH
from .xdsl_irdl import load_irdl_dialects


class AccelMlirError(Exception):
    """Text that does not parse, or an op that breaks the accel dialect's IRDL rules."""


@functools.cache
def accel_dialect() -> Dialect:
    """The accel dialect as xDSL classes, read from accel.irdl.mlir."""
    (dialect,) = load_irdl_dialects(IRDL_PATH)
    return dialect


def accel_context() -> Context:
    """An xDSL context that knows builtin, func and the accel dialect (nothing else:
    an unknown op is an error)."""
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, accel_dialect()):
        ctx.load_dialect(dialect)
    return ctx


def parse_accel_mlir(text: str, name: str = "<accel-mlir>") -> ModuleOp:
    """Parse accel MLIR text and verify every op (func's and accel's rules). An op that
    breaks a rule is named in the error by its position in its block."""
    try:
        module = Parser(accel_context(), text, name).parse_module()
    except (ParseError, DiagnosticException) as err:
        raise AccelMlirError(f"{name}: {err}") from err
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as err:
            block = op.parent_block()
            where = f"op {block.get_operation_index(op) + 1} " if block is not None else ""
            message = " ".join(str(err).split()) or type(err).__name__
            raise AccelMlirError(f"{name}: {where}'{op.name}': {message}") from err
    return module
