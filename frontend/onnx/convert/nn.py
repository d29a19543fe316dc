"""Network layers: pooling, normalizations, softmax, reductions."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from frontend.onnx.context import ConvertError
from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.spatial import as_2d, back_to_1d, spatial_pads
from frontend.onnx.convert.tensor import prod, reshape
from frontend.onnx.symdim import SymDim
from frontend.onnx.values import Known, Value

# ------------------------------------------------------------ pooling


@op("MaxPool", "AveragePool")
def pool(cx: Cx) -> list[Value]:
    x = cx.input(0)
    rank = cx.rank(x)
    kernel = list(cx.attr("kernel_shape"))
    n = len(kernel)
    strides = list(cx.attr("strides", [1] * n))
    dilations = list(cx.attr("dilations", [1] * n))
    pads = spatial_pads_for(cx, x, kernel, strides, dilations)
    ceil = bool(cx.attr("ceil_mode", 0))
    avg = cx.op_type == "AveragePool"
    count_pad = bool(cx.attr("count_include_pad", 0))
    if n == 1:
        x2, _ = as_2d(cx, x)
        y = _pool2d(
            cx,
            x2,
            [1, *kernel],
            [1, *strides],
            [0, pads[0], 0, pads[1]],
            [1, *dilations],
            ceil,
            avg,
            count_pad,
        )
        return [back_to_1d(cx, y, True)]
    if n == 2:
        require(rank == 4, "2-D pooling needs NCHW input")
        padding = [pads[0], pads[1], pads[2], pads[3]]
        y = _pool2d(cx, x, kernel, strides, padding, dilations, ceil, avg, count_pad)
        if len(cx.node.output) > 1 and cx.node.output[1]:
            order = int(cx.attr("storage_order", 0))
            return [y, _argmax_indices(cx, x, y, kernel, strides, padding, dilations, order)]
        return [y]
    require(n == 3 and rank == 5, f"{n}-D pooling is not supported (1-D, 2-D and 3-D are)")
    require(len(cx.node.output) < 2 or not cx.node.output[1], "MaxPool's Indices of a 3-D pool")
    return [_pool3d(cx, x, kernel, strides, pads, dilations, ceil, avg, count_pad)]


def _argmax_indices(
    cx: Cx, x: Value, y: Value, kernel, strides, padding, dilations, order
) -> Value:
    """MaxPool's Indices: for each window the flat input position of its first
    maximum, found by walking the window's taps (gathers of known positions) and
    keeping a tap's position where it is strictly greater than the best so far."""
    n, c, h, w = (int(d.coef) for d in _static_dims(cx, x))
    _, _, ho, wo = (int(d.coef) for d in _static_dims(cx, y))
    i = np.arange(ho).reshape(-1, 1)
    j = np.arange(wo).reshape(1, -1)
    base = (np.arange(n).reshape(-1, 1, 1, 1) * c + np.arange(c).reshape(1, -1, 1, 1)) * (h * w)
    flat = reshape(cx, x, [n * c * h * w])
    best_v = best_i = None
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            r = i * strides[0] - padding[0] + kh * dilations[0]
            q = j * strides[1] - padding[1] + kw * dilations[1]
            valid = (r >= 0) & (r < h) & (q >= 0) & (q < w)
            within = np.clip(r, 0, h - 1) * w + np.clip(q, 0, w - 1)
            gather_at = np.broadcast_to(base + within, (n, c, ho, wo))
            index = base + (np.clip(q, 0, w - 1) * h + np.clip(r, 0, h - 1) if order else within)
            index = np.broadcast_to(index, (n, c, ho, wo)).astype(np.int64)
            v = cx.emit(
                "gather", [flat, Known(gather_at.astype(np.int64), TensorProto.INT64)], {"axis": 0}
            )
            if not valid.all():
                mask = Known(np.broadcast_to(valid, (n, c, ho, wo)).copy(), TensorProto.BOOL)
                v = cx.emit("where", [mask, v, cx.scalar(-np.inf, x)])
            idx = Known(index, TensorProto.INT64)
            if best_v is None:
                best_v, best_i = v, idx
                continue
            better = cx.emit("greater", [v, best_v], onnx_type=TensorProto.BOOL)
            best_i = cx.emit("where", [better, idx, best_i], onnx_type=TensorProto.INT64)
            best_v = cx.emit("maximum", [best_v, v])
    return best_i


def _static_dims(cx: Cx, v: Value):
    dims = cx.shape(v)
    for d in dims:
        require(d is not None and d.is_int, "MaxPool's Indices need static shapes")
    return dims


def spatial_pads_for(cx: Cx, x: Value, kernel, strides, dilations) -> list[int]:
    if cx.attr("auto_pad", "NOTSET") == "NOTSET":
        pads = list(cx.attr("pads", [0] * (2 * len(kernel))))
        require(len(pads) == 2 * len(kernel), "pads must have two values per spatial axis")
        return pads
    return spatial_pads(cx, x, kernel, strides, dilations)


def _pool2d(cx, x, kernel, strides, padding, dilations, ceil, avg, count_pad) -> Value:
    attrs: dict = {"kernel": kernel, "stride": strides, "padding": padding}
    if dilations != [1, 1]:
        attrs["dilation"] = dilations
    if ceil:
        attrs["ceil_mode"] = True
    if avg:
        if count_pad:
            attrs["count_include_pad"] = True
        return cx.emit("avg_pool2d", [x], attrs)
    return cx.emit("max_pool2d", [x], attrs)


def _pool3d(cx, x, kernel, strides, pads, dilations, ceil, avg, count_pad) -> Value:
    """A 3-D pool is two 2-D pools: over (H, W) on each depth slice, then over depth.
    Exact for max; for average, sums and window counts factor by axis the same way."""
    n, c, d, h, w = cx.shape(x)
    kd, kh, kw = kernel
    sd, sh, sw = strides
    dd, dh, dw = dilations
    pd0, ph0, pw0, pd1, ph1, pw1 = pads
    flat = reshape(cx, x, [n, c * d if c is not None and d is not None else -1, h, w])
    hw = _pool2d(cx, flat, [kh, kw], [sh, sw], [ph0, pw0, ph1, pw1], [dh, dw], ceil, avg, count_pad)
    _, _, ho, wo = cx.shape(hw)
    depth = reshape(cx, hw, [n, c, d, ho * wo])
    out = _pool2d(cx, depth, [kd, 1], [sd, 1], [pd0, 0, pd1, 0], [dd, 1], ceil, avg, count_pad)
    do = cx.shape(out)[2]
    return reshape(cx, out, [n, c, do, ho, wo])


@op("GlobalAveragePool", "GlobalMaxPool")
def global_pool(cx: Cx) -> list[Value]:
    x = cx.input(0)
    axes = list(range(2, cx.rank(x)))
    name = "reduce_mean" if cx.op_type == "GlobalAveragePool" else "reduce_max"
    return [cx.emit(name, [x], {"axes": axes, "keepdims": True})]


# ------------------------------------------------------------ normalization


def _channel_shape(cx: Cx, x: Value) -> list[SymDim]:
    """[C, 1, 1, ...]: a per-channel vector broadcast over NC... data."""
    return [cx.shape(x)[1], *([SymDim(1)] * (cx.rank(x) - 2))]


@op("BatchNormalization", since=9)
def batch_norm(cx: Cx) -> list[Value]:
    x, gamma, beta, mean, var = (cx.input(i) for i in range(5))
    eps = float(cx.attr("epsilon", 1e-5))
    if cx.attr("training_mode", 0):
        return _batch_norm_training(cx, x, gamma, beta, mean, var, eps)
    shape = _channel_shape(cx, x)
    known = [isinstance(v, Known) for v in (gamma, beta, mean, var)]
    if all(known):
        # Inference form: one scale and one shift per channel, folded now.
        g, b, m, v = (np.asarray(t.value, dtype=np.float64) for t in (gamma, beta, mean, var))
        s = g / np.sqrt(v + eps)
        t = b - m * s
        weight = all(t_.weight for t_ in (gamma, beta, mean, var))
        scale = Known(s.astype(np.float32), TensorProto.FLOAT, weight)
        shift = Known(t.astype(np.float32), TensorProto.FLOAT, weight)
        y = cx.emit("mul", [x, reshape(cx, scale, shape)])
        return [cx.emit("add", [y, reshape(cx, shift, shape)])]
    eps_k = cx.scalar(eps, x)
    s = cx.emit("mul", [gamma, cx.emit("rsqrt", [cx.emit("add", [var, eps_k])])])
    t = cx.emit("sub", [beta, cx.emit("mul", [mean, s])])
    y = cx.emit("mul", [x, reshape(cx, s, shape)])
    return [cx.emit("add", [y, reshape(cx, t, shape)])]


def _batch_norm_training(cx, x, gamma, beta, mean, var, eps) -> list[Value]:
    """Normalizes with the batch's statistics; also returns the running averages."""
    momentum = float(cx.attr("momentum", 0.9))
    axes = [0, *range(2, cx.rank(x))]
    shape = _channel_shape(cx, x)
    mu = cx.emit("reduce_mean", [x], {"axes": axes, "keepdims": True})
    centered = cx.emit("sub", [x, mu])
    sigma2 = cx.emit(
        "reduce_mean", [cx.emit("mul", [centered, centered])], {"axes": axes, "keepdims": True}
    )
    inv = cx.emit("rsqrt", [cx.emit("add", [sigma2, cx.scalar(eps, x)])])
    y = cx.emit("mul", [cx.emit("mul", [centered, inv]), reshape(cx, gamma, shape)])
    y = cx.emit("add", [y, reshape(cx, beta, shape)])
    channels = [cx.shape(x)[1]]
    batch_mean = reshape(cx, mu, channels)
    batch_var = reshape(cx, sigma2, channels)
    m = cx.scalar(momentum, x)
    one_m = cx.scalar(1.0 - momentum, x)
    running_mean = cx.emit("add", [cx.emit("mul", [mean, m]), cx.emit("mul", [batch_mean, one_m])])
    running_var = cx.emit("add", [cx.emit("mul", [var, m]), cx.emit("mul", [batch_var, one_m])])
    return [y, running_mean, running_var]


@op("LayerNormalization")
def layer_norm(cx: Cx) -> list[Value]:
    x, gamma, beta = cx.input(0), cx.input(1), cx.opt(2)
    eps = float(cx.attr("epsilon", 1e-5))
    shape = list(cx.shape(x))
    rank = len(shape)
    axis = int(cx.attr("axis", -1)) % rank
    return layer_norm_outputs(cx, x, gamma, beta, eps, axis, len(cx.node.output))


def layer_norm_outputs(
    cx: Cx, x, gamma, beta, eps: float, axis: int, n_outputs: int
) -> list[Value]:
    """LayerNormalization over axes [axis, rank): one `layernorm` over a flattened last
    axis, plus Mean and InvStdDev when the node asks for them."""
    shape = list(cx.shape(x))
    rank = len(shape)
    inner = prod(shape[axis:])
    flat_x = x if axis == rank - 1 else reshape(cx, x, [*shape[:axis], inner])
    g = _norm_param(cx, gamma, shape[axis:], inner)
    b = _norm_param(cx, beta, shape[axis:], inner) if beta is not None else cx.fill(0, x, [inner])
    y = cx.emit("layernorm", [flat_x, g, b], {"eps": eps})
    outs: list[Value] = [y if axis == rank - 1 else reshape(cx, y, shape)]
    if n_outputs > 1:
        axes = list(range(axis, rank))
        mean = cx.emit("reduce_mean", [x], {"axes": axes, "keepdims": True})
        outs.append(mean)
        if n_outputs > 2:
            centered = cx.emit("sub", [x, mean])
            var = cx.emit(
                "reduce_mean",
                [cx.emit("mul", [centered, centered])],
                {"axes": axes, "keepdims": True},
            )
            outs.append(cx.emit("rsqrt", [cx.emit("add", [var, cx.scalar(eps, x)])]))
    return outs


def _norm_param(cx: Cx, v: Value, normalized: list, inner: SymDim) -> Value:
    """Scale/bias broadcast to the normalized shape, then flattened to one axis."""
    shape = list(cx.shape(v))
    full = list(normalized)
    if len(shape) != len(full) or any(
        a is None or not _same(a, b) for a, b in zip(shape, full, strict=True)
    ):
        if isinstance(v, Known):
            target = tuple(int(d.coef) for d in full)
            v = Known(np.broadcast_to(v.value, target).copy(), v.onnx_type, v.weight)
        else:
            v = cx.emit("broadcast", [v], {"shape": full})
    return reshape(cx, v, [inner])


def _same(a, b) -> bool:
    from frontend.onnx.symdim import same

    return same(a, b)


@op("Softmax", "LogSoftmax")
def softmax(cx: Cx) -> list[Value]:
    x = cx.input(0)
    if cx.since < 13:
        # Before opset 13 the input is seen as 2-D: [prod(d[:axis]), prod(d[axis:])].
        shape = list(cx.shape(x))
        axis = int(cx.attr("axis", 1)) % max(len(shape), 1)
        flat = reshape(cx, x, [prod(shape[:axis]), -1])
        y = cx.emit("softmax", [flat], {"axis": -1})
        if cx.op_type == "LogSoftmax":
            y = cx.emit("log", [y])
        return [reshape(cx, y, shape)]
    axis = int(cx.attr("axis", -1))
    y = cx.emit("softmax", [x], {"axis": axis})
    if cx.op_type == "LogSoftmax":
        y = cx.emit("log", [y])
    return [y]


# ------------------------------------------------------------ reductions

_REDUCE = {
    "ReduceSum": "reduce_sum",
    "ReduceMean": "reduce_mean",
    "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_max",
    "ReduceSumSquare": "reduce_sum",
    "ReduceL1": "reduce_sum",
    "ReduceL2": "reduce_sum",
}


@op(*_REDUCE)
def reduce(cx: Cx) -> list[Value]:
    x = cx.input(0)
    rank = cx.rank(x)
    keepdims = bool(cx.attr("keepdims", 1))
    axes_input = cx.opt(1)
    if axes_input is not None:
        axes = [int(a) for a in cx.known(1, "the reduction axes").concrete_ints("axes")]
    else:
        axes = list(cx.attr("axes", []))
    if not axes:
        if cx.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(rank))
    axes = sorted(a % rank for a in axes) if rank else []
    name = _REDUCE[cx.op_type]
    if cx.op_type == "ReduceMax" and x.onnx_type == TensorProto.BOOL:
        x = cx.emit("cast", [x], {"dtype": "i32"}, onnx_type=TensorProto.INT32)
        y = cx.emit("reduce_max", [x], {"axes": axes, "keepdims": keepdims})
        return [cx.emit("cast", [y], {"dtype": "i8"}, onnx_type=TensorProto.BOOL)]
    if cx.op_type == "ReduceMin":
        y = cx.emit("reduce_max", [cx.emit("neg", [x])], {"axes": axes, "keepdims": keepdims})
        return [cx.emit("neg", [y])]
    if cx.op_type in ("ReduceSumSquare", "ReduceL2"):
        x = cx.emit("mul", [x, x])
    elif cx.op_type == "ReduceL1":
        x = cx.emit("abs", [x])
    y = cx.emit(name, [x], {"axes": axes, "keepdims": keepdims})
    if cx.op_type == "ReduceL2":
        y = cx.emit("sqrt", [y])
    return [y]


@op("InstanceNormalization")
def instance_norm(cx: Cx) -> list[Value]:
    x, gamma, beta = cx.input(0), cx.input(1), cx.input(2)
    eps = float(cx.attr("epsilon", 1e-5))
    axes = list(range(2, cx.rank(x)))
    if not axes:
        raise ConvertError("InstanceNormalization needs spatial axes")
    mean = cx.emit("reduce_mean", [x], {"axes": axes, "keepdims": True})
    centered = cx.emit("sub", [x, mean])
    var = cx.emit(
        "reduce_mean", [cx.emit("mul", [centered, centered])], {"axes": axes, "keepdims": True}
    )
    y = cx.emit("mul", [centered, cx.emit("rsqrt", [cx.emit("add", [var, cx.scalar(eps, x)])])])
    shape = _channel_shape(cx, x)
    y = cx.emit("mul", [y, reshape(cx, gamma, shape)])
    return [cx.emit("add", [y, reshape(cx, beta, shape)])]


__all__ = ["layer_norm_outputs"]
