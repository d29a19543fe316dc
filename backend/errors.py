"""Errors of the backend: a graph or target it cannot lower."""

from __future__ import annotations

from eqsat.errors import UserError


class BackendError(UserError):
    """The graph cannot be lowered for this hardware (e.g. a row does not fit SRAM)."""
