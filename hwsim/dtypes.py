"""Element types of the machine and their storage in bytes.

Four dtypes: f32, bf16, i8, i32. On-chip memory is raw bytes; a tile's dtype says how
its bytes are read. bf16 is stored as its 16 bits (the high half of an f32) and is
computed on as f32: `round_bf16` rounds f32 to the nearest bf16 (ties to even) with
plain integer arithmetic, so no extension dtype is needed. Integers stored from wider
values saturate; floats stored into integers round half to even, then saturate.

In DRAM (numpy arrays handed to and from the simulator) bf16 values are held as f32
arrays whose values are exactly representable in bf16.
"""

from __future__ import annotations

import numpy as np

DTYPES = ("f32", "bf16", "i8", "i32")
ITEMSIZE = {"f32": 4, "bf16": 2, "i8": 1, "i32": 4}
# numpy dtype of the raw storage of each element
STORAGE = {"f32": np.float32, "bf16": np.uint16, "i8": np.int8, "i32": np.int32}
# numpy dtype of values as held in DRAM arrays and computed on
VALUE = {"f32": np.float32, "bf16": np.float32, "i8": np.int8, "i32": np.int32}
INT_RANGE = {"i8": (-128, 127), "i32": (-(2**31), 2**31 - 1)}


def is_float(dtype: str) -> bool:
    """True for the dtypes computed on as f32."""
    return dtype in ("f32", "bf16")


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """The 16-bit patterns of f32 values rounded to nearest-even bf16 (NaN stays NaN)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded)
    return rounded.astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """f32 values of 16-bit bf16 patterns."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to the nearest bf16 value (ties to even)."""
    return bf16_value(bf16_bits(np.asarray(x, dtype=np.float32)))


def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values (any numeric numpy array) converted to the raw storage of `dtype`."""
    if dtype == "f32":
        return np.asarray(values, dtype=np.float32)
    if dtype == "bf16":
        return bf16_bits(np.asarray(values, dtype=np.float32))
    lo, hi = INT_RANGE[dtype]
    if values.dtype.kind == "f":
        # saturate in float: +-inf (and values past int64) cast to int64 are undefined
        values = np.clip(np.rint(np.nan_to_num(values.astype(np.float64), nan=0.0)), lo, hi)
    elif values.dtype == STORAGE[dtype]:
        return values
    values = values.astype(np.int64, copy=False)
    return np.minimum(np.maximum(values, lo), hi).astype(STORAGE[dtype])


def from_storage(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Values (as `VALUE[dtype]`) of raw storage."""
    return bf16_value(raw) if dtype == "bf16" else raw


def to_value(values: np.ndarray, dtype: str) -> np.ndarray:
    """A DRAM-side array as `dtype` would hold it (bf16 rounded, ints saturated)."""
    return from_storage(to_storage(np.asarray(values), dtype), dtype)
