"""Reading an ONNX file as untrusted data.

The file is parsed without following its external-data references first; each
reference must name a file inside the model's own folder (no absolute paths, no
`..`), and the total size is bounded before anything is loaded. The opset of the
converters implement opsets 13 to 21, and older versions of each op back to where its
meaning last changed (frontend/onnx/convert: `since`); a node older than that is
reported at the node.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from onnx import external_data_helper

from frontend.onnx.errors import OnnxImportError

MIN_OPSET = 1
# Refuse protobufs and external data beyond this (EQSAT_ONNX_MAX_BYTES overrides).
MAX_BYTES = int(os.environ.get("EQSAT_ONNX_MAX_BYTES", 16 << 30))


def read_model(path: str | Path) -> onnx.ModelProto:
    path = Path(path)
    shown = str(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise OnnxImportError(shown, f"cannot read the file ({err.strerror})") from None
    if size > MAX_BYTES:
        raise OnnxImportError(shown, f"the file is {size:,} bytes, over the limit of {MAX_BYTES:,}")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # protobuf raises DecodeError, RuntimeWarning...
        raise OnnxImportError(
            shown, f"not a readable ONNX model ({type(err).__name__}: {err})"
        ) from None
    _load_external(model, path, shown)
    _check(str(path), shown)  # by path: onnx checks in C++ without re-serializing
    check_opset(model, shown)
    return model


def _load_external(model: onnx.ModelProto, path: Path, shown: str) -> None:
    tensors = [
        t
        for t in external_data_helper._get_all_tensors(model)
        if external_data_helper.uses_external_data(t)
    ]
    if not tensors:
        return
    folder = path.resolve().parent
    total = 0
    for t in tensors:
        info = external_data_helper.ExternalDataInfo(t)
        location = Path(info.location)
        target = (folder / location).resolve()
        if location.is_absolute() or folder not in target.parents:
            raise OnnxImportError(
                shown,
                f"initializer '{t.name}' keeps its data in '{info.location}', outside the "
                "model's folder; eqsat only reads external data next to the model",
            )
        if not target.is_file():
            raise OnnxImportError(
                shown, f"initializer '{t.name}': external data '{info.location}' is missing"
            )
        total += info.length or target.stat().st_size
        if total > MAX_BYTES:
            raise OnnxImportError(shown, f"external data over the limit of {MAX_BYTES:,} bytes")
    try:
        external_data_helper.load_external_data_for_model(model, str(folder))
    except Exception as err:
        raise OnnxImportError(shown, f"cannot load external data ({err})") from None


def _check(model: onnx.ModelProto | str, shown: str) -> None:
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "invalid model"
        raise OnnxImportError(shown, f"the model does not pass onnx.checker: {first}") from None


def check_opset(model: onnx.ModelProto, shown: str) -> None:
    version = opset_version(model)
    if version < MIN_OPSET:
        raise OnnxImportError(
            shown,
            f"opset {version} is not supported (eqsat imports opsets {MIN_OPSET} and newer); "
            f"convert it with onnx.version_converter.convert_version(model, {MIN_OPSET})",
        )


def opset_version(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return MIN_OPSET
