"""The op registry. Importing this package registers every op."""

from eqsat.ops import (  # noqa: F401
    attention,
    chain,  # two products in one kernel (FFN blocks: eqsat/ops/chain.py)
    elementwise,
    fused,
    layout,
    leaves,
    linalg,
    masks,
    mathfn,
    nn,
    norm_matmul,
    quant,
    quant_ort,  # int8 kernels that requantize in f32 as ONNX Runtime does
    reduce,
    rotation,
    scan,
    spatial,
    winograd,  # F(m, 3) convolution pieces (after fused: its epilogues are fused ops)
)
from eqsat.ops.base import (
    REQUIRED,
    Attrs,
    AttrSpec,
    AttrType,
    AttrValue,
    OpDef,
    OpKind,
    OpTypeError,
)
from eqsat.ops.registry import REGISTRY, get_op

__all__ = [
    "REGISTRY",
    "REQUIRED",
    "AttrSpec",
    "AttrType",
    "AttrValue",
    "Attrs",
    "OpDef",
    "OpKind",
    "OpTypeError",
    "get_op",
]
