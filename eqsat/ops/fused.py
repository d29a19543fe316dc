"""Fused kernels: registry ops whose meaning is a composition of other ops.

A fused op is declared by its body, a small expression over its operands; type
inference, reference semantics and FLOPs all come from the body, so the interpreter
and the property tests cover fused kernels with no extra code. Only the bytes moved
differ: a fused kernel reads its operands and writes its result once, with no
intermediate tensors in DRAM. That difference is what fusion buys.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eqsat.ir.types import TensorType
from eqsat.ops.base import (
    GROUPS_ATTR,
    TILE_ATTR,
    Attrs,
    AttrSpec,
    AttrType,
    OpDef,
    OpKind,
    OpTypeError,
    check_tile,
)
from eqsat.ops.elementwise import GELU_APPROXIMATE
from eqsat.ops.registry import REGISTRY, register


@dataclass(frozen=True)
class AttrRef:
    """In a body: the value of the fused op's own attribute `name`."""

    name: str


@dataclass(frozen=True)
class Call:
    op: str
    args: tuple[Call | str, ...]
    attrs: Mapping[str, object] = field(default_factory=dict)


def call(op: str, *args: Call | str, **attrs: object) -> Call:
    return Call(op, args, attrs)


def _walk(body: Call | str, env: Mapping[str, object], attrs: Attrs, leaf, node, seen=None):
    """Evaluate a body bottom-up. A call object used twice in a body (the product in
    mul(g, sigmoid(g))) is one node: evaluated, typed and counted once."""
    if isinstance(body, str):
        return leaf(env[body])
    seen = {} if seen is None else seen
    if id(body) in seen:
        return seen[id(body)]
    args = [_walk(a, env, attrs, leaf, node, seen) for a in body.args]
    given = {k: attrs[v.name] if isinstance(v, AttrRef) else v for k, v in body.attrs.items()}
    seen[id(body)] = out = node(REGISTRY[body.op], args, given)
    return out


def _infer_node(op: OpDef, arg_types, given):
    bound = op.bind_attrs(given)
    out = op.type_of(arg_types, bound)
    return out, op.canonical_attrs(arg_types, bound)


@dataclass(frozen=True)
class BodyNode:
    """One op application inside a fused body, with its operand and result types."""

    op: OpDef
    in_types: tuple[TensorType, ...]
    attrs: dict
    out: TensorType


def body_nodes(
    body: Call, operands: Sequence[str], ts: Sequence[TensorType], attrs: Attrs
) -> list[BodyNode]:
    """The body's op applications, operands before users."""
    env = dict(zip(operands, ts, strict=True))
    found: list[BodyNode] = []

    def node(op: OpDef, args, given):
        out, canon = _infer_node(op, args, given)
        found.append(BodyNode(op, tuple(args), canon, out))
        return out

    _walk(body, env, attrs, lambda t: t, node)
    return found


def body_types(body: Call, operands: Sequence[str], ts: Sequence[TensorType], attrs: Attrs):
    """Infer the body; returns the result type (first) of each node, bottom-up."""
    env = dict(zip(operands, ts, strict=True))
    return _walk(
        body, env, attrs, lambda t: t, lambda op, args, given: _infer_node(op, args, given)[0]
    )


def _make(
    name: str,
    operands: tuple[str, ...],
    body: Call,
    attrs: tuple[AttrSpec, ...],
    same_shape: tuple[str, ...] = (),
    check: Callable[[Sequence[TensorType], TensorType], None] | None = None,
):
    def infer(ts: Sequence[TensorType], a: Attrs) -> TensorType:
        check_tile(name, a)
        shapes = {ts[operands.index(o)].shape for o in same_shape}
        if len(shapes) > 1:
            raise OpTypeError(
                f"'{name}': {' and '.join(same_shape)} must have one shape (one kernel "
                f"keeps their products side by side), got "
                + " and ".join(str(list(ts[operands.index(o)].shape)) for o in same_shape)
            )
        out = body_types(body, operands, ts, a)
        if check is not None:
            check(ts, out)
        return out

    def ref(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
        env = dict(zip(operands, xs, strict=True))

        def node(op: OpDef, args, given):
            types = [_array_type(x) for x in args]
            _, canon = _infer_node(op, types, given)
            return op.ref(args, canon)

        return _walk(body, env, a, lambda x: x, node)

    def flops(ts: Sequence[TensorType], out: TensorType, a: Attrs) -> int:
        env = dict(zip(operands, ts, strict=True))
        total = 0

        def node(op: OpDef, args, given):
            nonlocal total
            out_t, canon = _infer_node(op, args, given)
            total += op.flops(args, out_t, canon)
            return out_t

        _walk(body, env, a, lambda t: t, node)
        return total

    return OpDef(
        name=name,
        kind=OpKind.FUSED,
        operands=operands,
        attrs=attrs,
        infer=infer,
        ref=ref,
        flops=flops,
        doc=f"fused kernel: {format_body(body)}",
        composition=body,
    )


def _array_type(x: np.ndarray) -> TensorType:
    from eqsat.ir.types import DType, dtype_of_array

    # Inside a fused body floats are computed in f32 and integers keep their type.
    dtype = DType.F32 if np.issubdtype(x.dtype, np.floating) else dtype_of_array(x)
    return TensorType(dtype, tuple(x.shape))


def format_body(body: Call | str) -> str:
    if isinstance(body, str):
        return body
    parts = [format_body(a) for a in body.args]
    for k, v in body.attrs.items():
        parts.append(f"{k}={v.name if isinstance(v, AttrRef) else v}")
    return f"{body.op}({', '.join(parts)})"


def contraction_of(op_name: str) -> str | None:
    """The matrix product or convolution an op computes (itself, or the one in a fused
    op's body), or None."""

    def find(body: Call | str) -> str | None:
        if isinstance(body, str):
            return None
        if REGISTRY[body.op].kind in (OpKind.MATMUL, OpKind.CONV):
            return body.op
        return next((c for a in body.args if (c := find(a)) is not None), None)

    op = REGISTRY[op_name]
    if op.kind in (OpKind.MATMUL, OpKind.CONV):
        return op_name
    return find(op.composition) if op.composition is not None else None


def fused(
    name: str,
    operands: tuple[str, ...],
    body: Call,
    attrs: tuple[AttrSpec, ...] = (),
    same_shape: tuple[str, ...] = (),
    check: Callable[[Sequence[TensorType], TensorType], None] | None = None,
) -> OpDef:
    """Register a fused op declared by its body; `same_shape` names operands that must
    have equal shapes beyond what the body's broadcasting allows (a gated kernel's two
    weights); `check(operand types, result type)` raises OpTypeError for operands the
    kernel does not take although the body would (a bias that is not per channel)."""
    return register(_make(name, operands, body, attrs, same_shape, check))


# The kernels the accelerator offers: a matrix product or convolution with an
# epilogue applied on the way out of the accumulator, and short elementwise chains.
_MM_BIAS = call("add", call("matmul", "x", "w"), "b")

# Kernels around a contraction take its GEMM loop's `tile` too (the backend emits it).
_TILE = (TILE_ATTR,)

fused("matmul_bias", ("x", "w", "b"), _MM_BIAS, _TILE)
fused("matmul_bias_relu", ("x", "w", "b"), call("relu", _MM_BIAS), _TILE)
fused(
    "matmul_bias_gelu",
    ("x", "w", "b"),
    call("gelu", _MM_BIAS, approximate=AttrRef("approximate")),
    (GELU_APPROXIMATE, *_TILE),
)
fused("matmul_bias_add", ("x", "w", "b", "r"), call("add", _MM_BIAS, "r"), _TILE)

_CONV_ATTRS = (
    AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
    AttrSpec("padding", AttrType.INTS, (0, 0), "zero padding [PH, PW] on each side"),
    GROUPS_ATTR,
    TILE_ATTR,
)
_CONV = call(
    "conv2d",
    "x",
    "w",
    stride=AttrRef("stride"),
    padding=AttrRef("padding"),
    groups=AttrRef("groups"),
)
_CONV_BIAS = call("add", _CONV, "b")

fused("conv2d_bias", ("x", "w", "b"), _CONV_BIAS, _CONV_ATTRS)
fused("conv2d_bias_relu", ("x", "w", "b"), call("relu", _CONV_BIAS), _CONV_ATTRS)
fused(
    "conv2d_bias_add_relu",
    ("x", "w", "b", "r"),
    call("relu", call("add", _CONV_BIAS, "r")),
    _CONV_ATTRS,
)
# clip(conv(x, w) + b): ReLU6 (MobileNet's activation) and other bounded activations
fused(
    "conv2d_bias_clip",
    ("x", "w", "b"),
    call("clip", _CONV_BIAS, min=AttrRef("min"), max=AttrRef("max")),
    (
        *_CONV_ATTRS,
        AttrSpec("min", AttrType.FLOAT, -math.inf, "lower bound"),
        AttrSpec("max", AttrType.FLOAT, math.inf, "upper bound"),
    ),
)

# silu(conv(x, w) + b): SiLU (swish) in the epilogue, EfficientNet's and YOLO's activation
fused(
    "conv2d_bias_silu",
    ("x", "w", "b"),
    call("mul", _CONV_BIAS, call("sigmoid", _CONV_BIAS)),
    _CONV_ATTRS,
)

# hard_swish(conv(x, w) + b): MobileNetV3's activation in the epilogue
fused("conv2d_bias_hardswish", ("x", "w", "b"), call("hard_swish", _CONV_BIAS), _CONV_ATTRS)

fused("add_relu", ("a", "b"), call("relu", call("add", "a", "b")))
fused("mul_add", ("a", "b", "c"), call("add", call("mul", "a", "b"), "c"))
# relu(a * b + c): a batch norm and its ReLU where no convolution takes them in
# (pre-activation blocks: DenseNet, ResNet-v2; a norm after a concat or an add)
fused("mul_add_relu", ("a", "b", "c"), call("relu", call("add", call("mul", "a", "b"), "c")))
# SiLU (swish): x * sigmoid(x) in one pass
fused("silu", ("x",), call("mul", "x", call("sigmoid", "x")))

# Matmul epilogues without a bias (LLaMA-style blocks have none): the residual add,
# a scalar scale (attention scores), an activation. ORT's FusedMatMul, XLA's output
# fusions.
_MM = call("matmul", "x", "w")
fused("matmul_add", ("x", "w", "r"), call("add", _MM, "r"), _TILE)
fused("matmul_scale", ("x", "w", "s"), call("mul", _MM, "s"), _TILE)
fused("matmul_relu", ("x", "w"), call("relu", _MM), _TILE)
fused(
    "matmul_gelu",
    ("x", "w"),
    call("gelu", _MM, approximate=AttrRef("approximate")),
    (GELU_APPROXIMATE, *_TILE),
)
# silu(x@w): the product is one node used twice (see _walk)
fused("matmul_silu", ("x", "w"), call("mul", _MM, call("sigmoid", _MM)), _TILE)

# Gated products (SwiGLU, GeGLU): two products of the same input, the gate's
# activation times the up projection, in one kernel that reads x once and keeps two
# accumulators (backend/gated.py).
_GATE = call("matmul", "x", "wg")
_UP = call("matmul", "x", "wu")
fused(
    "matmul_swiglu",
    ("x", "wg", "wu"),
    call("mul", call("mul", _GATE, call("sigmoid", _GATE)), _UP),
    same_shape=("wg", "wu"),
)
fused(
    "matmul_geglu",
    ("x", "wg", "wu"),
    call("mul", call("gelu", _GATE, approximate=AttrRef("approximate")), _UP),
    (GELU_APPROXIMATE,),
    same_shape=("wg", "wu"),
)
