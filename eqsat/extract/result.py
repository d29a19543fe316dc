"""The result every extractor returns, so the CLI and the compiler treat them alike."""

from __future__ import annotations

from dataclasses import dataclass

#: Status values: how much an extraction's cost can be trusted.
HEURISTIC = "heuristic"  # greedy: valid, no optimality claim
OPTIMAL = "optimal"  # ILP proved optimality
TIME_LIMIT = "time_limit"  # ILP hit its limit; best integer solution found is returned
FELL_BACK = "fell_back_to_greedy"  # ILP gave nothing better; greedy's extraction is returned
OUT_OF_TIME = "out_of_time"  # the optimization's time ran out first; nothing was extracted


@dataclass(frozen=True)
class Extraction:
    """A term DAG chosen from an e-graph.

    ``choice`` maps each class the DAG uses (and only those) to its chosen node;
    ``order`` lists the same classes children-first, the order to rebuild terms in.
    """

    choice: dict[str, str]
    dag_cost: float
    roots: tuple[str, ...]
    order: tuple[str, ...]
    extractor: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    #: A proven lower bound on the optimum (ILP); equals ``dag_cost`` when proved optimal.
    lower_bound: float | None = None

    @property
    def gap(self) -> float | None:
        """Relative optimality gap (dag_cost - lower_bound) / |dag_cost|; None if unknown."""
        if self.lower_bound is None:
            return None
        if self.dag_cost == self.lower_bound:
            return 0.0
        return (self.dag_cost - self.lower_bound) / max(abs(self.dag_cost), 1e-12)

    @property
    def nodes(self) -> list[str]:
        """Chosen node ids, children first."""
        return [self.choice[c] for c in self.order]
