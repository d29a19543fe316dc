"""Typed errors of the extraction package, so callers (the CLI) can tell them apart."""

from __future__ import annotations


class ExtractError(Exception):
    """Base class of every error raised by eqsat.extract."""


class EGraphFormatError(ExtractError, ValueError):
    """A serialized e-graph is malformed; the message names the source and the fault."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


class InvalidExtractionError(ExtractError, ValueError):
    """A choice of nodes is not a valid term DAG (missing class, wrong class, cycle)."""


class NoTermError(ExtractError):
    """A root class has no finite-cost acyclic term, so nothing can be extracted."""
