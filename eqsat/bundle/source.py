"""The model a bundle is compiled from, instantiated at any value of its dimension."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from eqsat.bundle.axes import Where
from eqsat.bundle.errors import BundleError
from eqsat.fileio import load_arrays, params_file_for
from eqsat.fold import fold_constants
from eqsat.interpreter import param_scale, random_value
from eqsat.ir.graph import Graph
from frontend import check_model, model_dims, parse_model


@dataclass
class ModelSource:
    """Model text (with the arrays of its params file) and the other dimensions bound."""

    text: str
    file: str
    data: dict[str, np.ndarray] = field(default_factory=dict)  # params and external consts
    dims: dict[str, int] = field(default_factory=dict)  # the dimensions held fixed

    @classmethod
    def from_file(cls, path: str | Path, dims: dict[str, int] | None = None) -> ModelSource:
        path = Path(path)
        if path.suffix == ".onnx":
            raise BundleError(
                f"{path}: bundles are compiled from the text format; convert the ONNX file "
                "with `eqsat import` first (keeping the dimension symbolic)"
            )
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise BundleError(f"{path}: cannot read ({e})") from None
        pfile = params_file_for(path)
        data = dict(load_arrays(pfile)) if pfile.is_file() else {}
        return cls(text, str(path), data, dict(dims or {}))

    @cached_property
    def model(self):
        return parse_model(self.text, self.file)

    @property
    def where(self) -> Where:
        return Where.of(self.model)

    def dim_names(self) -> set[str]:
        return set(model_dims(self.model))

    def graph(self, dim: str, value: int) -> Graph:
        """The checked, constant-folded model with `dim` bound to `value` (as every
        command loads a model)."""
        return fold_constants(
            check_model(
                self.model, {**self.dims, dim: value}, self.data, f"the arrays of {self.file}"
            )
        )

    def fill_params(self, graph: Graph, seed: int) -> None:
        """Draw the params the arrays do not hold (seeded, independent of the inputs'
        shapes, so every bucket and the reference share them)."""
        rng = np.random.default_rng(seed)
        for _, node in graph.params:
            name = str(node.attr("name"))
            value = random_value(node.type, rng, param_scale(node.type.shape))
            self.data.setdefault(name, value)

    def params(self, graph: Graph) -> dict[str, np.ndarray]:
        names = {str(n.attr("name")) for _, n in graph.params}
        return {k: v for k, v in self.data.items() if k in names}


def as_stored(graph: Graph, where: str = "<bundle>") -> Graph:
    """`graph` as the bundle file gives it back (printed as model text and checked
    again): statement names come from the printer, so the program lowered at compile
    time and after loading is the same, names included."""
    from frontend import graph_to_model, print_model
    from frontend.from_graph import external_constants

    text = print_model(graph_to_model(graph))
    return check_model(parse_model(text, where), {}, external_constants(graph), where)
