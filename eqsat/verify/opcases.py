"""Valid applications of every registry op, drawn with hypothesis.

One generator family per kind of op: given the type of the first operand (or none),
it draws the other operand types and attributes as a user would write them (negative
axes, -1 in reshape, defaults left out). The test suite builds random models from
these; rule verification builds pattern instances from them. Fused kernels need no
entry: they are generated from their composition.

    OP_GENERATORS[op]           -> Family(accepts, draw)
    accepts_first(op, t)        may `t` be the first operand of `op`?
    draw_case(draw, op, first, space) -> OpCase (raises NoCase when it cannot)
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpDef, OpKind, OpTypeError
from eqsat.verify import opcases_layout as lay
from eqsat.verify.cases import (
    Family,
    OpCase,
    accepts_dtype,
    broadcast_partner,
    first_operand,
    maybe,
)
from eqsat.verify.opcases_attention import ATTENTION_GENERATORS
from eqsat.verify.opcases_chain import CHAIN_GENERATORS
from eqsat.verify.opcases_masks import MASK_GENERATORS, QLINEAR_GENERATORS
from eqsat.verify.opcases_rotation import ROTATION_GENERATORS
from eqsat.verify.opcases_scan import SCAN_GENERATORS
from eqsat.verify.opcases_spatial import SPATIAL_GENERATORS
from eqsat.verify.opcases_winograd import WINOGRAD_EPILOGUE_GENERATORS, WINOGRAD_GENERATORS
from eqsat.verify.space import BOOLS, FLOAT_DTYPES, PLAIN, NoCase, Space, choice, ints

__all__ = ["OP_GENERATORS", "Family", "OpCase", "accepts_first", "broadcast_partner", "draw_case"]


# -- leaves


@functools.cache
def const_values(dtype: DType) -> st.SearchStrategy[int | float]:
    if dtype.is_int:
        return st.integers(-100, 100)
    return st.one_of(
        st.integers(-100, 100),
        st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32),
    )


def _draw_iota(draw, op: OpDef, first, space: Space) -> OpCase:
    t = draw(space.tensor_types(min_rank=1))
    attrs: dict[str, Any] = {"shape": t.shape}
    maybe(draw, attrs, "axis", draw(ints(-len(t.shape), len(t.shape) - 1)), 0)
    maybe(draw, attrs, "dtype", draw(choice(("i32", "f32", "bf16"))), "i32")
    return OpCase(op.name, (), attrs)


def _draw_leaf(draw, op: OpDef, first, space: Space) -> OpCase:
    t = draw(space.tensor_types())
    attrs: dict[str, Any] = {"shape": t.shape, "dtype": t.dtype.value}
    if op.name == "const":
        attrs["value"] = draw(const_values(t.dtype))
    else:
        attrs["name"] = draw(
            choice(
                (
                    "x",
                    "w",
                    "in_0",
                    "p.q",
                )
            )
        )
    return OpCase(op.name, (), attrs)


# -- elementwise


def _draw_unary(draw, op: OpDef, first, space: Space) -> OpCase:
    return OpCase(op.name, (first_operand(draw, op, first, space),))


def _draw_binary(draw, op: OpDef, first, space: Space) -> OpCase:
    a = first_operand(draw, op, first, space)
    b = a.with_shape(broadcast_partner(draw, a.shape, space))
    if first is None and draw(BOOLS):
        a, b = b, a
    return OpCase(op.name, (a, b))


# -- linear algebra


def _batch_partner(draw, batch: tuple[int, ...], space: Space) -> tuple[int, ...]:
    out = broadcast_partner(draw, batch, space)
    return out[-(space.max_rank - 2) :] if len(out) > space.max_rank - 2 else out


def _draw_matmul(draw, op: OpDef, first, space: Space) -> OpCase:
    a = first_operand(draw, op, first, space, min_rank=2)
    k = a.shape[-1]
    b_batch = _batch_partner(draw, a.shape[:-2], space)
    b = TensorType(a.dtype, (*b_batch, k, draw(space.sides())))
    attrs: dict[str, Any] = {}
    if op.name == "qmatmul":
        for key in ("a_zero", "b_zero"):
            if draw(BOOLS):
                attrs[key] = draw(ints(-128, 127))
    return OpCase(op.name, (a, b), attrs)


def _accepts_matmul(op: OpDef, t: TensorType) -> bool:
    return t.rank >= 2 and accepts_dtype(op, t)


def _draw_conv(draw, op: OpDef, first, space: Space) -> OpCase:
    x = first or TensorType(
        DType.I8 if op.name == "qconv2d" else draw(choice(tuple(FLOAT_DTYPES))),
        (
            draw(space.sides(2)),
            draw(space.sides(3)),
            draw(ints(1, 7)),
            draw(ints(1, 7)),
        ),
    )
    _, c, h, w = x.shape
    ph, pw = draw(ints(0, 2)), draw(ints(0, 2))
    kh = draw(ints(1, min(h + 2 * ph, 4)))
    kw = draw(ints(1, min(w + 2 * pw, 4)))
    sh, sw = draw(ints(1, 3)), draw(ints(1, 3))
    wt = TensorType(x.dtype, (draw(space.sides(4)), c, kh, kw))
    attrs: dict[str, Any] = {}
    maybe(draw, attrs, "stride", (sh, sw), (1, 1))
    maybe(draw, attrs, "padding", (ph, pw), (0, 0))
    if op.name == "qconv2d":
        maybe(draw, attrs, "a_zero", draw(ints(-128, 127)), 0)
    return OpCase(op.name, (x, wt), attrs)


def _accepts_conv(op: OpDef, t: TensorType) -> bool:
    if op.name == "qconv2d":
        return t.rank == 4 and t.dtype is DType.I8
    return t.rank == 4 and t.dtype.is_float


def _draw_matmul_nt(draw, op: OpDef, first, space: Space) -> OpCase:
    """a @ b^T: a [..., M, K], b [..., N, K]."""
    case = _draw_matmul(draw, REGISTRY["matmul"], first, space)
    a, b = case.in_types
    return OpCase(op.name, (a, b.with_shape((*b.shape[:-2], b.shape[-1], b.shape[-2]))))


# -- fused kernels, generically from their composition


def _draw_fused(
    draw, op: OpDef, first, space: Space, seed: dict[str, TensorType] | None = None
) -> OpCase:
    """Walk the body bottom-up: each inner op's generator types the operands it
    consumes, its first operand pinned to the result of the call below it. Fused
    attributes take the values the inner generators chose for what they refer to.
    `seed` types operands in advance (a caller that knows what they must be)."""
    from eqsat.ops.fused import AttrRef

    types: dict[str, TensorType] = dict(seed or {})
    if first is not None:
        types[op.operands[0]] = first
    fused_attrs: dict[str, Any] = {}
    seen: dict[int, TensorType] = {}  # a call used twice is one node (fused._walk)
    weights: dict[str | int, TensorType] = {}  # products of one input pair their weights

    def walk(node) -> TensorType:
        if isinstance(node, str):
            return types[node]
        if id(node) in seen:
            return seen[id(node)]
        seen[id(node)] = out = walk_new(node)
        return out

    def walk_new(node) -> TensorType:
        fixed = [types.get(a) if isinstance(a, str) else walk(a) for a in node.args]
        sub = REGISTRY[node.op]
        swap = False
        # products of one input (an operand, or one inner call such as a prologue's
        # normalization) pair their weights
        first_arg = node.args[0]
        pair = (
            (first_arg if isinstance(first_arg, str) else id(first_arg))
            if (OP_GENERATORS[node.op] is MATMUL)
            else None
        )
        if pair is not None and fixed[0] is not None and fixed[1] is None:
            # a second product of the same input (a gated product's up projection)
            # takes weights shaped as the first's, so that the halves pair
            fixed[1] = weights.get(pair)
        if (
            fixed[0] is None
            and len(fixed) == 2
            and fixed[1] is not None
            and OP_GENERATORS[node.op] is BINARY
        ):
            fixed, swap = fixed[::-1], True  # broadcasting is symmetric in shape
        if fixed[0] is not None and not accepts_first(node.op, fixed[0]):
            raise NoCase(f"{node.op} does not take {fixed[0]}")
        if OP_GENERATORS[node.op] in (BINARY, MATMUL) and all(f is not None for f in fixed):
            # Both operands already typed (mul(x, sigmoid(x))): nothing left to draw.
            case = OpCase(node.op, tuple(fixed))
        elif node.op == "fma" and fixed[2] is not None:
            # the addend is a call below (a chain of fmas): the factors not typed yet take
            # its shape, the second one its shape or a scalar
            c = fixed[2]
            a = fixed[0] or TensorType(c.dtype, c.shape)
            b = fixed[1] or TensorType(c.dtype, draw(st.sampled_from([(), c.shape])))
            case = OpCase(node.op, (a, b, c))
        else:
            case = OP_GENERATORS[node.op].draw(draw, sub, fixed[0], space)
        in_types = list(case.in_types[::-1] if swap else case.in_types)
        fixed = fixed[::-1] if swap else fixed
        if len(in_types) != len(node.args):
            raise NoCase("variadic arity")
        for a, want, got in zip(node.args, fixed, in_types, strict=True):
            if want is not None and want != got:
                raise NoCase("operand type")
            if isinstance(a, str):
                types[a] = got
        if pair is not None:
            weights.setdefault(pair, in_types[1])
        bound = case.bound_attrs()
        given = {}
        for key, value in node.attrs.items():
            if isinstance(value, AttrRef):
                fused_attrs[value.name] = bound[key]
                given[key] = bound[key]
            else:
                given[key] = value
        try:
            return sub.type_of(in_types, sub.bind_attrs(given))
        except OpTypeError as err:
            raise NoCase(str(err)) from None

    walk(op.composition)
    attrs = {}
    for spec in op.attrs:
        if spec.name in fused_attrs:
            maybe(draw, attrs, spec.name, fused_attrs[spec.name], spec.default)
    case = OpCase(op.name, tuple(types[o] for o in op.operands), attrs)
    try:
        case.out_type()
    except OpTypeError as err:
        raise NoCase(str(err)) from None
    return case


def _accepts_fused(op: OpDef, t: TensorType) -> bool:
    """The first operand feeds the innermost call whose first argument it is."""
    node = op.composition
    while not isinstance(node, str) and not isinstance(node.args[0], str):
        node = node.args[0]
    if isinstance(node, str) or node.args[0] != op.operands[0]:
        return False
    return accepts_first(node.op, t)


def _draw_product_after_addend(draw, op: OpDef, first, space: Space) -> OpCase:
    """qmatmul_requant_add_first: its first operand is the add's other term, consumed at
    the top of the body, after the product it must broadcast with. A given one shapes
    the product: x [..., K] and w [K, N] so that x @ w has exactly its shape."""
    seed: dict[str, TensorType] = {}
    if first is not None and first.rank >= 1:
        k = draw(space.sides())
        lead = first.shape[:-1] or (draw(space.sides()),)
        seed = {
            "x": TensorType(DType.I8, (*lead, k)),
            "w": TensorType(DType.I8, (k, first.shape[-1])),
        }
    return _draw_fused(draw, op, first, space, seed)


# -- the table: every registry op -> its family

LEAF = Family(lambda op, t: False, _draw_leaf)
IOTA = Family(lambda op, t: False, _draw_iota)
UNARY = Family(accepts_dtype, _draw_unary)
BINARY = Family(accepts_dtype, _draw_binary)
MATMUL = Family(_accepts_matmul, _draw_matmul)
CONV = Family(_accepts_conv, _draw_conv)
MATMUL_NT = Family(_accepts_matmul, _draw_matmul_nt)
FUSED = Family(_accepts_fused, _draw_fused)
TRANSPOSE = Family(lambda op, t: True, lay.draw_transpose)
RESHAPE = Family(lambda op, t: True, lay.draw_reshape)
CONCAT = Family(lambda op, t: t.rank >= 1, lay.draw_concat)
SLICE = Family(lambda op, t: True, lay.draw_slice)
BROADCAST = Family(lambda op, t: True, lay.draw_broadcast)
SOFTMAX = Family(lambda op, t: t.rank >= 1 and accepts_dtype(op, t), lay.draw_softmax)
LAYERNORM = Family(lambda op, t: t.rank >= 1 and t.dtype.is_float, lay.draw_layernorm)
REDUCE = Family(accepts_dtype, lay.draw_reduce)
CAST = Family(lambda op, t: True, lay.draw_cast)
QUANT = Family(accepts_dtype, lay.draw_quant)

FAMILY_MEMBERS: dict[Family, tuple[str, ...]] = {
    LEAF: ("input", "param", "const", "literal"),
    IOTA: ("iota",),
    UNARY: ("neg", "relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal"),
    BINARY: ("add", "sub", "mul", "div", "maximum", "minimum"),
    MATMUL: ("matmul", "qmatmul"),
    CONV: ("conv2d", "qconv2d"),
    MATMUL_NT: ("matmul_nt",),
    TRANSPOSE: ("transpose",),
    RESHAPE: ("reshape",),
    CONCAT: ("concat",),
    SLICE: ("slice",),
    BROADCAST: ("broadcast",),
    SOFTMAX: ("softmax",),
    LAYERNORM: ("layernorm",),
    REDUCE: ("reduce_sum", "reduce_max", "reduce_mean"),
    CAST: ("cast",),
    QUANT: ("quantize", "dequantize", "requantize"),
}

OP_GENERATORS: dict[str, Family] = {
    name: family for family, names in FAMILY_MEMBERS.items() for name in names
}


def _extra_generators() -> dict[str, Family]:
    """Families defined next to the ops they generate (int8 quantization)."""
    try:
        from eqsat.quant.opcases import QUANT_GENERATORS
    except ImportError:  # pragma: no cover - a tree without the quantization ops
        return {}
    return {k: v for k, v in QUANT_GENERATORS.items() if k in REGISTRY}


OP_GENERATORS.update(_extra_generators())
OP_GENERATORS.update(MASK_GENERATORS)  # math and mask ops, gelu (opcases_masks.py)
OP_GENERATORS.update(SPATIAL_GENERATORS)  # pooling, pad, gather, grouped conv2d
OP_GENERATORS.update(SCAN_GENERATORS)  # cumsum
OP_GENERATORS.update(ROTATION_GENERATORS)  # hadamard
OP_GENERATORS.update(WINOGRAD_GENERATORS)  # F(m, 3) transforms
# Fused kernels are generated from their composition: a new one needs no entry.
OP_GENERATORS.update(
    {name: FUSED for name, op in REGISTRY.items() if op.kind is OpKind.FUSED and op.composition}
)
OP_GENERATORS.update(ATTENTION_GENERATORS)  # a constant in their body: drawn by their own
OP_GENERATORS.update(QLINEAR_GENERATORS)  # two tensors that broadcast, scalars: their own
OP_GENERATORS.update(WINOGRAD_EPILOGUE_GENERATORS)  # a per-channel bias: their own
OP_GENERATORS.update(CHAIN_GENERATORS)  # 2-D weights, bias vectors: their own
if "qmatmul_requant_add_first" in REGISTRY:
    OP_GENERATORS["qmatmul_requant_add_first"] = Family(
        lambda op, t: t.dtype is DType.F32, _draw_product_after_addend
    )


def accepts_first(op: str, t: TensorType) -> bool:
    return OP_GENERATORS[op].accepts(REGISTRY[op], t)


def draw_case(draw, op: str, first: TensorType | None = None, space: Space = PLAIN) -> OpCase:
    """A valid application of `op`; with `first`, its first operand has that type
    (the caller makes sure accepts_first(op, first)). Raises NoCase."""
    return OP_GENERATORS[op].draw(draw, REGISTRY[op], first, space)
