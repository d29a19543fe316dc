"""A normalization in the prologue of a matrix product (eqsat/ops/norm_matmul.py):
layernorm_matmul*, rmsnorm_matmul.

The kernel is the GEMM of the inner product (matmul, matmul_bias, matmul_bias_gelu:
backend/lower_contract.py) at a tile whose K loop has one step, with a `NormLoader`
(norm_loader.py) for A: each A panel (whole rows of x) is normalized on chip and is the
A tile of every product of that panel. Planned (and priced) by eqsat/norm_prologue.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.norm_prologue import NORM_MATMUL

from .lower_contract import lower_contraction, lower_fused
from .norm_loader import NormPrologue
from .operands import inner_node, norm_params
from .views import Value

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_norm_matmul(c: Compiler, i: int, node: Node) -> Value:
    """The inner product's lowering with the norm in its A loader."""
    kind, inner, count = NORM_MATMUL[node.op]
    k = c.graph.nodes[node.inputs[0]].type.shape[-1]
    params = norm_params(c, i, node, count, k)
    prologue = NormPrologue(kind, params, float(node.attr("eps")))  # type: ignore[arg-type]
    product = inner_node(node, inner, count)
    if inner == "matmul":
        return lower_contraction(c, i, product, prologue)
    return lower_fused(c, i, product, prologue)
