"""ONNX Runtime's fused ops (domain com.microsoft), imported as their meaning, so that
graphs ORT optimized can run on eqsat's simulator next to eqsat's own result."""

from __future__ import annotations

from frontend.onnx.convert import Cx, op, require
from frontend.onnx.convert.linalg import _transposed, matmul, scale
from frontend.onnx.convert.nn import layer_norm_outputs
from frontend.onnx.values import Value

MS = "com.microsoft"


@op("FusedMatMul", domain=MS)
def fused_matmul(cx: Cx) -> list[Value]:
    """alpha * op(A) @ op(B), op a transpose of the last two axes."""
    require(
        not cx.attr("transBatchA", 0) and not cx.attr("transBatchB", 0),
        "FusedMatMul with transBatch is not supported",
    )
    a, b = cx.input(0), cx.input(1)
    if cx.attr("transA", 0):
        a = _transposed(cx, a)
    if cx.attr("transB", 0):
        b = _transposed(cx, b)
    return [scale(cx, matmul(cx, a, b), float(cx.attr("alpha", 1.0)))]


@op("Gelu", domain=MS)
def gelu(cx: Cx) -> list[Value]:
    return [cx.emit("gelu", [cx.input(0)], {"approximate": "none"})]


@op("BiasGelu", domain=MS)
def bias_gelu(cx: Cx) -> list[Value]:
    x = cx.emit("add", [cx.input(0), cx.input(1)])
    return [cx.emit("gelu", [x], {"approximate": "none"})]


@op("FastGelu", domain=MS)
def fast_gelu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    if cx.opt(1) is not None:
        x = cx.emit("add", [x, cx.input(1)])
    return [cx.emit("gelu", [x], {"approximate": "tanh"})]


@op("QuickGelu", domain=MS)
def quick_gelu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    alpha = float(cx.attr("alpha", 1.702))
    return [cx.emit("mul", [x, cx.emit("sigmoid", [scale(cx, x, alpha)])])]


@op("BiasAdd", domain=MS)
def bias_add(cx: Cx) -> list[Value]:
    return [cx.emit("add", [cx.emit("add", [cx.input(0), cx.input(1)]), cx.input(2)])]


@op("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", domain=MS)
def skip_layer_norm(cx: Cx) -> list[Value]:
    """LayerNorm(input + skip + bias); outputs: the normalized value, mean, inverse
    standard deviation, and the sum that entered the normalization."""
    x, skip = cx.input(0), cx.input(1)
    simplified = cx.op_type == "SkipSimplifiedLayerNormalization"
    gamma = cx.input(2)
    beta = None if simplified else cx.opt(3)
    bias = cx.opt(3 if simplified else 4)
    eps = float(cx.attr("epsilon", 1e-12))
    total = cx.emit("add", [x, skip])
    if bias is not None:
        total = cx.emit("add", [total, bias])
    n_out = len(cx.node.output)
    if simplified:
        outs: list[Value] = [cx.emit("rmsnorm", [total, gamma], {"eps": eps})]
        require(
            n_out < 2 or not any(cx.node.output[1:3]),
            "the mean/inv_std outputs of SkipSimplifiedLayerNormalization",
        )
        outs += [None, None]  # type: ignore[list-item]
    else:
        rank = cx.rank(total)
        outs = layer_norm_outputs(cx, total, gamma, beta, eps, rank - 1, min(n_out, 3))
        outs += [None] * (3 - len(outs))  # type: ignore[list-item]
    if n_out > 3:
        outs.append(total)
    return outs[:n_out]


@op("SimplifiedLayerNormalization", domain=MS)
def simplified_layer_norm(cx: Cx) -> list[Value]:
    x, gamma = cx.input(0), cx.input(1)
    axis = int(cx.attr("axis", -1)) % cx.rank(x)
    require(axis == cx.rank(x) - 1, "SimplifiedLayerNormalization over several axes")
    return [cx.emit("rmsnorm", [x, gamma], {"eps": float(cx.attr("epsilon", 1e-5))})]
