"""Padding a dimension without changing the valid results: a model-level transformation.

A program compiled for a bucket of size Sb runs a request of length n <= Sb on inputs
zero-padded along S. Position-wise work (elementwise ops, matmuls over features,
layernorm over features) computes junk, but finite, values at padded positions that
are dropped at the end. Wherever S is *reduced over*, padded positions would leak into
valid results, so the transformation inserts masks built from inputs the dispatcher
fills per request (registry ops only, so the optimizer and backend see ordinary ops):

- softmax along an S axis:  softmax(add(x, bias)), bias = 0 on valid keys, -1e30 on
  padded ones (exp underflows to exactly 0, every value stays finite);
- reduce_sum / reduce_max over S: where(keep, x, 0 or -1e30) first;
- reduce_mean over S: the masked mean times Sb / n (an f32[] input);
- matmul contracting over S: exact when one side is exactly zero on the padded
  positions (probabilities after a masked softmax, zero-padded inputs); otherwise the
  smaller side is masked with where(keep, x, 0).

An axis may hold S positions plus fixed ones (`concat(past_k, k)` along a KV cache's
L): its padding sits between them, and masks and outputs are laid out accordingly
(eqsat/bundle/axes.py spans). Anything that moves values between positions in a way no
mask undoes (a reshape that merges S with another axis, two S-long tensors joined along
S, slice/gather/pad along S, a reverse cumsum, layernorm or convolution over S, weights
whose shape holds S) is refused with a PaddingError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eqsat.bundle.axes import NOWHERE, Span, Where, check_reshape, padded_axes
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import OpKind

# What padded keys get before a softmax / max: far below any real score, still finite.
PAD_FLOOR = -1.0e30

# ops with f(0) == 0 elementwise: exactly-zero padding survives them
_ZERO_PRESERVING = frozenset(
    {"neg", "relu", "tanh", "gelu", "abs", "sin", "sqrt", "cast", "erf", "trunc", "floor"}
)
# fused ops that are elementwise in all their operands
_ELEMENTWISE_FUSED = frozenset({"add_relu", "mul_add", "mul_add_relu", "silu"})
_POSITIONWISE_LAYOUT = frozenset({"transpose", "broadcast"})
_REDUCE_FILL = {"reduce_sum": 0.0, "reduce_mean": 0.0, "reduce_max": PAD_FLOOR}


@dataclass
class PaddedModel:
    """The masked model at one bucket size, and what the dispatcher must know to feed it."""

    graph: Graph
    dim: str
    size: int
    inputs: dict[str, tuple[int, ...]]  # model input -> its padded axes (S at the start)
    # output -> (axis, before, after) of each padded axis: the S segment sits after
    # `before` fixed positions (cut to n, the fixed ones kept)
    outputs: dict[str, tuple[tuple[int, int, int], ...]]
    masks: dict[str, str] = field(default_factory=dict)  # mask key -> input name


def mask_key(role: str, span: Span) -> str:
    """`role` (keep, bias, stretch) for an axis whose S segment has `span` around it."""
    return role if span == (0, 0) else f"{role}:{span[0]}:{span[1]}"


def _parse_key(key: str) -> tuple[str, int, int]:
    role, _, rest = key.partition(":")
    before, _, after = rest.partition(":")
    return role, int(before or 0), int(after or 0)


def mask_type(key: str, size: int) -> TensorType:
    """The type of a mask input (the values come from `mask_values`)."""
    role, before, after = _parse_key(key)
    extent = before + size + after
    return {
        "keep": TensorType(DType.I8, (extent,)),
        "bias": TensorType(DType.F32, (extent,)),
        "stretch": TensorType(DType.F32, ()),
    }[role]


def valid_positions(size: int, n: int, span: Span = (0, 0)):
    """Along an axis of extent before + size + after: True except on the padding."""
    import numpy as np

    before, after = span
    pos = np.arange(before + size + after)
    return (pos < before + n) | (pos >= before + size)


def mask_values(key: str, size: int, n: int):
    """The value the dispatcher feeds a mask input for a request of length n."""
    import numpy as np

    role, before, after = _parse_key(key)
    valid = valid_positions(size, n, (before, after))
    if role == "keep":
        return valid.astype(np.int8)
    if role == "bias":
        return np.where(valid, 0.0, PAD_FLOOR).astype(np.float32)
    extra = before + after
    return np.array((size + extra) / (n + extra), dtype=np.float32)


def pad_model(graph: Graph, probe: Graph, dim: str, where: Where = NOWHERE) -> PaddedModel:
    """`graph` (the model at S = bucket size) with masks that make zero-padded inputs
    give, at valid positions, the results of the model at the real length. `probe`: the
    same model at another value of S (to find the axes of extent S)."""
    return _Masker(graph, probe, dim, where).run()


class _Masker:
    def __init__(self, graph: Graph, probe: Graph, dim: str, where: Where):
        self.g, self.probe, self.dim, self.where = graph, probe, dim, where
        self.size = graph.dims[dim]
        self.axes = padded_axes(graph, probe, dim, where)
        self.b = GraphBuilder(graph.name, graph.dims)
        self.new: list[int] = []
        self.zero: list[frozenset[int]] = []  # per original node: axes exactly 0 when padded
        self.masks: dict[str, int] = {}
        self.mask_names: dict[str, str] = {}
        self.taken = {str(n.attr("name")) for _, n in graph if n.op in ("input", "param")}
        self.taken |= {n.name for n in graph.nodes if n.name}

    # -- mask leaves -----------------------------------------------------------------
    def mask(self, role: str, span: Span = (0, 0)) -> int:
        key = mask_key(role, span)
        if key not in self.masks:
            name = f"pad_{role}_{self.dim}" + ("" if span == (0, 0) else f"_{span[0]}_{span[1]}")
            while name in self.taken:
                name += "_"
            self.taken.add(name)
            self.mask_names[key] = name
            self.masks[key] = self.b.leaf("input", name, mask_type(key, self.size))
        return self.masks[key]

    def along(self, role: str, axis: int, rank: int, span: Span) -> int:
        """The mask of `span`'s axis shaped to broadcast along `axis` of a rank-`rank` value."""
        m = self.mask(role, span)
        trailing = rank - 1 - axis
        if trailing == 0:
            return m
        extent = self.size + sum(span)
        return self.b.add("reshape", (m,), {"shape": (extent,) + (1,) * trailing})

    def masked(self, x: int, axes: dict[int, Span], fill: float) -> int:
        t = self.b.graph.nodes[x].type
        for k, span in sorted(axes.items()):
            cond = self.along("keep", k, t.rank, span)
            filler = self.b.const(fill, TensorType(t.dtype, ()))
            x = self.b.add("where", (cond, x, filler))
        return x

    # -- the pass --------------------------------------------------------------------
    def run(self) -> PaddedModel:
        for i in range(len(self.g.nodes)):
            new, zero = self.node(i)
            self.new.append(new)
            self.zero.append(frozenset(zero) & self.axes[i].keys())
        for name, i in self.g.outputs:
            self.b.output(name, self.new[i])
        b = self.b.graph
        b.constants.update({k: v for k, v in self.g.constants.items() if k not in b.constants})
        return PaddedModel(
            b,
            self.dim,
            self.size,
            {str(n.attr("name")): tuple(sorted(self.axes[i])) for i, n in self.g.inputs},
            {
                name: tuple((k, *sp) for k, sp in sorted(self.axes[i].items()))
                for name, i in self.g.outputs
            },
            dict(self.mask_names),
        )

    def copy(self, i: int, inputs: list[int] | None = None) -> int:
        n = self.g.nodes[i]
        if n.op == "literal":
            name = str(n.attr("name"))
            return self.b.literal(name, self.g.constants[name], n.type.dtype)
        if n.op in ("input", "param"):
            return self.b.leaf(n.op, str(n.attr("name")), n.type)
        ins = inputs if inputs is not None else [self.new[j] for j in n.inputs]
        return self.b.add(n.op, tuple(ins), dict(n.attrs), n.name)

    def refuse(self, i: int, message: str):
        return self.where.error(self.g, i, message)

    def node(self, i: int) -> tuple[int, set[int]]:
        n = self.g.nodes[i]
        op, dim = n.op, self.dim
        ins_axes = [self.axes[j] for j in n.inputs]
        if n.is_leaf or not n.inputs:
            if op == "param" and self.axes[i]:
                raise self.refuse(
                    i, f"a param whose shape holds {dim}: its values would differ per bucket"
                )
            return self.copy(i), set(self.axes[i]) if op == "input" else set()
        if op == "softmax":
            return self.softmax(i)
        if op in _REDUCE_FILL:
            return self.reduce(i)
        if op in ("matmul", "matmul_nt"):
            return self.matmul(i)
        if op in ("layernorm", "rmsnorm"):
            if (n.type.rank - 1) in ins_axes[0]:
                raise self.refuse(i, f"normalizes over {dim} (its last axis): refused")
            return self.copy(i), set()
        if op == "cumsum":
            axis = int(n.attr("axis"))
            if axis in ins_axes[0] and n.attr("reverse"):
                raise self.refuse(
                    i, f"a reverse running sum along {dim} reads the padded positions"
                )
            return self.copy(i), set()
        if op == "reshape":
            check_reshape(self.g, self.probe, i, self.axes, dim, self.where)
            return self.copy(i), self.reshaped_zero(i)
        if op == "transpose":
            perm = tuple(n.attr("perm"))
            z = self.zero[n.inputs[0]]
            return self.copy(i), {k for k, p in enumerate(perm) if p in z}
        if op == "slice":
            return self.slice(i)
        if op == "gather" and int(n.attr("axis")) in ins_axes[0]:
            raise self.refuse(i, f"picks positions along {dim}: it could pick padded ones")
        if op == "pad" and any(ins_axes[0]):
            pads = list(n.attr("pads"))
            r = n.type.rank
            if any(pads[k] or pads[k + r] for k in ins_axes[0]):
                raise self.refuse(i, f"pads along {dim}: the padding would not be at the end")
            return self.copy(i), set()
        kind = n.opdef.kind
        if kind in (OpKind.ELEMENTWISE, OpKind.QUANT) or op in _ELEMENTWISE_FUSED:
            self.check_aligned(i)
            return self.copy(i), self.elementwise_zero(i)
        if op in _POSITIONWISE_LAYOUT or op in ("concat", "gather", "pad"):
            return self.copy(i), self.elementwise_zero(i)
        if (kind is OpKind.FUSED and op.startswith(("matmul_", "qmatmul_"))) or op == "qmatmul":
            if (n.type.rank and self.g.nodes[n.inputs[0]].type.rank - 1 in ins_axes[0]) or (
                len(n.inputs) > 1
                and self.g.nodes[n.inputs[1]].type.rank >= 2
                and self.g.nodes[n.inputs[1]].type.rank - 2 in ins_axes[1]
            ):
                raise self.refuse(i, f"contracts over {dim} inside a fused kernel")
            return self.copy(i), set()
        if any(ins_axes):
            raise self.refuse(
                i, f"not known to keep positions along {dim} apart (kind {kind.value}): refused"
            )
        return self.copy(i), set()

    # -- ops that reduce over S ------------------------------------------------------
    def softmax(self, i: int) -> tuple[int, set[int]]:
        n = self.g.nodes[i]
        axis = int(n.attr("axis"))
        if axis not in self.axes[n.inputs[0]]:
            return self.copy(i), set()
        x = self.new[n.inputs[0]]
        t = n.type
        bias = self.along("bias", axis, t.rank, self.axes[n.inputs[0]][axis])
        if t.dtype is not DType.F32:
            bias = self.b.add("cast", (bias,), {"dtype": t.dtype.value})
        shifted = self.b.add("add", (x, bias))
        return self.copy(i, [shifted]), {axis}

    def reduce(self, i: int) -> tuple[int, set[int]]:
        n = self.g.nodes[i]
        padded = self.axes[n.inputs[0]]
        over = {k: padded[k] for k in n.attr("axes") if k in padded}
        if not over:
            return self.copy(i), set()
        x = self.new[n.inputs[0]]
        if n.op != "reduce_max" and over.keys() <= self.zero[n.inputs[0]]:
            masked = x  # already exactly zero at padded positions
        else:
            masked = self.masked(x, over, _REDUCE_FILL[n.op])
        if n.op != "reduce_mean":
            return self.copy(i, [masked]), set()
        out = self.b.add(n.op, (masked,), dict(n.attrs))
        spans = [span for _, span in sorted(over.items())]
        for k, span in enumerate(spans):  # the mean divided by Sb; the valid count is n
            last = k == len(spans) - 1
            stretch = self.mask("stretch", span)
            out = self.b.add("mul", (out, stretch), name=n.name if last else None)
        return out, set()

    def matmul(self, i: int) -> tuple[int, set[int]]:
        n = self.g.nodes[i]
        ia, ib = n.inputs
        ra, rb = self.g.nodes[ia].type.rank, self.g.nodes[ib].type.rank
        ka = ra - 1
        kb = rb - 1 if n.op == "matmul_nt" else rb - 2
        a, b = self.new[ia], self.new[ib]
        span = self.axes[ia].get(ka) or self.axes[ib].get(kb)
        if span is not None and self.axes[ia].get(ka) != self.axes[ib].get(kb):
            raise self.refuse(i, f"contracts over axes padded differently along {self.dim}")
        if span is not None and ka not in self.zero[ia] and kb not in self.zero[ib]:
            if self.g.nodes[ia].type.numel <= self.g.nodes[ib].type.numel:
                a = self.masked(a, {ka: span}, 0.0)
            else:
                b = self.masked(b, {kb: span}, 0.0)
        out = self.copy(i, [a, b])
        r = n.type.rank
        zero = set()
        if ra >= 2 and (ra - 2) in self.zero[ia]:
            zero.add(r - 2)
        nb = rb - 2 if n.op == "matmul_nt" else rb - 1
        if nb in self.zero[ib]:
            zero.add(r - 1)
        for j, rank in ((ia, ra), (ib, rb)):
            zero |= {k + r - rank for k in self.zero[j] if k < rank - 2}
        return out, zero

    # -- zero tracking and checks ----------------------------------------------------
    def check_aligned(self, i: int) -> None:
        """Elementwise operands must have their S positions in the same places."""
        n = self.g.nodes[i]
        r, out = n.type.rank, self.axes[i]
        for j in n.inputs:
            rj = self.g.nodes[j].type.rank
            for k, span in self.axes[j].items():
                if out.get(k + r - rj) != span:
                    raise self.refuse(
                        i, f"combines operands whose {self.dim} positions sit in different places"
                    )

    def elementwise_zero(self, i: int) -> set[int]:
        n = self.g.nodes[i]
        r = n.type.rank
        aligned = [{k + r - self.g.nodes[j].type.rank for k in self.zero[j]} for j in n.inputs]
        if n.op in _ZERO_PRESERVING or n.op == "mul":
            return set().union(*aligned)
        return set()

    def reshaped_zero(self, i: int) -> set[int]:
        n = self.g.nodes[i]
        src = sorted(self.axes[n.inputs[0]])
        dst = sorted(self.axes[i])
        z = self.zero[n.inputs[0]]
        return {d for s, d in zip(src, dst, strict=False) if s in z}

    def slice(self, i: int) -> tuple[int, set[int]]:
        n = self.g.nodes[i]
        src = self.g.nodes[n.inputs[0]].type.shape
        for k in self.axes[n.inputs[0]]:
            if n.type.shape[k] != src[k]:
                raise self.refuse(
                    i, f"takes part of the {self.dim} axis: padded positions could be selected"
                )
        return self.copy(i), set(self.zero[n.inputs[0]])
