"""Elementwise ops: arithmetic, comparisons, logic, activations, casts."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.dtypes import FLOAT_TYPES, eqsat_dtype
from frontend.onnx.values import Known, Tensor, Value

_BINARY = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Equal": "equal",
    "Less": "less",
    "LessOrEqual": "less_equal",
    "Greater": "greater",
    "GreaterOrEqual": "greater_equal",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
}
_BOOL_RESULT = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}


@op(*_BINARY, since=7)
def binary(cx: Cx) -> list[Value]:
    a, b = cx.input(0), cx.input(1)
    out_type = TensorProto.BOOL if cx.op_type in _BOOL_RESULT else a.onnx_type
    return [cx.emit(_BINARY[cx.op_type], [a, b], onnx_type=out_type)]


@op("Pow", since=7)
def pow_(cx: Cx) -> list[Value]:
    x, y = cx.input(0), cx.input(1)
    if isinstance(y, Known):
        exponent = np.asarray(y.value)
        if exponent.size == 1:
            e = float(exponent.reshape(-1)[0])
            if e == 1.0:
                return [x]
            if e == 2.0 and cx.is_float(x):  # as exporters write variance: one multiply
                return [cx.emit("mul", [x, x])]
        y = Known(
            exponent.astype(np.asarray(x.value).dtype if isinstance(x, Known) else _np_of(x)),
            x.onnx_type,
        )
    elif y.onnx_type != x.onnx_type:
        y = cx.emit("cast", [y], {"dtype": cx.dtype(x).value}, onnx_type=x.onnx_type)
    return [cx.emit("pow", [x, y], onnx_type=x.onnx_type)]


def _np_of(v: Value):
    from frontend.onnx.dtypes import numpy_type

    return numpy_type(v.onnx_type)


@op("Sum", "Mean", "Max", "Min", since=8)
def variadic(cx: Cx) -> list[Value]:
    values = [v for v in cx.inputs if v is not None]
    require(bool(values), f"{cx.op_type} needs at least one input")
    name = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}[cx.op_type]
    acc = values[0]
    for v in values[1:]:
        acc = cx.emit(name, [acc, v])
    if cx.op_type == "Mean" and len(values) > 1:
        acc = cx.emit("div", [acc, cx.scalar(len(values), acc)])
    if isinstance(acc, Known):
        acc = cx.tensor(acc)
    return [acc]


_UNARY = {
    "Relu": "relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Exp": "exp",
    "Log": "log",
    "Sqrt": "sqrt",
    "Reciprocal": "reciprocal",
    "Neg": "neg",
    "Abs": "abs",
    "Floor": "floor",
    "Ceil": "ceil",
}
# Introduced after opset 6 (or never changed): any version.
_UNARY_NEW = {
    "Erf": "erf",
    "Sin": "sin",
    "Cos": "cos",
    "Not": "logical_not",
    "IsNaN": "isnan",
    "HardSwish": "hard_swish",
}
_UNARY.update(_UNARY_NEW)


@op(*_UNARY_NEW)
@op(*(k for k in _UNARY if k not in _UNARY_NEW), since=6)
def unary(cx: Cx) -> list[Value]:
    x = cx.input(0)
    out_type = TensorProto.BOOL if cx.op_type in ("Not", "IsNaN") else x.onnx_type
    return [cx.emit(_UNARY[cx.op_type], [x], onnx_type=out_type)]


@op("Identity")
def identity(cx: Cx) -> list[Value]:
    return [cx.input(0)]


@op("Dropout")
def dropout(cx: Cx) -> list[Value]:
    """Inference: the data passes, the mask is all true."""
    training = cx.opt(2)
    if training is not None and bool(
        np.asarray(cx.known(2, "Dropout's training_mode").value).reshape(-1)[0]
    ):
        ratio = cx.known(1, "Dropout's ratio").scalar() if cx.opt(1) is not None else 0.5
        require(
            ratio == 0, "Dropout in training mode drops at random (only ratio 0 is deterministic)"
        )
    x = cx.input(0)
    outs: list[Value] = [x]
    if len(cx.node.output) > 1 and cx.node.output[1]:
        mask = Known(np.array(True), TensorProto.BOOL)
        outs.append(
            cx.emit("broadcast", [mask], {"shape": list(cx.shape(x))}, onnx_type=TensorProto.BOOL)
        )
    return outs


@op("Gelu")
def gelu(cx: Cx) -> list[Value]:
    approximate = cx.attr("approximate", "none")
    require(approximate in ("none", "tanh"), f"Gelu approximate='{approximate}' is not supported")
    return [cx.emit("gelu", [cx.input(0)], {"approximate": approximate})]


@op("HardSigmoid")
def hard_sigmoid(cx: Cx) -> list[Value]:
    attrs = {"alpha": float(cx.attr("alpha", 0.2)), "beta": float(cx.attr("beta", 0.5))}
    return [cx.emit("hard_sigmoid", [cx.input(0)], attrs)]


def in_f32(fn):
    """A decomposed activation computes in f32 and rounds once, as the op would: a
    bf16 input is widened first and the result narrowed back."""

    def convert(cx: Cx) -> list[Value]:
        x = cx.input(0)
        if x.onnx_type != TensorProto.BFLOAT16:
            return fn(cx)
        wide = cx.emit("cast", [x], {"dtype": "f32"}, onnx_type=TensorProto.FLOAT)
        cx.inputs[0] = wide
        out = fn(cx)
        return [cx.emit("cast", [out[0]], {"dtype": "bf16"}, onnx_type=TensorProto.BFLOAT16)]

    convert.__doc__ = fn.__doc__
    return convert


@op("LeakyRelu")
@in_f32
def leaky_relu(cx: Cx) -> list[Value]:
    return [leaky_relu_of(cx, cx.input(0), float(cx.attr("alpha", 0.01)))]


def leaky_relu_of(cx: Cx, x: Value, alpha: float) -> Value:
    """x where x >= 0, else alpha * x (also QLinearLeakyRelu's, on dequantized values)."""
    negative = cx.emit("less", [x, cx.scalar(0, x)], onnx_type=TensorProto.BOOL)
    return cx.emit("where", [negative, cx.emit("mul", [x, cx.scalar(alpha, x)]), x])


@op("Elu")
@in_f32
def elu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    alpha = float(cx.attr("alpha", 1.0))
    negative = cx.emit("less", [x, cx.scalar(0, x)], onnx_type=TensorProto.BOOL)
    em1 = cx.emit("sub", [cx.emit("exp", [x]), cx.scalar(1, x)])
    return [cx.emit("where", [negative, cx.emit("mul", [em1, cx.scalar(alpha, x)]), x])]


@op("PRelu", since=7)
@in_f32
def prelu(cx: Cx) -> list[Value]:
    x, slope = cx.input(0), cx.input(1)
    negative = cx.emit("less", [x, cx.scalar(0, x)], onnx_type=TensorProto.BOOL)
    return [cx.emit("where", [negative, cx.emit("mul", [x, slope]), x])]


@op("Selu", since=6)
@in_f32
def selu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    alpha = float(cx.attr("alpha", 1.67326319217681884765625))
    gamma = float(cx.attr("gamma", 1.05070102214813232421875))
    negative = cx.emit("less_equal", [x, cx.scalar(0, x)], onnx_type=TensorProto.BOOL)
    em1 = cx.emit(
        "mul", [cx.emit("sub", [cx.emit("exp", [x]), cx.scalar(1, x)]), cx.scalar(alpha, x)]
    )
    return [cx.emit("mul", [cx.emit("where", [negative, em1, x]), cx.scalar(gamma, x)])]


@op("Celu")
@in_f32
def celu(cx: Cx) -> list[Value]:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))"""
    x = cx.input(0)
    alpha = float(cx.attr("alpha", 1.0))
    e = cx.emit("exp", [cx.emit("div", [x, cx.scalar(alpha, x)])])
    neg = cx.emit("mul", [cx.emit("sub", [e, cx.scalar(1, x)]), cx.scalar(alpha, x)])
    zero = cx.scalar(0, x)
    return [cx.emit("add", [cx.emit("maximum", [x, zero]), cx.emit("minimum", [neg, zero])])]


@op("ThresholdedRelu")
@in_f32
def thresholded_relu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    above = cx.emit(
        "greater", [x, cx.scalar(float(cx.attr("alpha", 1.0)), x)], onnx_type=TensorProto.BOOL
    )
    return [cx.emit("where", [above, x, cx.scalar(0, x)])]


@op("Softsign")
@in_f32
def softsign(cx: Cx) -> list[Value]:
    x = cx.input(0)
    return [cx.emit("div", [x, cx.emit("add", [cx.emit("abs", [x]), cx.scalar(1, x)])])]


@op("Mish")
@in_f32
def mish(cx: Cx) -> list[Value]:
    """x * tanh(softplus(x))"""
    x = cx.input(0)
    sp = cx.emit("log", [cx.emit("add", [cx.emit("exp", [x]), cx.scalar(1, x)])])
    return [cx.emit("mul", [x, cx.emit("tanh", [sp])])]


@op("Softplus")
@in_f32
def softplus(cx: Cx) -> list[Value]:
    x = cx.input(0)
    return [cx.emit("log", [cx.emit("add", [cx.emit("exp", [x]), cx.scalar(1, x)])])]


@op("Sign")
def sign(cx: Cx) -> list[Value]:
    x = cx.input(0)
    zero = cx.scalar(0, x)
    pos = cx.emit(
        "cast",
        [cx.emit("greater", [x, zero], onnx_type=TensorProto.BOOL)],
        {"dtype": cx.dtype(x).value},
    )
    neg = cx.emit(
        "cast",
        [cx.emit("less", [x, zero], onnx_type=TensorProto.BOOL)],
        {"dtype": cx.dtype(x).value},
    )
    return [cx.emit("sub", [pos, neg], onnx_type=x.onnx_type)]


@op("Clip")
def clip(cx: Cx) -> list[Value]:
    x = cx.input(0)
    lo, hi = cx.opt(1), cx.opt(2)
    if cx.since < 11:  # bounds as attributes
        lo = cx.scalar(cx.attr("min"), x) if "min" in cx.attrs else None
        hi = cx.scalar(cx.attr("max"), x) if "max" in cx.attrs else None
    if (lo is None or isinstance(lo, Known)) and (hi is None or isinstance(hi, Known)):
        attrs = {}
        if lo is not None:
            attrs["min"] = float(np.asarray(lo.value).reshape(-1)[0])
        if hi is not None:
            attrs["max"] = float(np.asarray(hi.value).reshape(-1)[0])
        if not attrs:
            return [x]
        return [cx.emit("clip", [x], attrs)]
    out = x
    if lo is not None:
        out = cx.emit("maximum", [out, lo])
    if hi is not None:
        out = cx.emit("minimum", [out, hi])
    return [out]


@op("Where")
def where(cx: Cx) -> list[Value]:
    cond, a, b = cx.input(0), cx.input(1), cx.input(2)
    if isinstance(cond, Known) and not cond.symbolic:
        flags = np.asarray(cond.value).astype(bool)
        if flags.all() or not flags.any():  # decided: the broadcast of one side
            chosen = a if flags.all() else b
            return [_broadcast(cx, chosen, _bshape(cx, [cond, a, b]))]
    return [cx.emit("where", [cond, a, b], onnx_type=a.onnx_type)]


def _bshape(cx: Cx, values: list[Value]):
    from frontend.onnx.convert.tensor import broadcast_dims

    return broadcast_dims([cx.shape(v) for v in values])


def _broadcast(cx: Cx, v: Value, shape) -> Value:
    from frontend.onnx.symdim import same

    current = cx.shape(v)
    if len(current) == len(shape) and all(same(a, b) for a, b in zip(current, shape, strict=True)):
        return v
    return cx.emit("broadcast", [v], {"shape": list(shape)}, onnx_type=v.onnx_type)


@op("Cast", "CastLike", since=6)
def cast(cx: Cx) -> list[Value]:
    x = cx.input(0)
    to = cx.attr("to") if cx.op_type == "Cast" else cx.input(1).onnx_type
    return [cast_to(cx, x, to)]


def cast_to(cx: Cx, x: Value, to: int) -> Value:
    """ONNX Cast: float -> integer truncates toward zero; anything -> bool is != 0."""
    target = eqsat_dtype(to)
    if to == TensorProto.BOOL:
        if x.onnx_type == TensorProto.BOOL:
            return x
        zero = cx.scalar(0, x)
        return cx.emit(
            "logical_not", [cx.emit("equal", [x, zero], onnx_type=TensorProto.BOOL)], onnx_type=to
        )
    src = eqsat_dtype(x.onnx_type)
    if x.onnx_type in FLOAT_TYPES and to not in FLOAT_TYPES:
        x = cx.emit("trunc", [x])
    if src is target:
        if isinstance(x, Tensor):
            return Tensor(x.name, x.dtype, to, x.shape, x.static, x.tags)
        return Known(x.value, to, x.weight)
    return cx.emit("cast", [x], {"dtype": target.value}, onnx_type=to)


__all__ = ["cast_to", "in_f32"]
