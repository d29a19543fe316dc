"""The table of converters (CONVERTERS, filled by the `op` decorator) and `Cx`, what a
converter gets: the node, its input values, its attributes, the op's schema version.

Below the converter modules, which import it to register; the package
(frontend/onnx/convert/__init__.py) imports every converter module, so the table is
full once anything in the package has been imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from eqsat.ir.types import DType
from frontend.onnx.context import ConvertError, ModelWriter
from frontend.onnx.dtypes import FLOAT_TYPES, eqsat_dtype
from frontend.onnx.symdim import NotRepresentable, SymDim
from frontend.onnx.values import Known, Tensor, Value

Converter = Callable[["Cx"], Sequence[Value]]
CONVERTERS: dict[tuple[str, str], Converter] = {}
# The oldest version of an op whose meaning its converter implements (older ones
# differ: legacy broadcast attributes, inputs that were attributes...).
MIN_SINCE: dict[tuple[str, str], int] = {}


def op(*op_types: str, domain: str = "ai.onnx", since: int = 1) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[(domain, t)] = fn
            MIN_SINCE[(domain, t)] = since
        return fn

    return register


@dataclass
class Cx:
    w: ModelWriter
    node: onnx.NodeProto
    inputs: list[Value | None]
    attrs: dict[str, Any]
    since: int
    hint: str

    @property
    def op_type(self) -> str:
        return self.node.op_type

    def input(self, i: int) -> Value:
        v = self.inputs[i] if i < len(self.inputs) else None
        if v is None:
            raise ConvertError(f"input {i} is required")
        return v

    def opt(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def known(self, i: int, what: str) -> Known:
        v = self.input(i)
        if isinstance(v, Tensor) and v.static:
            # Computed from symbolic dimensions only: known once they are bound.
            raise NotRepresentable(static_names(self.w, v), what)
        if not isinstance(v, Known):
            raise ConvertError(
                f"{what} must be known when the model is compiled (a constant or computed "
                "from shapes)",
                needs_known=i,
            )
        return v

    def known_opt(self, i: int, what: str) -> Known | None:
        return None if self.opt(i) is None else self.known(i, what)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def emit(
        self,
        op_name: str,
        operands: Sequence[Value],
        attrs: dict | None = None,
        onnx_type: int | None = None,
        hint: str | None = None,
    ) -> Tensor:
        return self.w.emit(op_name, operands, attrs, hint or self.hint, onnx_type)

    def tensor(self, v: Value) -> Tensor:
        return self.w.tensor(v, self.hint)

    def shape(self, v: Value) -> tuple[SymDim | None, ...]:
        if isinstance(v, Known):
            return tuple(SymDim(d) for d in v.shape)
        return v.shape

    def rank(self, v: Value) -> int:
        return len(v.shape)

    def onnx_type(self, v: Value) -> int:
        return v.onnx_type

    def dtype(self, v: Value) -> DType:
        return eqsat_dtype(v.onnx_type)

    def is_float(self, v: Value) -> bool:
        return v.onnx_type in FLOAT_TYPES

    def fill(self, value: float | int, like: Value, shape: Sequence[SymDim | int] = ()) -> Tensor:
        """A scalar (or filled) constant of `like`'s type."""
        dims = [SymDim.of(d) for d in shape]
        return self.w.fill(value, self.dtype(like), dims, like.onnx_type)

    def scalar(self, value: float | int, like: Value) -> Known:
        return Known(np.array(value, dtype=_np(like)), like.onnx_type)


def _np(v: Value):
    from frontend.onnx.dtypes import numpy_type

    return numpy_type(v.onnx_type)


def static_names(w: ModelWriter, v: Tensor) -> frozenset[str]:
    """The symbolic dimensions a static value may depend on: those of its shape, or
    all of them when its shape says nothing."""
    names = {n for d in v.shape if d is not None for n in d.names}
    return frozenset(names or w.dim_names)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ConvertError(message)
