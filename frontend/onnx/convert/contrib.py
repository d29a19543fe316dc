"""ONNX Runtime's fused ops (domain com.microsoft), imported as their meaning, so that
graphs ORT optimized can run on eqsat's simulator next to eqsat's own result."""

from __future__ import annotations

from frontend.onnx.context import ConvertError
from frontend.onnx.convert.linalg import matmul, scale
from frontend.onnx.convert.nn import layer_norm_outputs
from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.convert.tensor import swap_last_axes
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
        a = swap_last_axes(cx, a)
    if cx.attr("transB", 0):
        b = swap_last_axes(cx, b)
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


@op("Attention", domain=MS)
def attention(cx: Cx) -> list[Value]:
    """ORT's fused self-attention: one projection to Q, K and V, scaled scores, a mask
    (raw 0/1 mask, right-padding lengths, or none; causal when unidirectional), an
    optional additive bias, softmax, and the heads merged back. Without past state."""
    from frontend.onnx.convert.tensor import reshape, slice_axis

    require(
        cx.opt(4) is None and (len(cx.node.output) < 2 or not cx.node.output[1]),
        "Attention with past/present state is not supported",
    )
    require(not cx.attr("do_rotary", 0), "Attention with do_rotary is not supported")
    x, w, bias, mask = cx.input(0), cx.input(1), cx.opt(2), cx.opt(3)
    heads = int(cx.attr("num_heads"))
    b, s, _ = cx.shape(x)
    total = cx.shape(w)[1]
    sizes = cx.attr("qkv_hidden_sizes")
    if sizes:
        hq, hk, hv = (int(v) for v in sizes)
    else:
        require(total.is_int and total.coef % 3 == 0, "Attention weights must hold Q, K and V")
        hq = hk = hv = total.coef // 3
    qkv = matmul(cx, x, w)
    if bias is not None:
        qkv = cx.emit("add", [qkv, bias])
    q = slice_axis(cx, qkv, 2, 0, hq)
    k = slice_axis(cx, qkv, 2, hq, hq + hk)
    v = slice_axis(cx, qkv, 2, hq + hk, hq + hk + hv)

    def split_heads(t, width, perm):
        return cx.emit("transpose", [reshape(cx, t, [b, s, heads, width // heads])], {"perm": perm})

    qh = split_heads(q, hq, [0, 2, 1, 3])
    kt = split_heads(k, hk, [0, 2, 3, 1])
    vh = split_heads(v, hv, [0, 2, 1, 3])
    scale_ = float(cx.attr("scale", 1.0 / (hq // heads) ** 0.5))
    scores = scale(cx, cx.emit("matmul", [qh, kt]), scale_)
    keep = _attention_keep(cx, mask, b, s)
    if keep is not None:
        fill = float(cx.attr("mask_filter_value", -10000.0))
        bias_ = cx.emit("where", [keep, cx.scalar(0.0, x), cx.scalar(fill, x)])
        scores = cx.emit("add", [scores, bias_])
    if cx.opt(5) is not None:
        scores = cx.emit("add", [scores, cx.input(5)])
    probs = cx.emit("softmax", [scores], {"axis": -1})
    out = cx.emit("transpose", [cx.emit("matmul", [probs, vh])], {"perm": [0, 2, 1, 3]})
    return [reshape(cx, out, [b, s, hv])]


def _attention_keep(cx: Cx, mask, b, s):
    """The [B or 1, 1, S, S] (or broadcastable) 0/1 mask of the scores that stay."""
    from onnx import TensorProto

    from frontend.onnx.convert.tensor import reshape, unsqueeze

    keep = None
    if mask is not None:
        rank = cx.rank(mask)
        if rank in (2, 3):  # raw mask [B, S_total] or [B, S, S_total]: positive keeps
            positive = cx.emit("greater", [mask, cx.scalar(0, mask)], onnx_type=TensorProto.BOOL)
            keep = unsqueeze(cx, positive, [1, 2] if rank == 2 else [1])
        elif rank == 1:  # right padding: the valid length of each sequence
            require(
                cx.shape(mask)[0] is not None and cx.shape(mask)[0] == b,
                "Attention mask_index of left padding (2 * batch) is not supported",
            )
            positions = cx.emit(
                "iota", [], {"shape": [s], "dtype": "i32"}, onnx_type=TensorProto.INT32
            )
            lengths = reshape(cx, mask, [b, 1, 1, 1])
            keep = cx.emit(
                "less", [reshape(cx, positions, [1, 1, 1, s]), lengths], onnx_type=TensorProto.BOOL
            )
        else:
            raise ConvertError(f"Attention mask_index of rank {rank} is not supported")
    if cx.attr("unidirectional", 0):
        row = cx.emit(
            "iota", [], {"shape": [s, s], "axis": 0, "dtype": "i32"}, onnx_type=TensorProto.INT32
        )
        col = cx.emit(
            "iota", [], {"shape": [s, s], "axis": 1, "dtype": "i32"}, onnx_type=TensorProto.INT32
        )
        causal = cx.emit("less_equal", [col, row], onnx_type=TensorProto.BOOL)
        keep = (
            causal
            if keep is None
            else cx.emit("logical_and", [keep, causal], onnx_type=TensorProto.BOOL)
        )
    return keep
