"""Layout choice: in which axis order a value is stored in DRAM.

Row-major by default. Two cases choose otherwise so that DMAs stay contiguous and no
copy kernel is needed:
- a value whose only users transpose it the same way (keeping the last axis) is
  stored already transposed: the transposed view is then row-major, so e.g. BERT's
  `reshape(transpose(matmul(probs, v)))` is free (the matmul writes rows with a
  stride instead);
- conv weights are stored [KH, KW, C, O] (params are declared in that layout and the
  caller's arrays are transposed when the program is fed): a (kh) slice of the
  implicit GEMM's B operand is then one contiguous block.
Graph outputs are always row-major.
"""

from __future__ import annotations

from eqsat.ir.graph import Graph
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import contraction_of as contraction_op

CONV_WEIGHT_PERM = (2, 3, 1, 0)


CONV_OPS = frozenset(n for n in REGISTRY if contraction_op(n) in ("conv2d", "qconv2d"))
# producers that can write any axis order (matmul kernels: any order keeping the last axis)
_ANY_ORDER = (OpKind.ELEMENTWISE, OpKind.QUANT)
_LAST_KEPT = (OpKind.MATMUL, OpKind.FUSED)


def _only_conv_weight(graph: Graph, i: int, users: list[int]) -> bool:
    """Is value i rank 4 and used only as the weight operand of convolutions?"""
    return graph.nodes[i].type.rank == 4 and all(
        graph.nodes[u].op in CONV_OPS
        and graph.nodes[u].inputs[1:2] == (i,)
        and i not in graph.nodes[u].inputs[:1] + graph.nodes[u].inputs[2:]
        for u in users
    )


def layout_prefs(graph: Graph) -> dict[int, tuple[int, ...]]:
    """node index -> permutation its buffer is stored in (absent: row-major)."""
    users = graph.users()
    outputs = {i for _, i in graph.outputs}
    live = graph.live()
    prefs: dict[int, tuple[int, ...]] = {}
    for i, node in graph:
        us = [u for u in users[i] if live[u]]
        if i in outputs or not us or not live[i]:
            continue
        kind = node.opdef.kind
        if (node.op == "param" or kind in _ANY_ORDER) and _only_conv_weight(graph, i, us):
            prefs[i] = CONV_WEIGHT_PERM
            continue
        if node.is_leaf or node.opdef.kind not in (*_ANY_ORDER, *_LAST_KEPT):
            continue
        if node.opdef.kind is OpKind.FUSED and node.op in CONV_OPS:
            continue
        perms = {
            graph.nodes[u].attr("perm") if graph.nodes[u].op == "transpose" else None for u in us
        }
        if len(perms) == 1 and None not in perms:
            perm = tuple(perms.pop())  # type: ignore[arg-type]
            if kind in _ANY_ORDER or perm[-1] == len(perm) - 1:
                prefs[i] = perm
    return prefs
