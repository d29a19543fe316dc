"""A phase-ordered pipeline: each rules file alone, extracted, then the next.

This is what a conventional pass pipeline does (and what equality saturation is meant
to beat): every phase sees only the single program the previous phase chose, so a
rewrite that pays off only after another phase's rewrite (a layout change that
enables a fusion, an algebraic step that exposes a fused pattern) is lost when the
earlier phase's extraction does not keep it. Each phase is a full `optimize` run:
saturate with that file's ruleset alone, extract the cheapest program under the
hardware cost model, rebuild the graph; like `optimize`, a phase never hands back a
program its cost model prices above its input.

Used by bench/peers.py as the "fixed-order" baseline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eqsat.config import DEFAULT_LIMITS, Limits
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, ProgressFn, optimize
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from hwsim.hardware import Hardware

# The order a phase-ordered compiler runs its passes in: simplify, clean up, choose
# layouts, choose each convolution's algorithm (Winograd or direct: its rules match a
# bare conv2d, so after fusion they would find none), fuse, tile. Rule files not named
# here run after these, by name.
PHASE_ORDER = ("algebra", "dce", "layout", "winograd", "fusion", "tiling")


@dataclass(frozen=True)
class PhaseStep:
    """One phase: its rules file and the program it extracted."""

    name: str
    cycles_before: int  # cost-model estimate of the phase's input
    cycles_after: int  # ... and of the program it extracted
    ops: int  # non-leaf nodes of the extracted program
    egraph_nodes: int
    seconds: float
    kept_input: bool  # extraction found nothing cheaper than the phase's input


@dataclass
class PhasedResult:
    original: Graph
    graph: Graph
    steps: list[PhaseStep] = field(default_factory=list)

    @property
    def cycles_before(self) -> int:
        return self.steps[0].cycles_before if self.steps else 0

    @property
    def cycles_after(self) -> int:
        return self.steps[-1].cycles_after if self.steps else 0


def phase_files(rules_dir: str | Path = DEFAULT_RULES_DIR) -> list[Path]:
    """The rules files of `rules_dir` in phase order (PHASE_ORDER first, then the
    others by name)."""
    files = sorted(Path(rules_dir).glob("*.rules"))
    rank = {name: i for i, name in enumerate(PHASE_ORDER)}
    return sorted(files, key=lambda p: (rank.get(p.stem, len(rank)), p.stem))


def compile_phases(files: Sequence[str | Path]) -> list[tuple[str, CompiledRules]]:
    """Each file compiled on its own (approximate rules left out, as in `optimize`)."""
    return [(Path(f).stem, compile_rule_paths([f])) for f in files]


def optimize_phased(
    graph: Graph,
    phases: Sequence[tuple[str, CompiledRules]],
    hw: Hardware,
    limits: Limits = DEFAULT_LIMITS,
    extractor: str = "greedy",
    progress: ProgressFn | None = None,
) -> PhasedResult:
    """Run `phases` one after the other, extracting a program between phases."""
    say = progress or (lambda _msg: None)
    result = PhasedResult(original=graph, graph=graph)
    current = graph
    for name, rules in phases:
        t = time.perf_counter()
        run = optimize(current, rules, hw, limits, extractor)
        current = run.graph
        step = PhaseStep(
            name=name,
            cycles_before=run.before.cycles,
            cycles_after=run.after.cycles,
            ops=sum(1 for _, n in current if not n.is_leaf),
            egraph_nodes=run.egraph_nodes,
            seconds=time.perf_counter() - t,
            kept_input=run.kept_original,
        )
        result.steps.append(step)
        say(
            f"  phase {name}: {step.cycles_before:,} -> {step.cycles_after:,} est. cycles, "
            f"{step.ops} ops, {step.seconds:.2f} s"
        )
    result.graph = current
    return result


__all__ = [
    "PHASE_ORDER",
    "PhaseStep",
    "PhasedResult",
    "compile_phases",
    "optimize_phased",
    "phase_files",
]
