"""The model frontend: text format, parser, semantic checks, printer."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eqsat.ir.graph import Graph
from frontend.ast import Model
from frontend.checker import check_model, model_dims
from frontend.from_graph import graph_to_model
from frontend.parser import parse_model, parse_model_file
from frontend.printer import print_model


def load_model(path: str | Path, dims: Mapping[str, int] | None = None) -> tuple[Model, Graph]:
    """Parse and check a model file; raises a ModelError (or UserError) on any mistake."""
    model = parse_model_file(path)
    return model, check_model(model, dims)


__all__ = [
    "Model",
    "check_model",
    "graph_to_model",
    "load_model",
    "model_dims",
    "parse_model",
    "parse_model_file",
    "print_model",
]
