"""ONNX import: an ONNX graph becomes an eqsat model (text, params) that every command
compiles like a hand-written one. See frontend/onnx/importer.py."""

from frontend.onnx.errors import OnnxImportError, UnsupportedOpError
from frontend.onnx.importer import ImportedModel, IOInfo, import_onnx


def supported_ops() -> dict[str, list[str]]:
    """Op types the importer translates, by domain."""
    from frontend.onnx.convert.registry import CONVERTERS

    out: dict[str, list[str]] = {}
    for domain, op_type in sorted(CONVERTERS):
        out.setdefault(domain, []).append(op_type)
    return out


__all__ = [
    "IOInfo",
    "ImportedModel",
    "OnnxImportError",
    "UnsupportedOpError",
    "import_onnx",
    "supported_ops",
]
