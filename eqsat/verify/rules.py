"""Verify a collection of rules: every direction of every (selected) rule."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
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


def _ignore_interrupts() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it terminates the pool); a worker
    that raised KeyboardInterrupt would print its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _interrupts_between_checks() -> Iterator[Callable[[], None]]:
    """Hypothesis registers a gc callback; a KeyboardInterrupt raised inside it is
    printed as "Exception ignored ... KeyboardInterrupt" and lost (the run goes on).
    So in this process a Ctrl-C is only recorded, and the function yielded raises it
    between two checks."""
    received: list[int] = []

    def raise_if_interrupted() -> None:
        if received:
            raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield raise_if_interrupted  # not ours to change
        return
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield raise_if_interrupted
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
            workers = min(jobs, len(chosen))
            context = multiprocessing.get_context("fork")
            with context.Pool(workers, initializer=_ignore_interrupts) as pool:
                stream = pool.imap(_check_one, range(len(chosen)))
                for result in stream:
                    results.append(result)
                    if on_result is not None:
                        on_result(result)
        else:
            with _interrupts_between_checks() as interrupted:
                for i in range(len(chosen)):
                    results.append(_check_one(i))
                    if on_result is not None:
                        on_result(results[-1])
                    interrupted()
    finally:
        _WORK = None
    n_rules = len({d.rule.name for d in chosen})
    return VerifyReport(results, n_rules, time.perf_counter() - start)
