"""Mistakes and limits an ONNX file can run into, reported at the file and node:

model.onnx: error: node /encoder/Attention (Attention #412): ...
"""

from __future__ import annotations

from eqsat.errors import UserError


class OnnxImportError(UserError):
    """A file eqsat cannot import (malformed, unsafe, or using what it does not support)."""

    def __init__(self, file: str, message: str, node: str | None = None):
        self.file = file
        self.message = message
        self.node = node
        where = f"node {node}: " if node else ""
        super().__init__(f"{file}: error: {where}{message}")


class UnsupportedOpError(OnnxImportError):
    """An op (or an attribute value of one) the importer does not translate.
    `needs_known`: the ONNX input that would have to be a constant, if that is all."""

    def __init__(
        self, file: str, message: str, node: str | None = None, needs_known: str | None = None
    ):
        super().__init__(file, message, node)
        self.needs_known = needs_known


def node_label(name: str, op_type: str, index: int, domain: str = "") -> str:
    op = f"{domain}.{op_type}" if domain and domain != "ai.onnx" else op_type
    return f"{name or '(unnamed)'} ({op} #{index})"
