"""Element types and tensor types shared by every stage of the compiler."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import ml_dtypes
import numpy as np


class DType(StrEnum):
    """The element types eqsat knows. bf16 values are held in numpy via ml_dtypes."""

    F32 = "f32"
    BF16 = "bf16"
    I8 = "i8"
    I32 = "i32"

    def __str__(self) -> str:
        return self.value

    @property
    def np_dtype(self) -> np.dtype:
        return _NP_DTYPES[self]

    @property
    def itemsize(self) -> int:
        return _NP_DTYPES[self].itemsize

    @property
    def is_float(self) -> bool:
        return self in (DType.F32, DType.BF16)

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @classmethod
    def parse(cls, text: str) -> DType:
        try:
            return cls(text)
        except ValueError:
            names = ", ".join(d.value for d in cls)
            raise ValueError(f"unknown dtype '{text}' (expected one of {names})") from None


_NP_DTYPES = {
    DType.F32: np.dtype(np.float32),
    DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.I8: np.dtype(np.int8),
    DType.I32: np.dtype(np.int32),
}


def dtype_of_array(array: np.ndarray) -> DType:
    """The DType of a numpy array, or ValueError for dtypes eqsat does not model."""
    for dtype, np_dtype in _NP_DTYPES.items():
        if array.dtype == np_dtype:
            return dtype
    raise ValueError(f"arrays of numpy dtype {array.dtype} are not supported")


@dataclass(frozen=True)
class TensorType:
    """A concrete tensor type: element type and static shape."""

    dtype: DType
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.value}[{', '.join(str(d) for d in self.shape)}]"
