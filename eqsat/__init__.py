"""eqsat: an ML graph compiler built on equality saturation.

The command line (`eqsat --help`) is the main interface; from Python, models come in
through `eqsat.import_onnx` and `eqsat.from_torch` (which needs torch, the `[zoo]`
extra) and are compiled by the commands' library functions.
"""

from __future__ import annotations

from typing import Any


def from_torch(module: Any, example_inputs: Any, dynamic: Any = None, **options: Any) -> Any:
    """Export a torch.nn.Module through torch.onnx and import it (an ImportedModel:
    `.model`, `.arrays`, `.save(path)`). `dynamic`: {input: {axis: "NAME"}}."""
    from frontend.torch_export import from_torch as run

    return run(module, example_inputs, dynamic, **options)


def import_onnx(source: Any, dims: Any = None, **options: Any) -> Any:
    """Import an ONNX file or ModelProto (see frontend.onnx.import_onnx)."""
    from frontend.onnx import import_onnx as run

    return run(source, dims, **options)


__all__ = ["from_torch", "import_onnx"]
