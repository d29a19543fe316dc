"""Errors of shape-polymorphic compiles: a model padding cannot keep exact, a bad bundle."""

from __future__ import annotations

from eqsat.errors import SourceError
from eqsat.flags import UsageError


class PaddingError(SourceError):
    """Padding the dimension cannot be made exact at this op (it mixes padded positions
    into valid ones in a way no mask undoes). Names the op and, when the model has
    positions, the statement's file:line:col with the source line."""

    def __init__(
        self,
        message: str,
        op: str,
        statement: str | None = None,
        file: str = "<model>",
        line: int = 0,
        col: int = 0,
        source: str | None = None,
    ):
        super().__init__(message, file, line, col, source)
        self.op = op
        self.statement = statement

    def __str__(self) -> str:
        if self.line <= 0:
            return f"{self.file}: error: {self.message}"
        return super().__str__()


class BundleError(UsageError):
    """A bundle file that is not one, is damaged, or does not fit the request (reported
    as a flag's error: `eqsat COMMAND: error: ...`)."""
