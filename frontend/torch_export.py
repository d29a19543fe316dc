"""From PyTorch to eqsat without a detour: export through torch.onnx, then import.

`from_torch(module, example_inputs, dynamic=...)` exports to a temporary ONNX file and
imports it; the example inputs' sizes become the defaults of the dynamic dimensions
(recorded in the file's metadata as `eqsat.dim.NAME`). `exported_program_to_onnx`
does the same for a program saved with `torch.export.save` (`eqsat import x.pt2`).
torch is needed only here (the `[zoo]` extra).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqsat.errors import UserError

OPSET = 18

# dynamic: per input (by position or name), the axes that vary and their names, e.g.
# {"input_ids": {0: "B", 1: "S"}}; `True` means axis 0 of every input is "B".
Dynamic = Mapping[int | str, Mapping[int, str]] | bool | None


def _torch():
    try:
        import torch
    except ImportError:
        raise UserError("importing from PyTorch needs torch (pip install 'eqsat[zoo]')") from None
    return torch


def _names(module, example_inputs: Sequence) -> list[str]:
    import inspect

    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input_{i}" for i in range(len(example_inputs))]


def _dynamic_axes(names: list[str], example_inputs: Sequence, dynamic: Dynamic) -> dict:
    if not dynamic:
        return {}
    if dynamic is True:
        return {
            n: {0: "B"} for n, x in zip(names, example_inputs, strict=True) if getattr(x, "ndim", 0)
        }
    out = {}
    for key, axes in dynamic.items():  # type: ignore[union-attr]
        name = names[key] if isinstance(key, int) else key
        if name not in names:
            raise UserError(
                f"from_torch: dynamic names input '{name}', the inputs are {', '.join(names)}"
            )
        out[name] = dict(axes)
    return out


def export_onnx(
    module: Any,
    example_inputs: Sequence,
    path: str | Path,
    dynamic: Dynamic = None,
    exporter: str = "torchscript",
    opset: int = OPSET,
) -> Path:
    """torch.onnx.export `module` to `path` at `opset`, with the dimension defaults."""
    torch = _torch()
    import onnx

    example_inputs = tuple(example_inputs)
    names = _names(module, example_inputs)
    axes = _dynamic_axes(names, example_inputs, dynamic)
    module.eval()
    with torch.no_grad():
        if exporter == "dynamo":
            shapes = {
                n: {a: torch.export.Dim(d) for a, d in axes[n].items()} if n in axes else None
                for n in names
            }
            torch.onnx.export(
                module,
                example_inputs,
                str(path),
                dynamo=True,
                input_names=names,
                dynamic_shapes=shapes,
                opset_version=opset,
                verbose=False,
            )
        elif exporter == "torchscript":
            torch.onnx.export(
                module,
                example_inputs,
                str(path),
                dynamo=False,
                input_names=names,
                dynamic_axes=axes or None,
                opset_version=opset,
            )
        else:
            raise UserError(
                f"from_torch: exporter must be 'torchscript' or 'dynamo', got '{exporter}'"
            )
    model = onnx.load(str(path), load_external_data=False)
    external = _external_bytes(model, Path(path))
    inline = external < INLINE_LIMIT
    if inline and external:  # small enough for one self-contained file
        onnx.load_external_data_for_model(model, str(Path(path).parent))
    for node in model.graph.node:  # the dynamo exporter's stack traces: not needed here
        del node.metadata_props[:]
    defaults: dict[str, int] = {}
    for name, x in zip(names, example_inputs, strict=True):
        for axis, dim in axes.get(name, {}).items():
            defaults[dim] = int(x.shape[axis])
    for dim, value in defaults.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = f"eqsat.dim.{dim}", str(value)
    onnx.save(model, str(path))  # external data, if kept, stays where it is referenced
    if inline:
        Path(str(path) + ".data").unlink(missing_ok=True)
    return Path(path)


# Weights up to this size are stored inside the .onnx file (protobuf's limit is 2 GiB).
INLINE_LIMIT = 1 << 30


def _external_bytes(model, path: Path) -> int:
    from onnx import external_data_helper

    files = {
        external_data_helper.ExternalDataInfo(t).location
        for t in model.graph.initializer  # where the exporters put every weight
        if external_data_helper.uses_external_data(t)
    }
    return sum((path.parent / f).stat().st_size for f in files if (path.parent / f).exists())


def from_torch(
    module: Any,
    example_inputs: Sequence,
    dynamic: Dynamic = None,
    *,
    exporter: str = "torchscript",
    symbolic: bool = True,
    opset: int = OPSET,
):
    """Export `module` on `example_inputs` and import it: an ImportedModel (its
    `.save(path)` writes PATH and PATH.params.npz)."""
    from frontend.onnx import import_onnx

    fd, tmp = tempfile.mkstemp(suffix=".onnx")
    os.close(fd)
    try:
        export_onnx(module, example_inputs, tmp, dynamic, exporter, opset)
        return import_onnx(tmp, symbolic=symbolic, file=f"{type(module).__name__} (exported)")
    finally:
        Path(tmp).unlink(missing_ok=True)


def exported_program_to_onnx(path: str | Path) -> Path:
    """A program saved by torch.export.save -> a temporary ONNX file (caller deletes)."""
    torch = _torch()
    try:
        program = torch.export.load(str(path))
    except Exception as err:
        raise UserError(
            f"{path}: not a torch.export program ({type(err).__name__}: {err})"
        ) from None
    fd, tmp = tempfile.mkstemp(suffix=".onnx")
    os.close(fd)
    try:
        torch.onnx.export(program, (), tmp, dynamo=True, opset_version=OPSET)
    except Exception as err:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(
            f"{path}: torch.onnx could not export it ({type(err).__name__}: {err})"
        ) from None
    return Path(tmp)


__all__ = ["export_onnx", "exported_program_to_onnx", "from_torch"]
