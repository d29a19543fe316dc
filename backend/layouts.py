"""Layout choice: in which axis order a value is stored in DRAM.

Row-major by default. Two cases choose otherwise so that DMAs stay contiguous and no
copy kernel is needed:
- a value whose only users transpose it the same way (keeping the last axis) is
  stored already transposed: the transposed view is then row-major, so e.g. BERT's
  `reshape(transpose(matmul(probs, v)))` is free (the matmul writes rows with a
  stride instead); a weight (param, literal, or prepared at load time) in any order,
  since the host writes it (a Gemm's transB weight [N, K] is stored [K, N]);
- conv weights are stored [KH, KW, C, O] (params are declared in that layout and the
  caller's arrays are transposed when the program is fed): a (kh) slice of the
  implicit GEMM's B operand is then one contiguous block (a literal weight, as an
  imported ONNX initializer is, likewise). Weights used only by
  pointwise convolutions run as matmuls stay OIHW ([O, C] is their A operand,
  conv_pointwise.py); those of convolutions run as weights @ patches are stored
  [O, KH, KW, C] (conv_transposed.py). A param read only by an elementwise kernel
  writing such weights (a folded batch-norm scale) is stored like them.
Graph outputs are always row-major.
"""

from __future__ import annotations

from eqsat.costs import conv_form
from eqsat.ir.graph import Graph
from eqsat.ir.strides import keeps_last_axis
from eqsat.ops import REGISTRY, OpKind
from eqsat.ops.fused import contraction_of as contraction_op
from eqsat.spatial_plan import conv_of, is_pointwise
from hwsim.hardware import Hardware

CONV_WEIGHT_PERM = (2, 3, 1, 0)
OKC_WEIGHT_PERM = (0, 2, 3, 1)  # [O, KH, KW, C]: the A operand of weights @ patches


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


def _conv_form(graph: Graph, u: int, hw: Hardware | None) -> str:
    """How convolution u runs (eqsat.costs.conv_form). Without a machine: as a matmul
    if it is pointwise, else as the implicit GEMM."""
    node = graph.nodes[u]
    types = [graph.nodes[j].type for j in node.inputs]
    if hw is not None:
        return conv_form(hw, node.op, types, node.type, node.attr_dict)
    conv = conv_of(REGISTRY[node.op], types, node.attr_dict)
    return "matmul" if conv is not None and is_pointwise(*conv) else "implicit"


def _weight_perm(graph: Graph, users: list[int], hw: Hardware | None) -> tuple[int, ...] | None:
    """The layout conv weights are stored in, for the forms their convolutions run in:
    none for pointwise ones run as matmuls (OIHW is their [O, C]), [O, KH, KW, C] for
    weights @ patches (conv_transposed.py), else [KH, KW, C, O]."""
    forms = {_conv_form(graph, u, hw) for u in users}
    if forms == {"matmul"}:
        return None
    return OKC_WEIGHT_PERM if forms == {"transposed"} else CONV_WEIGHT_PERM


def layout_prefs(
    graph: Graph, hw: Hardware | None = None, prepared: frozenset[int] = frozenset()
) -> dict[int, tuple[int, ...]]:
    """node index -> permutation its buffer is stored in (absent: row-major). Weights
    prepared at load time (`prepared`) are stored in any order, as params are."""
    users = graph.users()
    outputs = {i for _, i in graph.outputs}
    live = graph.live()
    prefs: dict[int, tuple[int, ...]] = {}
    for i, node in graph:
        us = [u for u in users[i] if live[u]]
        if i in outputs or not us or not live[i]:
            continue
        kind = node.opdef.kind
        # params and the model's literals are fed by the host, in any layout
        stored_any = node.op in ("param", "literal") or i in prepared
        if (stored_any or kind in _ANY_ORDER) and _only_conv_weight(graph, i, us):
            perm = _weight_perm(graph, us, hw)
            if perm is not None:
                prefs[i] = perm
            continue
        if (node.is_leaf and not stored_any) or (
            not stored_any and node.opdef.kind not in (*_ANY_ORDER, *_LAST_KEPT)
        ):
            continue
        if node.opdef.kind is OpKind.FUSED and node.op in CONV_OPS:
            continue
        readers = _through_identity_reshapes(graph, i, us, users, live, outputs)
        perms = {
            graph.nodes[u].attr("perm") if graph.nodes[u].op == "transpose" else None
            for u in readers
        }
        if len(perms) == 1 and None not in perms:
            perm = tuple(perms.pop())  # type: ignore[arg-type]
            if stored_any or kind in _ANY_ORDER or keeps_last_axis(perm):
                prefs[i] = perm
    _pack_weight_params(graph, users, live, outputs, prefs)
    return prefs


def _through_identity_reshapes(
    graph: Graph, i: int, us: list[int], users, live, outputs: set[int]
) -> list[int]:
    """The users of value i, seeing through reshapes to its own shape (exporters write
    them: BERT's `transpose(reshape(matmul(probs, v)))`), which are views of i."""
    shape = graph.nodes[i].type.shape
    out: list[int] = []
    for u in us:
        node = graph.nodes[u]
        if node.op == "reshape" and node.type.shape == shape and u not in outputs:
            inner = [v for v in users[u] if live[v]]
            out += _through_identity_reshapes(graph, u, inner, users, live, outputs)
        else:
            out.append(u)
    return out


def _pack_weight_params(graph: Graph, users, live, outputs, prefs: dict) -> None:
    """A param read only by elementwise kernels that write conv weights (a batch-norm
    scale folded into the weights) is declared in the weights' layout too: the kernel
    then streams both in one order, not through a transposed walk."""
    for i, node in graph:
        us = [u for u in users[i] if live[u]]
        if node.op != "param" or i in outputs or i in prefs or not us:
            continue
        perms = {prefs.get(u) for u in us}
        if (
            len(perms) == 1
            and perms <= {CONV_WEIGHT_PERM, OKC_WEIGHT_PERM}
            and all(
                graph.nodes[u].opdef.kind is OpKind.ELEMENTWISE
                and graph.nodes[u].type.shape == node.type.shape
                for u in us
            )
        ):
            prefs[i] = perms.pop()
