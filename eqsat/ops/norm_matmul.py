"""A normalization fused into the prologue of the product that reads it.

In a pre-norm transformer block (GPT-2, LLaMA) the normalized residual stream feeds
one product only: ln_1 the QKV projection, ln_2 the first feed-forward matmul. These
ops are that product with the normalization of its A operand in the same kernel: the
rows of x are normalized on chip, so the normalized tensor never goes to DRAM and the
norm's kernel goes away (eqsat/norm_prologue.py plans it, backend/norm_matmul.py emits
it). Declared by their bodies like every fused op (eqsat/ops/fused.py): reference
semantics, types and FLOPs are the composition's. The inner product's operands come
first (x, w, b), the normalization's parameters last.
"""

from __future__ import annotations

from eqsat.ops.base import AttrSpec, AttrType
from eqsat.ops.elementwise import GELU_APPROXIMATE
from eqsat.ops.fused import AttrRef, call, fused

LN_EPS = AttrSpec("eps", AttrType.FLOAT, 1e-5, "the layernorm's epsilon")
RMS_EPS = AttrSpec("eps", AttrType.FLOAT, 1e-6, "the rmsnorm's epsilon")

_LN_PRODUCT = call("matmul", call("layernorm", "x", "gamma", "beta", eps=AttrRef("eps")), "w")
_LN_BIAS = call("add", _LN_PRODUCT, "b")

fused("layernorm_matmul", ("x", "w", "gamma", "beta"), _LN_PRODUCT, (LN_EPS,))
fused("layernorm_matmul_bias", ("x", "w", "b", "gamma", "beta"), _LN_BIAS, (LN_EPS,))
fused(
    "layernorm_matmul_bias_gelu",
    ("x", "w", "b", "gamma", "beta"),
    call("gelu", _LN_BIAS, approximate=AttrRef("approximate")),
    (LN_EPS, GELU_APPROXIMATE),
)
fused(
    "rmsnorm_matmul",
    ("x", "w", "gamma"),
    call("matmul", call("rmsnorm", "x", "gamma", eps=AttrRef("eps")), "w"),
    (RMS_EPS,),
)
# rmsnorm(x) into both products of LLaMA's SwiGLU: silu(n @ wg) * (n @ wu), n normalized
# once per A panel (one call object: one node of the body, eqsat/ops/fused.py _walk)
_RMS = call("rmsnorm", "x", "gamma", eps=AttrRef("eps"))
_GATE = call("matmul", _RMS, "wg")
fused(
    "rmsnorm_matmul_swiglu",
    ("x", "wg", "wu", "gamma"),
    call("mul", call("mul", _GATE, call("sigmoid", _GATE)), call("matmul", _RMS, "wu")),
    (RMS_EPS,),
    same_shape=("wg", "wu"),
)

# The other side of a post-norm block (BERT): the product whose output, plus its bias
# and the residual, the norm reads. layernorm(x@w + b + r) in one kernel whose output
# tiles hold whole rows (ONNX Runtime's SkipLayerNormalization fused into the GEMM):
# the sum never goes to DRAM and the norm's kernel goes away (eqsat/norm_epilogue.py
# plans it, backend/norm_epilogue.py emits it).
fused(
    "matmul_bias_add_layernorm",
    ("x", "w", "b", "r", "gamma", "beta"),
    call(
        "layernorm",
        call("add", call("add", call("matmul", "x", "w"), "b"), "r"),
        "gamma",
        "beta",
        eps=AttrRef("eps"),
    ),
    (LN_EPS,),
)
