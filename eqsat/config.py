"""Defaults of the optimizer, in one place. CLI flags override them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """When saturation stops (whichever comes first), as egg's runner does; the time
    and memory limits bound the whole optimization (saturation and extraction)."""

    iter_limit: int = 30
    node_limit: int = 100_000  # e-nodes of programs (the Op sort), not shapes
    time_limit: float = 30.0  # seconds of the whole optimization
    memory_limit: int | None = None  # bytes of resident memory; None: eqsat.budget's default

    def check(self) -> None:
        from eqsat.flags import UsageError

        if self.iter_limit < 1:
            raise UsageError(f"--iter-limit must be at least 1, got {self.iter_limit}")
        if self.node_limit < 1:
            raise UsageError(f"--node-limit must be at least 1, got {self.node_limit}")
        if not self.time_limit > 0:
            raise UsageError(f"--time-limit must be positive, got {self.time_limit}")
        if self.memory_limit is not None and self.memory_limit < 1:
            raise UsageError(f"--memory-limit must be positive, got {self.memory_limit}")


def limits_from_args(args: argparse.Namespace) -> Limits:
    """The limits --iter-limit, --node-limit, --time-limit and --memory-limit give (checked)."""
    limits = Limits(args.iter_limit, args.node_limit, args.time_limit, args.memory_limit)
    limits.check()
    return limits


DEFAULT_LIMITS = Limits()
DEFAULT_HARDWARE = "edge"
DEFAULT_EXTRACTOR = "greedy"
ILP_TIME_LIMIT = 60.0
