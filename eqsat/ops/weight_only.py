"""Weight-only quantization ops (`--quantize w4a16 | w8a16 | fp8`; eqsat/quant/weight_only.py).

A weight w[K, N] is stored as integers of `bits` bits (4: packed two per byte along K,
so the tensor is i8[K / 2, N]; 8: i8[K, N]) and one f32 scale per group of `group`
consecutive input channels per output column, s[K / group, N] (stored in f32, or in
bf16 with `sdtype=bf16`: rounded to bf16, then used in f32); its value is
w[k, n] = q[k, n] * s[k // group, n] (symmetric, round to nearest even). The packing is
hwsim's (hwsim/wq.py): the tensor the compiler holds is the bytes DRAM holds, so every
byte count (cost model, DMA) is of packed bytes. With fmt=e4m3 (bits 8) the stored
bytes are FP8 E4M3 values of w / s (scale = max|w| / 448), not integers.

- `wobserve(w, group, bits, fmt, act)`: w itself, marked by the quantization pass as a weight to
  quantize at that group size and width (as `observe` marks int8 activations).
- `wq_pack(w, group, bits, fmt)`, `wq_scales(w, group, bits, fmt)`: the packed integers and the
  group scales of w (scale = max|w| over the group / qmax, qmax = 7 or 127; 1 for an
  all-zero group). The pass computes them once as params; the backend folds them at
  compile time from known weights.
- `matmul_wq(x, wq, s, group, bits, fmt, act)`: x @ dequantized weights (s f32 or bf16), the weights
  dequantized in x's dtype `act` (bf16 rounded when x is bf16), accumulated in f32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import Attrs, AttrSpec, AttrType, OpDef, OpKind, OpTypeError, require_float
from eqsat.ops.registry import register
from hwsim.wq import FORMATS, WEIGHT_BITS, dequantize, pack_i4

GROUP_ATTR = AttrSpec("group", AttrType.INT, 128, "input channels (rows of w) that share one scale")
BITS_ATTR = AttrSpec("bits", AttrType.INT, 4, "weight width: 4 (int4, packed) or 8 (int8)")
FMT_ATTR = AttrSpec("fmt", AttrType.STR, "int", "int (integers) or e4m3 (FP8 E4M3, bits 8)")
SDTYPE_ATTR = AttrSpec("sdtype", AttrType.DTYPE, "f32", "dtype the group scales are stored in")
_ATTRS = (GROUP_ATTR, BITS_ATTR, FMT_ATTR, SDTYPE_ATTR)
SCALE_DTYPES = (DType.F32, DType.BF16)
E4M3_MAX = 448.0


def qmax(bits: int, fmt: str = "int") -> float:
    """Largest magnitude of the symmetric grid: 7 for int4, 127 for int8, 448 for e4m3."""
    return E4M3_MAX if fmt == "e4m3" else (1 << (bits - 1)) - 1


def _check_attrs(op: str, attrs: Attrs) -> tuple[int, int]:
    group, bits = int(attrs["group"]), int(attrs["bits"])
    if bits not in WEIGHT_BITS:
        raise OpTypeError(f"'{op}': bits must be 4 or 8, got {bits}")
    fmt = str(attrs.get("fmt", "int"))
    if fmt not in FORMATS or (fmt == "e4m3" and bits != 8):
        raise OpTypeError(f"'{op}': fmt must be int, or e4m3 with bits 8; got {fmt}, bits {bits}")
    if group < 2 or group % 2:
        raise OpTypeError(f"'{op}': group must be an even integer >= 2, got {group}")
    if DType.parse(str(attrs.get("sdtype", "f32"))) not in SCALE_DTYPES:
        raise OpTypeError(f"'{op}': sdtype must be f32 or bf16, got {attrs['sdtype']}")
    return group, bits


def _check_weight(op: str, w: TensorType, group: int) -> None:
    if w.rank != 2 or w.dtype is not DType.F32:
        raise OpTypeError(f"'{op}' needs f32 weights [K, N], got {w}")
    if w.shape[0] % group:
        raise OpTypeError(f"'{op}': group={group} must divide K={w.shape[0]} of {w}")


def group_scales(
    w: np.ndarray, group: int, bits: int, fmt: str = "int", sdtype: str = "f32"
) -> np.ndarray:
    """[K / group, N] in sdtype (f32, or bf16 rounded to nearest even, as GPTQ/AWQ
    kernels store theirs): max |w| of each group / qmax (1 where the group is all zero)."""
    k, n = w.shape
    absmax = np.abs(w.astype(np.float32)).reshape(k // group, group, n).max(axis=1)
    s = absmax / np.float32(qmax(bits, fmt))
    s = s.astype(DType.parse(sdtype).np_dtype).astype(np.float32)
    s = np.where(s > 0, s, np.float32(1.0))
    return s.astype(DType.parse(sdtype).np_dtype)


def quantize_weights(
    w: np.ndarray, group: int, bits: int, fmt: str = "int", sdtype: str = "f32"
) -> np.ndarray:
    """The i8 storage of w's integers (int4 packed two per byte along K), or of its
    e4m3 values (round to nearest even, as ml_dtypes converts), on the grid of the
    scales as stored (sdtype)."""
    s = group_scales(w, group, bits, fmt, sdtype).astype(np.float32)
    m = qmax(bits, fmt)
    scaled = np.clip(w.astype(np.float32) / np.repeat(s, group, axis=0), -m, m)
    if fmt == "e4m3":
        import ml_dtypes

        scaled = np.nan_to_num(scaled, nan=0.0)
        return scaled.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).view(np.int8)
    q = np.rint(scaled)
    q = np.nan_to_num(q, nan=0.0).astype(np.int8)
    return pack_i4(q) if bits == 4 else q


def _wobserve_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    if int(attrs["bits"]) == 16:  # bf16 weights: no groups
        _check_weight("wobserve", ts[0], 1)
    else:
        group, _ = _check_attrs("wobserve", attrs)
        _check_weight("wobserve", ts[0], group)
    if DType.parse(str(attrs["act"])) not in (DType.F32, DType.BF16):
        raise OpTypeError(f"'wobserve': act must be f32 or bf16, got {attrs['act']}")
    return ts[0]


register(
    OpDef(
        name="wobserve",
        kind=OpKind.QUANT,
        operands=("w",),
        attrs=(
            GROUP_ATTR,
            AttrSpec("bits", AttrType.INT, 4, "weight width: 4, 8 (grouped int) or 16 (bf16)"),
            FMT_ATTR,
            SDTYPE_ATTR,
            AttrSpec("act", AttrType.DTYPE, "f32", "dtype the product runs in (f32 or bf16)"),
        ),
        infer=_wobserve_infer,
        ref=lambda xs, attrs: xs[0],
        doc="w itself, marked as a weight to quantize weight-only: int4/int8 with group "
        "scales (bits 4, 8) or bf16 (bits 16), the product in dtype act",
    )
)


def _pack_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    group, bits = _check_attrs("wq_pack", attrs)
    _check_weight("wq_pack", ts[0], group)
    k, n = ts[0].shape
    return TensorType(DType.I8, (k * bits // 8, n))


register(
    OpDef(
        name="wq_pack",
        kind=OpKind.QUANT,
        operands=("w",),
        attrs=_ATTRS,
        infer=_pack_infer,
        ref=lambda xs, attrs: quantize_weights(
            xs[0], int(attrs["group"]), int(attrs["bits"]), str(attrs["fmt"]), _sdtype(attrs)
        ),
        flops=lambda ts, out, attrs: 3 * ts[0].numel,
        doc="w's integers round(w / s) on the group grid, as i8 (int4: packed two per "
        "byte along K, i8[K/2, N]), or with fmt=e4m3 the FP8 E4M3 bytes of w / s",
        egg_shape="(ScaleFirst {w} {bits} 8)",
        egg_dtype="i8",
    )
)


def _scales_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    group, _ = _check_attrs("wq_scales", attrs)
    _check_weight("wq_scales", ts[0], group)
    k, n = ts[0].shape
    return TensorType(DType.parse(_sdtype(attrs)), (k // group, n))


def _sdtype(attrs: Attrs) -> str:
    return str(DType.parse(str(attrs.get("sdtype", "f32"))).value)


register(
    OpDef(
        name="wq_scales",
        kind=OpKind.QUANT,
        operands=("w",),
        attrs=_ATTRS,
        infer=_scales_infer,
        ref=lambda xs, attrs: group_scales(
            xs[0], int(attrs["group"]), int(attrs["bits"]), str(attrs["fmt"]), _sdtype(attrs)
        ),
        flops=lambda ts, out, attrs: 2 * ts[0].numel,
        doc="max |w| / qmax of each group of `group` rows per column, [K/group, N] in "
        "sdtype (f32, or bf16 rounded to nearest even) (qmax 7, 127 or 448 for e4m3; 1 for "
        "an all-zero group)",
        egg_shape="(ScaleFirst {w} 1 {group})",
        egg_dtype="{sdtype}",
    )
)


def _matmul_wq_infer(ts: Sequence[TensorType], attrs: Attrs) -> TensorType:
    group, bits = _check_attrs("matmul_wq", attrs)
    x, wq, s = ts
    require_float("matmul_wq", x)
    if x.rank < 2:
        raise OpTypeError(f"'matmul_wq' needs x of rank >= 2, got {x}")
    if wq.rank != 2 or wq.dtype is not DType.I8 or s.rank != 2 or s.dtype not in SCALE_DTYPES:
        raise OpTypeError(
            f"'matmul_wq' needs wq: i8[K*bits/8, N] and s: f32 or bf16 [K/group, N], got {wq}, {s}"
        )
    if x.dtype is not DType.parse(str(attrs["act"])):
        raise OpTypeError(f"'matmul_wq': act={attrs['act']} must be x's dtype, got {x}")
    k = x.shape[-1]
    if k % group or wq.shape != (k * bits // 8, s.shape[1]) or s.shape[0] != k // group:
        raise OpTypeError(
            f"'matmul_wq': x {x} (K={k}) needs wq i8[{k * bits // 8}, N] and s "
            f"f32[{k // max(group, 1)}, N] with group={group} dividing K, got {wq} and {s}"
        )
    return TensorType(DType.F32, (*x.shape[:-1], s.shape[1]))


def _matmul_wq_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, wq, s = xs
    s = np.asarray(s).astype(np.float32)  # bf16 scales: their values, used in f32
    w = dequantize(wq, s, int(attrs["bits"]), int(attrs["group"]), 0, str(attrs["fmt"]))
    if DType.parse(str(attrs["act"])) is DType.BF16:  # the weights dequantize into bf16
        w = w.astype(DType.BF16.np_dtype).astype(np.float32)
    return np.matmul(x.astype(np.float32), w)


register(
    OpDef(
        name="matmul_wq",
        kind=OpKind.MATMUL,
        operands=("x", "wq", "s"),
        attrs=(
            GROUP_ATTR,
            BITS_ATTR,
            FMT_ATTR,
            AttrSpec("act", AttrType.DTYPE, "f32", "x's dtype, which the weights dequantize into"),
        ),
        infer=_matmul_wq_infer,
        ref=_matmul_wq_ref,
        flops=lambda ts, out, attrs: 2 * out.numel * ts[0].shape[-1],
        doc="x @ (q * s): weight-only quantized product, the weights (bits 4: i8[K/2, N] "
        "packed, 8: i8[K, N], integers or with fmt=e4m3 FP8 bytes) dequantized by their "
        "group scales s[K/group, N] in x's dtype, f32 accumulation",
        egg_shape="(Append (Rev (Drop (Rev {x}) 1)) (Drop {s} 1))",
        egg_dtype="f32",
    )
)
