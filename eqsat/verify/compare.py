"""Is the right-hand side's value the left-hand side's, up to rounding?

Integer results must be equal. Floating-point results may differ by rounding: the
two sides round at different points (bf16 rounds every op's result), sum in another
order, and reductions accumulate error with their length. The tolerance is

    rtol * scale,   rtol = 8 * eps(dtype) * (1 + K)

where eps is that of the least precise float type in the instance, K the longest
reduction (a matmul's inner size, a reduction's length, C*KH*KW of a convolution),
and scale the largest finite magnitude among the left-hand side's values (inputs
included): rounding error is relative to the values rounded, not to a result that
may cancel to zero. An approximate rule is held to its declared budget instead,
relative to the larger of that scale and the left-hand side evaluated on the inputs'
magnitudes (for a dot product, sum |x||w|: check.computation_magnitude), and
the range an `observe` annotation calibrates counts towards the scale (quantization
error is relative to that range).

Non-finite results: where the reference (left-hand side) is inf or NaN, the right-hand
side must be the same inf or NaN; if it is not, the rule may still be a valid
rewrite of a program that overflowed (softmax written as exp/sum), so the example is
re-drawn in a restricted range and the report says so. A right-hand side that is not
finite where the reference is finite is a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from eqsat.ir.graph import Graph, Node
from eqsat.ir.types import DType
from eqsat.ops import OpKind

_EPS = {
    DType.F32: float(np.finfo(np.float32).eps),
    DType.BF16: float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps),
}
RTOL_FACTOR = 8.0


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reference_finite: bool  # False: the reference overflowed where the sides differ
    message: str = ""
    error: float = 0.0
    tolerance: float = 0.0


def reduction_length(node: Node, graph: Graph) -> int:
    """How many terms one output element sums (1 for elementwise ops)."""
    op = node.opdef
    ins = [graph.nodes[i].type for i in node.inputs]
    if op.kind is OpKind.MATMUL:
        return ins[0].shape[-1] if ins[0].rank else 1
    if op.kind is OpKind.CONV:
        return int(np.prod(ins[1].shape[1:]))
    if op.kind is OpKind.REDUCE:
        if "kernel" in node.attr_dict:  # pooling: a window's taps
            return int(np.prod(node.attr_dict["kernel"]))
        if op.name == "cumsum":  # a running sum: up to the whole axis
            return ins[0].shape[int(node.attr_dict["axis"])]
        return max(1, ins[0].numel // max(node.type.numel, 1))
    if op.kind is OpKind.NORMALIZE:
        axis = node.attr_dict.get("axis", -1)
        return ins[0].shape[int(axis)] if ins[0].rank else 1
    if op.kind is OpKind.FUSED and op.composition is not None:
        from eqsat.ops.fused import body_nodes

        try:
            body = body_nodes(op.composition, op.operands, ins, node.attr_dict)
        except Exception:  # pragma: no cover - the node type-checked already
            return 1
        return max((_body_length(b) for b in body), default=1)
    return 1


def _body_length(b) -> int:
    if b.op.kind is OpKind.MATMUL:
        return b.in_types[0].shape[-1]
    if b.op.kind is OpKind.CONV:
        return int(np.prod(b.in_types[1].shape[1:]))
    return 1


def tolerance(graph: Graph, values: list, lhs_nodes: range, approx: float | None) -> float:
    float_types = [n.type.dtype for _, n in graph if n.type.dtype.is_float]
    eps = max((_EPS[d] for d in float_types), default=_EPS[DType.F32])
    k = max((reduction_length(n, graph) for _, n in graph if not n.is_leaf), default=1)
    rtol = RTOL_FACTOR * eps * (1 + k)
    if approx is not None:
        rtol = max(rtol, approx)
    scale = 0.0
    for i in lhs_nodes:
        node = graph.nodes[i]
        if node.op == "observe":  # a quantization error is relative to the calibrated range
            z = int(node.attr("zero_point"))
            scale = max(scale, float(node.attr("scale")) * max(abs(-128 - z), abs(127 - z)))
        v = values[i]
        if v is None or v.size == 0:
            continue
        v = np.asarray(v, dtype=np.float64)
        finite = np.abs(v[np.isfinite(v)])
        if finite.size:
            scale = max(scale, float(finite.max()))
    return rtol * scale + float(np.finfo(np.float32).tiny)


def compare(
    lhs: np.ndarray, rhs: np.ndarray, dtype: DType, tol: float, approx: float | None = None
) -> Verdict:
    """Compare one root; `approx`: the budget of an approximate rule, which allows
    integer results (quantized values) to differ by that share of their range too."""
    if dtype.is_int and approx is not None:
        scale = float(np.abs(np.asarray(lhs, np.float64)).max(initial=0.0))
        tol = max(1.0, approx * scale)
        dtype = DType.F32
    if dtype.is_int:
        diff = np.abs(lhs.astype(np.int64) - rhs.astype(np.int64))
        err = float(diff.max()) if diff.size else 0.0
        if err:
            return Verdict(False, True, f"integer results differ by up to {err:g}", err, 0.0)
        return Verdict(True, True)
    l, r = np.asarray(lhs, np.float64), np.asarray(rhs, np.float64)
    same_special = (np.isnan(l) & np.isnan(r)) | (~np.isfinite(l) & (l == r))
    bad_reference = ~np.isfinite(l) & ~same_special
    if bad_reference.any():
        return Verdict(False, False, "the reference is not finite where the sides differ")
    broken = np.isfinite(l) & ~np.isfinite(r)
    if broken.any():
        where = tuple(int(i) for i in np.argwhere(broken)[0])
        return Verdict(
            False, True, f"the right-hand side is {r[where]} where the reference is {l[where]:g}"
        )
    with np.errstate(all="ignore"):
        diff = np.where(np.isfinite(l), np.abs(l - r), 0.0)
    err = float(diff.max()) if diff.size else 0.0
    if err > tol:
        where = tuple(int(i) for i in np.argwhere(diff == err)[0])
        return Verdict(
            False,
            True,
            f"values differ by {err:.4g} at index {list(where)} (tolerance {tol:.3g})",
            err,
            tol,
        )
    return Verdict(True, True, "", err, tol)
