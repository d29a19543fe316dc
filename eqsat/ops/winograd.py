"""Winograd convolution F(m x m, 3 x 3): a 3x3 stride-1 convolution as three ops.

Lavin and Gray's minimal filtering: an output tile of m x m pixels needs an input tile
of a x a (a = m + 2); with the transforms B, G and A of F(m, 3),

    Y = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, per channel pair)

and summing over input channels turns the elementwise product into a batched matrix
product: for each of the a*a transform points, V[tiles, C] @ U[C, O]. The three
ops below are the pieces; `matmul` is the product between them:

- winograd_weight(w) [O, C, 3, 3] -> U [a*a, C, O]: G g G^T (a weight-side op:
  prepared at load time when w is a param, eqsat/weights.py);
- winograd_input(x) [N, C, H, W] -> V [a*a, T, C]: B^T d B of every input tile,
  T = N * th * tw tiles in (image, tile row, tile column) order, th = ceil(HO / m)
  (the input zero-padded by `padding` and beyond the last tile);
- winograd_output(M) [a*a, T, O] -> [N, O, HO, WO]: A^T M A of every tile, cropped
  to `size` = [HO, WO].

F(2, 3) multiplies 16 times per output tile of 4 pixels where the direct form
multiplies 36 (2.25x fewer), F(4, 3) 36 times for 16 pixels (4x fewer); the
transforms are additions and small multiples, run on the vector unit. In f32 the
rounding of F(2, 3) is that of the direct form; F(4, 3)'s larger constants lose about
a decimal digit more. Not for integers: the transforms' fractions are inexact there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops.base import (
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
)
from eqsat.ops.fused import AttrRef, call, fused
from eqsat.ops.registry import register

# The transforms of F(m, 3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
# Networks", 2016; interpolation points 0, 1, -1 for m = 2 and 0, 1, -1, 2, -2 for 4).
BT = {
    2: np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
    4: np.array(
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        np.float64,
    ),
}
G = {
    2: np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64),
    4: np.array(
        [
            [1 / 4, 0, 0],
            [-1 / 6, -1 / 6, -1 / 6],
            [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6],
            [1 / 24, -1 / 12, 1 / 6],
            [0, 0, 1],
        ],
        np.float64,
    ),
}
AT = {
    2: np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64),
    4: np.array(
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
        np.float64,
    ),
}
TILE_SIZES = tuple(BT)

_M = AttrSpec("m", AttrType.INT, 2, "output tile size m of F(m x m, 3 x 3): 2 or 4")


def _require_f32(op: str, t: TensorType) -> None:
    """The transforms are f32 kernels: in bf16, F(4x4, 3x3)'s constants and sums lose
    too much (the rules choose Winograd for f32 convolutions only)."""
    if t.dtype is not DType.F32:
        raise OpTypeError(f"'{op}' computes in f32, got {t}")


def _m(op: str, attrs: Attrs) -> int:
    m = int(attrs["m"])  # type: ignore[call-overload]
    if m not in TILE_SIZES:
        raise OpTypeError(f"'{op}': m must be 2 or 4 (F(2x2, 3x3) or F(4x4, 3x3)), got {m}")
    return m


def tiles(out_hw: Sequence[int], m: int) -> tuple[int, int]:
    """Tile rows and columns covering an output of out_hw pixels."""
    return -(-int(out_hw[0]) // m), -(-int(out_hw[1]) // m)


def input_out_hw(x: TensorType, padding: Sequence[int]) -> tuple[int, int]:
    """The output size of a 3x3 stride-1 convolution of x with this padding."""
    return x.shape[2] + 2 * int(padding[0]) - 2, x.shape[3] + 2 * int(padding[1]) - 2


def _weight_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    (w,) = in_types
    m = _m("winograd_weight", attrs)
    _require_f32("winograd_weight", w)
    if w.rank != 4 or w.shape[2:] != (3, 3):
        raise OpTypeError(f"'winograd_weight' needs w: [O, C, 3, 3], got {w}")
    a = m + 2
    return TensorType(w.dtype, (a * a, w.shape[1], w.shape[0]))


def _weight_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    m = int(attrs["m"])  # type: ignore[call-overload]
    g = G[m].astype(xs[0].dtype)
    u = np.einsum("xi,ocij,yj->xyco", g, xs[0], g, optimize=True)
    a = m + 2
    return np.ascontiguousarray(u.reshape(a * a, *u.shape[2:]))


def _input_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    (x,) = in_types
    m = _m("winograd_input", attrs)
    _require_f32("winograd_input", x)
    pad = attrs["padding"]
    if x.rank != 4:
        raise OpTypeError(f"'winograd_input' needs x: [N, C, H, W], got {x}")
    if len(pad) != 2 or min(pad) < 0:  # type: ignore[arg-type]
        raise OpTypeError(f"'winograd_input': padding must be two integers >= 0, got {pad}")
    ho, wo = input_out_hw(x, pad)  # type: ignore[arg-type]
    if ho < 1 or wo < 1:
        raise OpTypeError(f"'winograd_input': a 3x3 kernel is larger than the padded input {x}")
    th, tw = tiles((ho, wo), m)
    a = m + 2
    return TensorType(x.dtype, (a * a, x.shape[0] * th * tw, x.shape[1]))


def padded_tiles(x: np.ndarray, m: int, padding: Sequence[int]) -> np.ndarray:
    """[N, C, th, tw, a, a]: the input tiles (overlapping by 2), zero beyond x."""
    n, c, h, w = x.shape
    ph, pw = int(padding[0]), int(padding[1])
    th, tw = tiles((h + 2 * ph - 2, w + 2 * pw - 2), m)
    rows, cols = m * th + 2, m * tw + 2
    xp = np.zeros((n, c, rows, cols), x.dtype)
    hh, ww = min(h, rows - ph), min(w, cols - pw)
    xp[:, :, ph : ph + hh, pw : pw + ww] = x[:, :, :hh, :ww]
    win = np.lib.stride_tricks.sliding_window_view(xp, (m + 2, m + 2), axis=(2, 3))
    return win[:, :, ::m, ::m]


def _input_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    m = int(attrs["m"])  # type: ignore[call-overload]
    x = xs[0]
    d = padded_tiles(x, m, attrs["padding"])  # type: ignore[arg-type]
    bt = BT[m].astype(x.dtype)
    v = np.einsum("xi,nctsij,yj->xyntsc", bt, d, bt, optimize=True)
    a = m + 2
    return np.ascontiguousarray(v.reshape(a * a, -1, x.shape[1]))


def _output_infer(in_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    (mt,) = in_types
    m = _m("winograd_output", attrs)
    _require_f32("winograd_output", mt)
    size = attrs["size"]
    a = m + 2
    if len(size) != 2 or min(size) < 1:  # type: ignore[arg-type]
        raise OpTypeError(f"'winograd_output': size must be [HO, WO] >= 1, got {size}")
    th, tw = tiles(size, m)  # type: ignore[arg-type]
    if mt.rank != 3 or mt.shape[0] != a * a or mt.shape[1] % (th * tw):
        raise OpTypeError(
            f"'winograd_output' with m={m} and size {list(size)} needs [{a * a}, N*{th * tw}, O], "  # type: ignore[arg-type]
            f"got {mt}"
        )
    hw = (int(size[0]), int(size[1]))  # type: ignore[index]
    return TensorType(mt.dtype, (mt.shape[1] // (th * tw), mt.shape[2], *hw))


def _output_ref(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    m = int(attrs["m"])  # type: ignore[call-overload]
    size = attrs["size"]
    th, tw = tiles(size, m)  # type: ignore[arg-type]
    mt = xs[0]
    a, o = m + 2, mt.shape[2]
    at = AT[m].astype(mt.dtype)
    t = mt.reshape(a, a, -1, th, tw, o)
    y = np.einsum("ax,xyntso,by->notasb", at, t, at, optimize=True)
    n = y.shape[0]
    y = y.reshape(n, o, th * m, tw * m)
    return np.ascontiguousarray(y[:, :, : size[0], : size[1]])  # type: ignore[index]


def _input_flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return 2 * out.numel * (int(attrs["m"]) + 2)  # type: ignore[call-overload]


def _output_flops(in_types: Sequence[TensorType], out: TensorType, attrs: Attrs) -> int:
    return 2 * in_types[0].numel


register(
    OpDef(
        name="winograd_weight",
        kind=OpKind.LAYOUT,
        operands=("w",),
        attrs=(_M,),
        infer=_weight_infer,
        ref=_weight_ref,
        doc="Winograd F(m, 3) weight transform G w G^T: w [O, C, 3, 3] -> [(m+2)^2, C, O]",
        egg_shape="(WinoWeightShape {w} {m})",
    )
)
register(
    OpDef(
        name="winograd_input",
        kind=OpKind.LAYOUT,
        operands=("x",),
        attrs=(
            _M,
            AttrSpec("padding", AttrType.INTS, (0, 0), "zero padding [PH, PW] of the convolution"),
        ),
        infer=_input_infer,
        ref=_input_ref,
        flops=_input_flops,
        doc="Winograd F(m, 3) input transform B^T d B of every input tile of a 3x3 stride-1 "
        "convolution: x [N, C, H, W] -> [(m+2)^2, N * tiles, C]",
        egg_shape="(WinoInputShape {x} {m} {padding})",
    )
)
register(
    OpDef(
        name="winograd_output",
        kind=OpKind.LAYOUT,
        operands=("t",),
        attrs=(_M, AttrSpec("size", AttrType.INTS, doc="the output's [HO, WO]")),
        infer=_output_infer,
        ref=_output_ref,
        flops=_output_flops,
        doc="Winograd F(m, 3) output transform A^T t A of every tile: [(m+2)^2, N * tiles, O] "
        "-> [N, O, HO, WO]",
        egg_shape="(WinoOutputShape {t} {m} {size})",
    )
)


# The output transform with a convolution's epilogue (bias per output channel, a
# ResNet block's residual add, ReLU), applied to the NCHW tile on its way out.
_SIZE = AttrSpec("size", AttrType.INTS, doc="the output's [HO, WO]")
_WO = call("winograd_output", "t", m=AttrRef("m"), size=AttrRef("size"))
_WO_BIAS = call("add", _WO, "b")


def _per_channel_bias(ts: Sequence[TensorType], out: TensorType) -> None:
    """The output transform's epilogue adds one bias value per output channel (t is
    [(m+2)^2, tiles, O])."""
    channels = ts[0].shape[2] if ts[0].rank == 3 else out.shape[1]
    if ts[1].shape != (channels, 1, 1):
        raise OpTypeError(
            f"the Winograd output transform's bias is one value per output channel, "
            f"[{channels}, 1, 1], got {ts[1]}"
        )


fused("winograd_output_bias", ("t", "b"), _WO_BIAS, (_M, _SIZE), check=_per_channel_bias)
fused(
    "winograd_output_bias_relu",
    ("t", "b"),
    call("relu", _WO_BIAS),
    (_M, _SIZE),
    check=_per_channel_bias,
)
fused(
    "winograd_output_bias_add_relu",
    ("t", "b", "r"),
    call("relu", call("add", _WO_BIAS, "r")),
    (_M, _SIZE),
    check=_per_channel_bias,
)
EPILOGUES = {
    "winograd_output": (False, False, False),  # (bias, residual, relu)
    "winograd_output_bias": (True, False, False),
    "winograd_output_bias_relu": (True, False, True),
    "winograd_output_bias_add_relu": (True, True, True),
}


# The whole Winograd convolution as one kernel (eqsat/winograd_fused.py): the input
# transform, the product per transform point and the output transform with its
# epilogue, the transformed tiles kept on chip; u is winograd_weight(w), prepared when
# the weights are loaded.
_PAD = AttrSpec("padding", AttrType.INTS, (0, 0), "zero padding [PH, PW] of the convolution")
_PRODUCT = call(
    "matmul", call("winograd_input", "x", m=AttrRef("m"), padding=AttrRef("padding")), "u"
)
_CONV_OUT = call("winograd_output", _PRODUCT, m=AttrRef("m"), size=AttrRef("size"))
_CONV_BIAS = call("add", _CONV_OUT, "b")


def _conv_bias(ts: Sequence[TensorType], out: TensorType) -> None:
    _per_channel_bias([ts[1], ts[2]], out)


fused("winograd_conv", ("x", "u"), _CONV_OUT, (_M, _PAD, _SIZE))
fused("winograd_conv_bias", ("x", "u", "b"), _CONV_BIAS, (_M, _PAD, _SIZE), check=_conv_bias)
fused(
    "winograd_conv_bias_relu",
    ("x", "u", "b"),
    call("relu", _CONV_BIAS),
    (_M, _PAD, _SIZE),
    check=_conv_bias,
)
fused(
    "winograd_conv_bias_add_relu",
    ("x", "u", "b", "r"),
    call("relu", call("add", _CONV_BIAS, "r")),
    (_M, _PAD, _SIZE),
    check=_conv_bias,
)
CONV_EPILOGUES = {
    "winograd_conv": (False, False, False),  # (bias, residual, relu)
    "winograd_conv_bias": (True, False, False),
    "winograd_conv_bias_relu": (True, False, True),
    "winograd_conv_bias_add_relu": (True, True, True),
}
