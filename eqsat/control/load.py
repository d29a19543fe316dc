"""Models with regions as files: the text (or ONNX) and the params file beside it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqsat.control.check import check_control_model, has_regions
from eqsat.control.program import ControlProgram
from eqsat.fileio import ArraySpec, load_arrays, params_file_for, spec_for
from eqsat.interpreter import check_binding, param_scale, random_value
from frontend import ast, parse_model_file


@dataclass
class LoadedControl:
    model: ast.Model
    program: ControlProgram
    params: dict[str, np.ndarray] = field(default_factory=dict)
    onnx: Any = None  # the ImportedModel of an ONNX file

    def input_specs(self) -> dict[str, ArraySpec]:
        specs = {name: spec_for(t) for name, t in self.program.bound_names().items()}
        for io in self.onnx.inputs if self.onnx is not None else ():
            t = self.program.bound_names().get(io.name)
            if t is not None:
                specs[io.onnx_name] = ArraySpec(t.shape, "fiub" if t.dtype.is_float else "iub")
        return specs

    def bindings(
        self, seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None, where: str = ""
    ) -> dict[str, np.ndarray]:
        """Seeded inputs and params, then the params file's, then `inputs`."""
        out = random_control_bindings(self.program, seed)
        out.update(self.params)
        given = dict(inputs or {})
        if self.onnx is not None:
            names = {io.onnx_name for io in self.onnx.inputs}
            out.update(self.onnx.feeds({k: v for k, v in given.items() if k in names}, where))
            given = {k: v for k, v in given.items() if k not in names}
        types = self.program.bound_names()
        for name, value in given.items():
            if name in types:
                out[name] = check_binding(name, value, types[name], where)
        return out


def random_control_bindings(program: ControlProgram, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded values for every input (standard normal, integers in [-1000, 1000]) and
    param (scaled normal), as eqsat.interpreter.random_bindings draws them."""
    rng = np.random.default_rng(seed)
    out = {name: random_value(t, rng) for name, t in program.inputs.items()}
    for name, t in program.params.items():
        out[name] = random_value(t, rng, param_scale(t.shape))
    return out


def read_model(path: str | Path, dims: Mapping[str, int] | None = None):
    """(syntax tree, arrays, where the arrays come from, ONNX import or None)."""
    path = Path(path)
    if path.suffix == ".onnx":
        from frontend.onnx import import_onnx

        imported = import_onnx(path, dims, symbolic=False)
        return imported.model, imported.arrays, f"the arrays of {path}", imported
    model = parse_model_file(path)
    params_file = params_file_for(path)
    data = load_arrays(params_file) if params_file.is_file() else None
    return model, data, str(params_file), None


def file_has_regions(path: str | Path, dims: Mapping[str, int] | None = None) -> bool:
    """Whether a model file holds `if`/`loop` regions (an ONNX file: If, Loop or Scan);
    False for a file that is not a readable model."""
    path = Path(path)
    if path.suffix in (".asm", ".eqsb") or not path.is_file():
        return False
    try:
        if path.suffix == ".onnx":
            return bool(onnx_op_types(path) & {"If", "Loop", "Scan"})
        return has_regions(parse_model_file(path))
    except Exception:  # not readable as a model: the command's own loading says why
        return False


def onnx_op_types(path: str | Path) -> set[str]:
    """The op types of an ONNX file's top-level nodes, read from the protobuf wire
    format without loading the file: initializers (most of a model's bytes) are
    skipped, so this takes milliseconds where onnx.load of a 2 GB model takes seconds."""
    import mmap

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        out: set[str] = set()
        for field, span in _fields(buf, 0, len(buf)):
            if field == 7 and span is not None:  # ModelProto.graph
                for gfield, gspan in _fields(buf, *span):
                    if gfield == 1 and gspan is not None:  # GraphProto.node
                        for nfield, nspan in _fields(buf, *gspan):
                            if nfield == 4 and nspan is not None:  # NodeProto.op_type
                                out.add(bytes(buf[nspan[0] : nspan[1]]).decode("utf-8", "replace"))
        return out


def _varint(buf, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("bad varint")


def _fields(buf, start: int, end: int):
    """(field number, (start, end) of a length-delimited value or None) of a message."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        kind = key & 7
        if kind == 0:
            _, pos = _varint(buf, pos)
            yield key >> 3, None
        elif kind == 1:
            pos += 8
        elif kind == 2:
            n, pos = _varint(buf, pos)
            if pos + n > end:
                raise ValueError("truncated field")
            yield key >> 3, (pos, pos + n)
            pos += n
        elif kind == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {kind}")


def load_control(path: str | Path, dims: Mapping[str, int] | None = None) -> LoadedControl:
    model, data, where, imported = read_model(path, dims)
    program = check_control_model(model, dims, data, where)
    params = {
        name: check_binding(name, value, program.params[name], where)
        for name, value in (data or {}).items()
        if name in program.params
    }
    return LoadedControl(model, program, params, imported)
