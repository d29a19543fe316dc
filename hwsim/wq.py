"""Weight-only quantized weights: int4 packing and the load-path dequantizer.

Storage. An int4 weight matrix w[K, N] (values in [-8, 7]) is held in DRAM as i8
bytes packed along K, two per byte: byte [r, n] holds w[2r, n] in its low nibble and
w[2r + 1, n] in its high nibble, so the buffer is i8[K / 2, N] and every byte moved
is a packed byte. int8 weights (bits = 8) are plain i8[K, N]; FP8 weights (fmt e4m3)
are their E4M3 bytes, i8[K, N].

Scales. One f32 scale per group of `group` consecutive input channels (rows of K) per
output column: s[K / group, N]. The dequantized weight is w[k, n] * s[k // group, n]
(symmetric: no zero point), computed in f32 and rounded to the destination tile's
dtype (f32 or bf16) when it is written.

`LoadDq` (hwsim/isa.py) runs this on the load queue: the DMA reads the packed bytes,
and the dequantizer between DMA and scratchpad multiplies them by their scales (an f32
tile an ordinary load brought in) and writes the wide tile (GPTQ/AWQ-style kernels
dequantize on the way into shared memory the same way). Its cost is the DMA of the
packed bytes (timing.py): the dequantizer keeps pace with the DRAM channel.
"""

from __future__ import annotations

import numpy as np

WEIGHT_BITS = (4, 8)
I4_RANGE = (-8, 7)
# How the stored integers read: "int" (two's complement) or "e4m3" (8-bit float,
# OCP FP8 E4M3FN: 1 sign, 4 exponent bits of bias 7, 3 mantissa bits, no infinities,
# S.1111.111 is NaN; largest finite 448), decoded with integer arithmetic here.
FORMATS = ("int", "e4m3")


def packed_rows(rows: int, bits: int) -> int:
    """Rows of the i8 storage of `rows` rows of `bits`-bit weights."""
    if bits not in WEIGHT_BITS:
        raise ValueError(f"weight bits must be one of {WEIGHT_BITS}, got {bits}")
    if bits == 4 and rows % 2:
        raise ValueError(f"int4 weights pack two rows per byte: {rows} rows is odd")
    return rows * bits // 8


def pack_i4(q: np.ndarray) -> np.ndarray:
    """int4 values q[K, N] (integers in [-8, 7], K even) -> packed i8[K / 2, N]."""
    q = np.asarray(q)
    if q.ndim != 2 or q.shape[0] % 2:
        raise ValueError(f"pack_i4 needs a 2-D array with an even number of rows, got {q.shape}")
    v = q.astype(np.int16)
    if v.size and (v.min() < I4_RANGE[0] or v.max() > I4_RANGE[1]):
        raise ValueError("pack_i4: values outside the int4 range [-8, 7]")
    byte = (v[0::2] & 0xF) | ((v[1::2] & 0xF) << 4)  # 0..255
    return byte.astype(np.uint8).view(np.int8)


def unpack_i4(packed: np.ndarray) -> np.ndarray:
    """packed i8[R, N] -> int4 values as int8[2R, N] (the inverse of pack_i4)."""
    b = np.asarray(packed).astype(np.int16) & 0xFF
    lo = ((b & 0xF) ^ 8) - 8  # sign-extend the low nibble
    hi = ((b >> 4) ^ 8) - 8
    out = np.empty((2 * b.shape[0], *b.shape[1:]), dtype=np.int8)
    out[0::2], out[1::2] = lo, hi
    return out


def unpack(stored: np.ndarray, bits: int) -> np.ndarray:
    """The integer weights of their i8 storage (int8 weights are stored as they are)."""
    return unpack_i4(stored) if bits == 4 else np.asarray(stored).astype(np.int8)


def e4m3_value(stored: np.ndarray) -> np.ndarray:
    """f32 values of FP8 E4M3FN bytes (held as i8)."""
    b = np.asarray(stored).astype(np.int32) & 0xFF
    exp, mant = (b >> 3) & 0xF, b & 0x7
    normal = np.ldexp((8 + mant).astype(np.float32), exp - 10)  # (1 + m/8) * 2^(e-7)
    value = np.where(exp == 0, np.ldexp(mant.astype(np.float32), -9), normal)
    value = np.where((exp == 0xF) & (mant == 0x7), np.float32(np.nan), value)
    return np.where(b & 0x80, -value, value).astype(np.float32)


def group_index(rows: int, group: int, phase: int = 0) -> np.ndarray:
    """Scale row of each of `rows` weight rows that start `phase` rows into a group."""
    return (np.arange(rows) + phase) // group


def dequantize(
    stored: np.ndarray,
    scales: np.ndarray,
    bits: int,
    group: int,
    phase: int = 0,
    fmt: str = "int",
) -> np.ndarray:
    """f32 weights of stored (packed) integers, or e4m3 bytes, and their group scales.
    `phase`: how far into its group the first row lies (a tile that starts inside one)."""
    q = e4m3_value(stored) if fmt == "e4m3" else unpack(stored, bits).astype(np.float32)
    s = np.asarray(scales, dtype=np.float32)
    return q * s[group_index(q.shape[0], group, phase)]
