"""Extraction: choose the cheapest term DAG from a serialized e-graph.

Works on the egraph-serialize JSON format (egglog's ``serialize().to_json()``, the
format of extraction-gym), so it also runs on e-graphs that did not come from us.
Costs are DAG costs: a shared subterm is paid once.
"""

from eqsat.extract.api import EXTRACTORS, extract
from eqsat.extract.dag import dag_cost
from eqsat.extract.egraph import EGraph, NodeSpec, UnknownClassError
from eqsat.extract.errors import (
    EGraphFormatError,
    ExtractError,
    InvalidExtractionError,
    NoTermError,
)
from eqsat.extract.greedy import greedy_extract
from eqsat.extract.ilp import ilp_extract
from eqsat.extract.result import FELL_BACK, HEURISTIC, OPTIMAL, TIME_LIMIT, Extraction
from eqsat.extract.serialized import load_egraph

__all__ = [
    "EXTRACTORS",
    "FELL_BACK",
    "HEURISTIC",
    "OPTIMAL",
    "TIME_LIMIT",
    "EGraph",
    "EGraphFormatError",
    "ExtractError",
    "Extraction",
    "InvalidExtractionError",
    "NoTermError",
    "NodeSpec",
    "UnknownClassError",
    "dag_cost",
    "extract",
    "greedy_extract",
    "ilp_extract",
    "load_egraph",
]
