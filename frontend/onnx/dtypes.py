"""ONNX element types -> eqsat dtypes, and the checked conversions between them.

eqsat computes in f32, bf16, i8 and i32. Wider and other integer types become i32
(values are range-checked where they are known: initializers, constants and the
inputs a caller feeds); bool becomes i8 holding 0 or 1; f16 and f64 are computed in
f32. Results are converted back to the ONNX type of each graph output.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from eqsat.ir.types import DType

ONNX_TO_DTYPE: dict[int, DType] = {
    TensorProto.FLOAT: DType.F32,
    TensorProto.DOUBLE: DType.F32,
    TensorProto.FLOAT16: DType.F32,
    TensorProto.BFLOAT16: DType.BF16,
    TensorProto.INT8: DType.I8,
    TensorProto.BOOL: DType.I8,
    TensorProto.UINT8: DType.I32,
    TensorProto.INT16: DType.I32,
    TensorProto.UINT16: DType.I32,
    TensorProto.INT32: DType.I32,
    TensorProto.UINT32: DType.I32,
    TensorProto.INT64: DType.I32,
    TensorProto.UINT64: DType.I32,
}

FLOAT_TYPES = frozenset(
    {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
)


class DTypeError(ValueError):
    """A type or a value eqsat cannot hold."""


def type_name(onnx_type: int) -> str:
    try:
        return TensorProto.DataType.Name(onnx_type).lower()
    except ValueError:
        return f"type {onnx_type}"


def eqsat_dtype(onnx_type: int) -> DType:
    if onnx_type not in ONNX_TO_DTYPE:
        supported = ", ".join(sorted({type_name(t) for t in ONNX_TO_DTYPE}))
        raise DTypeError(f"element type {type_name(onnx_type)} is not supported ({supported})")
    return ONNX_TO_DTYPE[onnx_type]


def numpy_type(onnx_type: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
    except KeyError:  # a type number ONNX does not define (a corrupt `to` of a Cast)
        raise DTypeError(f"element type {type_name(onnx_type)} is not an ONNX type") from None


def onnx_type_of(array: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(np.asarray(array).dtype)


def to_eqsat(array: np.ndarray, dtype: DType, what: str) -> np.ndarray:
    """`array` in eqsat's `dtype`: integers range-checked, bools as 0/1."""
    a = np.asarray(array)
    if a.dtype == object:
        raise DTypeError(f"{what} depends on symbolic dimensions")
    if dtype.is_float:
        return a.astype(np.float32, copy=False).astype(dtype.np_dtype, copy=False)
    if a.dtype == np.bool_:
        return a.astype(dtype.np_dtype)
    if a.dtype.kind == "f":
        raise DTypeError(f"{what} holds floating-point values where integers are expected")
    info = np.iinfo(dtype.np_dtype)
    if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
        raise DTypeError(
            f"{what} holds values in [{int(a.min())}, {int(a.max())}], outside the range of "
            f"{dtype} ({info.min} to {info.max}) that eqsat computes {a.dtype} in"
        )
    return a.astype(dtype.np_dtype)


def to_onnx(array: np.ndarray, onnx_type: int) -> np.ndarray:
    """An eqsat result as the ONNX type of the output it computes."""
    target = numpy_type(onnx_type)
    a = np.asarray(array)
    if onnx_type == TensorProto.BOOL:
        return a != 0
    if target.kind in "iu" and a.dtype.kind in "iu":
        return a.astype(np.int64).astype(target)
    return a.astype(target)
