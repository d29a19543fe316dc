"""ONNX names -> names the model text accepts, unique and readable.

ONNX names are any strings (`/bert/encoder/layer.0/Add_output_0`, `onnx::MatMul_42`);
model names are `[A-Za-z_][A-Za-z0-9_.]*` and not a keyword. Path separators become
dots, other characters underscores; a name that had to change keeps the ONNX name
in a comment next to its declaration or statement.
"""

from __future__ import annotations

import re

# Words the model grammar reserves (frontend/model.lark).
KEYWORDS = frozenset(
    {"model", "dim", "input", "param", "const", "output", "true", "false", "external", "inf", "nan"}
)
_BAD = re.compile(r"[^A-Za-z0-9_.]+")


def sanitize(name: str) -> str:
    text = name.strip()
    if text.endswith("_output_0"):  # TorchScript names every value NODE_output_0
        text = text[: -len("_output_0")]
    text = text.replace("::", ".").replace("/", ".").replace(":", ".")
    text = _BAD.sub("_", text)
    text = re.sub(r"\.{2,}", ".", text).strip(".")
    if not text:
        text = "v"
    if not (text[0].isalpha() or text[0] == "_"):
        text = "v" + text
    if text in KEYWORDS:
        text += "_"
    return text


class NameTable:
    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.original: dict[str, str] = {}

    def fresh(self, onnx_name: str) -> str:
        base = sanitize(onnx_name)
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        if name != onnx_name:
            self.original[name] = onnx_name
        return name

    def reserve(self, name: str) -> None:
        self.taken.add(name)

    def note(self, name: str) -> str:
        """A comment naming the ONNX tensor a sanitized name stands for."""
        original = self.original.get(name)
        return f"onnx: {original}" if original else ""
