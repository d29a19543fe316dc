"""Verify a collection of rules: every direction of every (selected) rule."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from eqsat.errors import UserError
from eqsat.rules import RuleCollection
from eqsat.verify.check import FAILED, DirectionResult, check_direction
from eqsat.verify.guards import hardware_facts
from eqsat.verify.instance import Direction, directions

DEFAULT_EXAMPLES = 100


@dataclass
class VerifyReport:
    results: list[DirectionResult]
    n_rules: int
    seconds: float

    @property
    def failed(self) -> list[DirectionResult]:
        return [r for r in self.results if r.status == FAILED]


def select(rules: RuleCollection, names: Iterable[str] = ()) -> list[Direction]:
    """Every direction, or those of the named rules (NAME or NAME-rev)."""
    wanted = set(names)
    out = []
    for rule in rules:
        for d in directions(rule):
            if not wanted or d.name in wanted or rule.name in wanted:
                out.append(d)
    unknown = wanted - {d.name for d in out} - {d.rule.name for d in out}
    if unknown:
        raise UserError(f"no rule named {', '.join(sorted(unknown))} in the loaded files")
    return out


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


# What forked workers check: set by verify_rules before the pool starts.
_WORK: tuple[list[Direction], int, int, dict] | None = None


def _check_one(i: int) -> DirectionResult:
    assert _WORK is not None
    chosen, examples, seed, facts = _WORK
    return check_direction(chosen[i], examples, seed, facts)


def verify_rules(
    rules: RuleCollection,
    examples: int = DEFAULT_EXAMPLES,
    seed: int = 0,
    names: Iterable[str] = (),
    hardware: str = "edge",
    on_result: Callable[[DirectionResult], None] | None = None,
    jobs: int = 1,
) -> VerifyReport:
    """Check each selected direction with `examples` hypothesis examples, in `jobs`
    worker processes (results arrive in rule order either way)."""
    global _WORK
    chosen = select(rules, names)
    facts = hardware_facts(hardware)
    start = time.perf_counter()
    results = []
    _WORK = (chosen, examples, seed, facts)
    try:
        if jobs > 1 and len(chosen) > 1 and "fork" in multiprocessing.get_all_start_methods():
            with multiprocessing.get_context("fork").Pool(min(jobs, len(chosen))) as pool:
                stream = pool.imap(_check_one, range(len(chosen)))
                for result in stream:
                    results.append(result)
                    if on_result is not None:
                        on_result(result)
        else:
            for i in range(len(chosen)):
                results.append(_check_one(i))
                if on_result is not None:
                    on_result(results[-1])
    finally:
        _WORK = None
    n_rules = len({d.rule.name for d in chosen})
    return VerifyReport(results, n_rules, time.perf_counter() - start)
