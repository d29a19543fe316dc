"""What an ONNX tensor is while its graph is being imported.

- `Known`: a value known at import time (initializers, `Constant`s, and everything
  computed from them and from shapes). Its array has the ONNX numpy dtype; shape
  values of symbolic dimensions are numpy object arrays of `SymDim`.
- `Tensor`: a value of the eqsat model being written, by its name in the text, with
  its eqsat dtype, the ONNX type it stands for and its (symbolic) shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqsat.ir.types import DType
from frontend.onnx.symdim import NotRepresentable, SymDim


@dataclass(frozen=True, eq=False)
class Known:
    value: np.ndarray
    onnx_type: int
    # Computed from initializers alone: a weight of the model (becomes a param).
    weight: bool = False
    name: str = ""  # the ONNX tensor it is (names the model constant it becomes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)

    @property
    def symbolic(self) -> bool:
        return self.value.dtype == object and any(
            isinstance(v, SymDim) and not v.is_int for v in self.value.reshape(-1)
        )

    def ints(self) -> list[int | SymDim]:
        """The elements as Python ints (SymDim where symbolic), flattened."""
        out: list[int | SymDim] = []
        for v in np.asarray(self.value).reshape(-1):
            if isinstance(v, SymDim):
                out.append(v.coef if v.is_int else v)
            else:
                out.append(int(v))
        return out

    def concrete_ints(self, what: str) -> list[int]:
        values = self.ints()
        for v in values:
            if isinstance(v, SymDim):
                raise NotRepresentable(frozenset(v.names), what)
        return values  # type: ignore[return-value]

    def scalar(self) -> float:
        flat = np.asarray(self.value).reshape(-1)
        if flat.size != 1:
            raise ValueError(f"expected one value, got {flat.size}")
        v = flat[0]
        return int(v) if isinstance(v, SymDim) else v.item()


@dataclass(frozen=True, eq=False)
class Tensor:
    name: str
    dtype: DType
    onnx_type: int
    shape: tuple[SymDim | None, ...]  # None: not a product of the symbolic names
    # Computed from the model's constants alone (folds once dimensions are bound).
    static: bool = False
    tags: dict = field(default_factory=dict, compare=False)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def dims(self, what: str = "this shape") -> tuple[SymDim, ...]:
        for d in self.shape:
            if d is None:
                raise NotRepresentable(frozenset(), f"{what} is not a product of dimensions")
        return self.shape  # type: ignore[return-value]

    def concrete_shape(self, what: str) -> tuple[int, ...]:
        out = []
        for d in self.dims(what):
            if not d.is_int:
                raise NotRepresentable(frozenset(d.names), what)
            out.append(d.coef)
        return tuple(out)


Value = Known | Tensor


def shape_array(dims: tuple[SymDim, ...]) -> np.ndarray:
    """A Shape value: int64 when every dimension is a number, else an object array."""
    if all(d.is_int for d in dims):
        return np.array([d.coef for d in dims], dtype=np.int64)
    out = np.empty(len(dims), dtype=object)
    out[:] = list(dims)
    return out
