"""One entry point that picks an extractor by name, for the CLI and the pipeline."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from eqsat.extract.egraph import EGraph
from eqsat.extract.errors import ExtractError
from eqsat.extract.greedy import greedy_extract
from eqsat.extract.ilp import ilp_extract
from eqsat.extract.result import Extraction

EXTRACTORS = ("greedy", "ilp")


def extract(
    egraph: EGraph,
    extractor: str = "greedy",
    roots: Iterable[str] | None = None,
    *,
    time_limit: float | None = 60.0,
    tick: Callable[[], None] | None = None,
    joint: bool = False,
    seeds: Sequence[Mapping[str, str]] = (),
) -> Extraction:
    """Extract with ``extractor`` ("greedy", the default, or "ilp") from ``roots``.

    ``tick``: called as extraction goes (a deadline check that may raise). ``joint``:
    greedy's local search also moves classes together onto a shared child
    (eqsat.extract.improve). ``seeds``: known extractions (class id -> node id, e.g.
    the input program) greedy's local search also starts from; the cheapest wins."""
    if extractor == "greedy":
        return greedy_extract(egraph, roots, tick, joint=joint, seeds=seeds)
    if extractor == "ilp":
        return ilp_extract(egraph, roots, time_limit=time_limit, tick=tick)
    raise ExtractError(f"unknown extractor {extractor!r}; choose one of {', '.join(EXTRACTORS)}")
