"""Reading an ONNX file as untrusted data.

The file is parsed without following its external-data references first; each
reference must name a file inside the model's own folder (no absolute paths, no
`..`, no symlink that resolves outside it), and sizes are bounded before anything is
parsed or loaded: the protobuf by MAX_PROTOBUF_BYTES (2 GiB - 1, protobuf's own limit
for one message; EQSAT_ONNX_MAX_BYTES lowers or raises it), the external data
together by MAX_EXTERNAL_BYTES (16 GiB; EQSAT_ONNX_MAX_EXTERNAL_BYTES). The opset of the
converters implement opsets 13 to 21, and older versions of each op back to where its
meaning last changed (frontend/onnx/convert: `since`); a node older than that is
reported at the node.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from onnx import external_data_helper

from eqsat.errors import UserError
from frontend.onnx.errors import OnnxImportError

MIN_OPSET = 1
MAX_PROTOBUF_BYTES = (1 << 31) - 1
MAX_EXTERNAL_BYTES = 16 << 30


def _limit(variable: str, default: int) -> int:
    """A byte limit from the environment (a plain integer), else `default`."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise UserError(f"{variable}={value[:40]!r}: expected a number of bytes")
    return int(value)


def protobuf_limit() -> int:
    return _limit("EQSAT_ONNX_MAX_BYTES", MAX_PROTOBUF_BYTES)


def external_limit() -> int:
    return _limit("EQSAT_ONNX_MAX_EXTERNAL_BYTES", MAX_EXTERNAL_BYTES)


def read_model(path: str | Path) -> onnx.ModelProto:
    path = Path(path)
    shown = str(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise OnnxImportError(shown, f"cannot read the file ({err.strerror})") from None
    limit = protobuf_limit()
    if size > limit:
        raise OnnxImportError(
            shown,
            f"the file is {size:,} bytes, over the limit of {limit:,} for one protobuf "
            "(keep large weights as external data, or set EQSAT_ONNX_MAX_BYTES)",
        )
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
    limit = external_limit()
    total = 0
    for t in tensors:
        try:
            info = external_data_helper.ExternalDataInfo(t)
            location = Path(info.location)
            target = (folder / location).resolve()
        except (ValueError, OSError) as err:  # a non-integer length, a NUL in the path
            raise OnnxImportError(
                shown, f"initializer {_shown_name(t.name)}: bad external data entry ({err})"
            ) from None
        if location.is_absolute() or folder not in target.parents:
            raise OnnxImportError(
                shown,
                f"initializer {_shown_name(t.name)} keeps its data in "
                f"{_shown_name(info.location)}, outside the "
                "model's folder; eqsat only reads external data next to the model",
            )
        if not target.is_file():
            raise OnnxImportError(
                shown,
                f"initializer {_shown_name(t.name)}: external data "
                f"{_shown_name(info.location)} is missing",
            )
        total += info.length or target.stat().st_size
        if total > limit:
            raise OnnxImportError(
                shown,
                f"external data over the limit of {limit:,} bytes "
                "(set EQSAT_ONNX_MAX_EXTERNAL_BYTES to raise it)",
            )
    try:
        external_data_helper.load_external_data_for_model(model, str(folder))
    except Exception as err:
        raise OnnxImportError(shown, f"cannot load external data ({err})") from None


def _shown_name(name: str) -> str:
    """A name from the file as a message shows it: quoted, escaped, cut short."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


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
