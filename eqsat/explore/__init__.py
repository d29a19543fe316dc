"""Hardware design-space exploration: one model compiled and simulated (or priced) on
many variants of a hardware description (`eqsat explore`)."""

from eqsat.explore.pareto import pareto_front
from eqsat.explore.points import Point, evaluate_point
from eqsat.explore.sweep import expand_sweeps, parse_sweep

__all__ = ["Point", "evaluate_point", "expand_sweeps", "pareto_front", "parse_sweep"]
