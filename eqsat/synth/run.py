"""The synthesis pipeline: enumerate -> fingerprint -> candidates -> choose -> file."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from eqsat.synth.derive import Prover
from eqsat.synth.emit import rule_file
from eqsat.synth.enumerate import Enumeration, Progress, enumerate_terms
from eqsat.synth.fingerprint import Fingerprinter, int_capable
from eqsat.synth.select import Kept, Selection, candidates, select
from eqsat.synth.shapes import SynthError, signature

DEFAULT_SIZE = 3
DEFAULT_MATRICES = ("a", "b", "c")
DEFAULT_SCALARS = ("s",)


@dataclass(frozen=True)
class SynthConfig:
    ops: tuple[str, ...]
    size: int = DEFAULT_SIZE
    matrices: tuple[str, ...] = DEFAULT_MATRICES
    scalars: tuple[str, ...] = DEFAULT_SCALARS
    seed: int = 0
    time_budget: float | None = None  # seconds for enumeration and selection together

    def ranks(self) -> dict[str, int]:
        return {**{v: 2 for v in self.matrices}, **{v: 0 for v in self.scalars}}

    def check(self) -> None:
        if not self.ops:
            raise SynthError("no ops given")
        for op in self.ops:
            signature(op)  # raises for unknown ops and ops outside the domain
        if self.size < 1:
            raise SynthError(f"the term size must be at least 1, got {self.size}")
        names = list(self.matrices) + list(self.scalars)
        if not self.matrices:
            raise SynthError("at least one matrix variable is needed")
        if len(set(names)) != len(names):
            raise SynthError(f"variable names must be distinct: {', '.join(names)}")
        for v in names:
            if not (v.isidentifier() and v[0].islower() and v != "_"):
                raise SynthError(f"variable '{v}' must be a lowercase name")
        if self.time_budget is not None and not self.time_budget > 0:
            raise SynthError(f"the time budget must be positive, got {self.time_budget}")


@dataclass
class SynthResult:
    config: SynthConfig
    enumeration: Enumeration
    selection: Selection
    rules: list[tuple[str, Kept]] = field(default_factory=list)  # final names
    seconds: float = 0.0
    prover: Prover | None = None

    @property
    def found(self) -> int:
        """Candidate rules: distinct (up to renaming) pairs of terms with one fingerprint."""
        return self.selection.candidates

    @property
    def complete(self) -> bool:
        return self.enumeration.complete and self.selection.complete

    def note(self) -> str | None:
        if not self.enumeration.complete:
            return (
                f"stopped by the time budget while enumerating terms of size "
                f"{self.enumeration.last_size}; rules were chosen from the terms enumerated"
            )
        if not self.selection.complete:
            return (
                f"stopped by the time budget after {self.selection.checked} of "
                f"{self.selection.candidates} candidates; the rules kept so far are written"
            )
        return None

    def text(self, command: str) -> str:
        c = self.config
        sel = self.selection
        header = [
            "Rules synthesized by enumeration (Ruler-style): `eqsat rules synthesize`.",
            f"command: {command}",
            f"ops: {', '.join(c.ops)}; term size <= {c.size} op applications; matrix "
            f"variables {', '.join(c.matrices)}"
            + (f", scalar variables {', '.join(c.scalars)}" if c.scalars else "")
            + f"; seed {c.seed}",
            f"terms enumerated: {self.enumeration.terms}; fingerprint classes: "
            f"{len(self.enumeration.classes)}",
            f"candidates found: {self.found}; derivable from kept rules: {sel.derivable}; "
            f"refuted (float screen or verify-rules): {len(sel.unsound)}; dropped as derived by later "
            f"rules: {len(sel.redundant)}; kept: {len(self.rules)}",
            f"time: {self.seconds:.1f} s",
            "Guards give the shape domain a rule was found and verified in (rank 2 matrices,",
            "rank 0 scalars, dims the terms force equal); a rule without guards passed",
            "verify-rules for every shape it generates.",
        ]
        note = self.note()
        if note:
            header.append(f"NOTE: {note}")
        return rule_file(header, [k.rule.text(name, k.guarded) for name, k in self.rules])


def synthesize(
    config: SynthConfig,
    on_enumerate: Progress | None = None,
    on_select: Callable[[int, int, int], None] | None = None,
) -> SynthResult:
    """Run the whole synthesis (raises SynthError for a bad configuration)."""
    from eqsat.synth.emit import rule_name

    config.check()
    start = time.perf_counter()
    deadline = start + config.time_budget if config.time_budget is not None else None
    ranks = config.ranks()
    use_ints = all(int_capable(op) for op in config.ops)
    fingerprinter = Fingerprinter(ranks, config.seed, use_ints)
    enumeration = enumerate_terms(
        config.ops, ranks, config.size, fingerprinter, deadline, on_enumerate
    )
    pending, not_rewrites = candidates(enumeration.classes, ranks)
    prover = Prover()
    selection = select(pending, config.seed, prover, deadline, on_select)
    selection.not_rewrites = not_rewrites
    result = SynthResult(config, enumeration, selection, prover=prover)
    result.rules = [(rule_name(i + 1, k.rule), k) for i, k in enumerate(selection.kept)]
    result.seconds = time.perf_counter() - start
    return result


def parse_ops(text: str) -> tuple[str, ...]:
    ops: Sequence[str] = [o.strip() for o in text.split(",") if o.strip()]
    return tuple(dict.fromkeys(ops))
