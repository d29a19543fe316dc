"""Models as files: a model text (or an ONNX graph) and the params file next to it.

A model `NAME.model` may have its tensors in `NAME.params.npz` beside it: the values of
its params (weights) and of its `external` consts. Every command finds that file
without a flag. Params it does not hold are drawn from the seed as before, so a model
written by hand still runs. Loading binds the symbolic dimensions and folds what
depends only on the model's constants (eqsat/fold.py), so every command sees the same
graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqsat.errors import UserError
from eqsat.fileio import (
    PARAMS_SUFFIX,
    ArraySpec,
    load_arrays,
    params_file_for,
    spec_for,
    write_model_files,
)
from eqsat.fold import fold_constants
from eqsat.interpreter import check_binding, random_bindings
from eqsat.ir.graph import Graph
from frontend import ast, check_model, graph_to_model, parse_model_file, print_model
from frontend.from_graph import external_constants


@dataclass
class LoadedModel:
    """A checked model with its dimensions bound, and the values its files hold."""

    model: ast.Model
    graph: Graph
    params: dict[str, np.ndarray] = field(default_factory=dict)  # by param name
    params_file: Path | None = None
    notes: list[str] = field(default_factory=list)  # what loading decided, for the user
    # For an ONNX file: the import (ONNX input/output names and types).
    onnx: Any = None

    def input_specs(self) -> dict[str, ArraySpec]:
        """What an --inputs file may hold: each input and param by name and, for an ONNX
        model, each ONNX input by its ONNX name (any numbers for a float input: the
        import converts them)."""
        types = self.graph.bound_names()
        specs = {name: spec_for(t) for name, t in types.items()}
        for io in self.onnx.inputs if self.onnx is not None else ():
            t = types.get(io.name)
            if t is None:  # an input the model does not use: any shape, numbers
                specs.setdefault(io.onnx_name, ArraySpec(None))
            else:
                specs[io.onnx_name] = ArraySpec(t.shape, "fiub" if t.dtype.is_float else "iub")
        return specs

    def bindings(
        self, seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None, where: str = ""
    ) -> dict[str, np.ndarray]:
        """Values for every input and param: seeded, then the params file's, then
        `inputs` (from --inputs) where given."""
        out = random_bindings(self.graph, seed)
        out.update(self.params)
        if inputs and self.onnx is not None:
            # By ONNX input name, in ONNX types (int64 ids...): converted and checked.
            onnx_names = {io.onnx_name for io in self.onnx.inputs}
            given = {k: v for k, v in inputs.items() if k in onnx_names}
            out.update(self.onnx.feeds(given, where or "inputs"))
            inputs = {k: v for k, v in inputs.items() if k not in onnx_names}
        if inputs:
            expected = self.graph.bound_names()
            for name, value in inputs.items():
                if name in expected:
                    out[name] = check_binding(name, value, expected[name], where)
        return out


def load_model(path: str | Path, dims: Mapping[str, int] | None = None) -> LoadedModel:
    """Parse (or import) and check a model file with its params file, if any."""
    path = Path(path)
    if path.suffix == ".onnx":
        from frontend.onnx import import_onnx

        imported = import_onnx(path, dims, symbolic=False)
        if imported.model is None:
            raise UserError(
                f"{path}: every output is empty (zero-sized): there is nothing to compute"
            )
        model, data, params_file, notes = imported.model, imported.arrays, None, imported.notes
    else:
        imported = None
        model = parse_model_file(path)
        params_file = params_file_for(path)
        data = load_arrays(params_file) if params_file.is_file() else None
        notes = []
    shown = str(params_file) if params_file else f"the arrays of {path}"
    graph = check_model(model, dims, data, shown)
    params = _param_values(graph, data or {}, shown)
    return LoadedModel(
        model,
        fold_constants(graph),
        params,
        params_file if data is not None else None,
        notes,
        imported,
    )


def _param_values(graph: Graph, data: Mapping[str, np.ndarray], where: str) -> dict:
    expected = {str(n.attr("name")): n.type for _, n in graph.params}
    return {
        name: check_binding(name, value, expected[name], where)
        for name, value in data.items()
        if name in expected
    }


def save_model(path: str | Path, graph: Graph, params: Mapping[str, np.ndarray]) -> Path | None:
    """Write `graph` as model text at `path` and, when it has tensors to keep (values of
    its params in `params`, external literals), NAME.params.npz beside it. Returns the
    params file written, if any."""
    live = graph.live()
    used = {str(n.attr("name")) for i, n in graph.params if live[i]}
    arrays = {k: np.asarray(v) for k, v in params.items() if k in used}
    arrays.update(external_constants(graph))
    return write_model_files(path, print_model(graph_to_model(graph)), arrays)


__all__ = [
    "PARAMS_SUFFIX",
    "LoadedModel",
    "load_model",
    "params_file_for",
    "save_model",
    "write_model_files",
]
