"""Int8 kernels that requantize in f32, as ONNX Runtime does: the i32 accumulator plus
its bias, times the f32 scales, rounded half to even into the i8 result
(`quantize`). ORT's QLinearMatMul/QLinearConv (MlasRequantizeOutput) and the QDQ
pattern DequantizeLinear -> MatMul/Conv -> QuantizeLinear compute exactly that; eqsat's
`requantize_pc`/`requantize_ch` use a fixed-point multiplier instead, which rounds
differently at ties, so an imported model's requantization stays in this form and
these kernels keep it in the GEMM's epilogue (rules/quant.rules, "imported quantized
models"): int8 in, int8 out, one kernel. The elementwise ones do the same for the
dequantize -> Add/Mul -> quantize of QDQ graphs.
"""

from __future__ import annotations

from dataclasses import replace

from eqsat.ops.base import AttrSpec, AttrType
from eqsat.ops.fused import AttrRef, Call, _make, call
from eqsat.ops.quant_base import fused
from eqsat.ops.registry import REGISTRY, register

_A_ZERO = AttrSpec("a_zero", AttrType.INT, 0, "zero point subtracted from x")
_OUT = (
    AttrSpec("scale", AttrType.FLOAT, doc="scale of the i8 result"),
    AttrSpec("zero_point", AttrType.INT, 0, "zero point of the i8 result"),
)
_CONV = (
    _A_ZERO,
    AttrSpec("stride", AttrType.INTS, (1, 1), "[SH, SW]"),
    AttrSpec("padding", AttrType.INTS, (0, 0), "padding [PH, PW] of x - a_zero with 0"),
    AttrSpec("groups", AttrType.INT, 1, "as conv2d's (groups = C: depthwise)"),
)


def _quantized(acc) -> object:
    """quantize(f32(acc + b) * s) at the result's scale and zero point."""
    real = call("mul", call("cast", call("add", acc, "b"), dtype="f32"), "s")
    return call(
        "quantize", real, scale=AttrRef("scale"), zero_point=AttrRef("zero_point"), dtype="i8"
    )


# quantize(((x - a_zero) @ w + b) * s): a QLinearMatMul / QDQ MatMul in one kernel
fused(
    "qmatmul_bias_dequant_quant",
    ("x", "w", "b", "s"),
    _quantized(call("qmatmul", "x", "w", a_zero=AttrRef("a_zero"))),
    (_A_ZERO, *_OUT),
    "i8",
)
# quantize((qconv2d(x, w) + b) * s): a QLinearConv / QDQ Conv in one kernel
fused(
    "qconv2d_bias_dequant_quant",
    ("x", "w", "b", "s"),
    _quantized(
        call(
            "qconv2d",
            "x",
            "w",
            a_zero=AttrRef("a_zero"),
            stride=AttrRef("stride"),
            padding=AttrRef("padding"),
            groups=AttrRef("groups"),
        )
    ),
    (*_CONV, *_OUT),
    "i8",
)


# ------------------------------------------------------------ elementwise on int8

_IN = (
    AttrSpec("x_scale", AttrType.FLOAT, doc="scale of the i8 operand x"),
    AttrSpec("x_zero", AttrType.INT, 0, "zero point of the i8 operand x"),
)


def _requantized(op: str) -> object:
    """quantize(op(dequantize(x), r)): an ONNX QDQ Add or Mul (ORT's QLinearAdd and
    QLinearMul as eqsat imports them), one elementwise kernel, int8 in and out."""
    real = call("dequantize", "x", scale=AttrRef("x_scale"), zero_point=AttrRef("x_zero"))
    return call(
        "quantize",
        call(op, real, "r"),
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        dtype="i8",
    )


def _elementwise(name: str, body) -> None:
    register(replace(_make(name, ("x", "r"), body, (*_IN, *_OUT)), egg_dtype="i8"))


_elementwise("dequantize_add_quantize", _requantized("add"))
_elementwise("dequantize_mul_quantize", _requantized("mul"))


# ------------------------------------------- ONNX Runtime's QLinearAdd / QLinearMul
# Their kernels' own f32 arithmetic (frontend/onnx/convert/quant.py), one elementwise
# kernel each, i8 forms in and out (stored value = i8 form + offset). The scalars are
# operands (constants of shape [], immediates of the kernel).

_ZP = (AttrSpec("zero_point", AttrType.INT, 0, "zero point of the i8 result (-offset)"),)


def _stored(x: str, offset: str) -> object:
    """The stored value of an 8-bit operand in f32: its i8 form plus the offset."""
    return call("add", call("cast", x, dtype="f32"), offset)


def _rounded(real) -> object:
    return call("quantize", real, scale=1.0, zero_point=AttrRef("zero_point"), dtype="i8")


def _fused_i8(name: str, operands: tuple[str, ...], body) -> None:
    register(replace(_make(name, operands, body, _ZP), egg_dtype="i8"))


# round(fma(x, rx, fma(y, ry, f))) on stored values: QLinearAdd of two tensors
_fused_i8(
    "qlinear_add",
    ("x", "y", "ox", "rx", "oy", "ry", "f"),
    _rounded(call("fma", _stored("x", "ox"), "rx", call("fma", _stored("y", "oy"), "ry", "f"))),
)
# round(fma(x, rx, p)): QLinearAdd of a tensor and a scalar (p: the scalar's part)
_fused_i8(
    "qlinear_add_scalar",
    ("x", "ox", "rx", "p"),
    _rounded(call("fma", _stored("x", "ox"), "rx", "p")),
)

# round(fma(k, rk, fma(y, ry, f))): QLinearAdd whose first operand is known (k: its values)
_fused_i8(
    "qlinear_add_first",
    ("k", "rk", "y", "oy", "ry", "f"),
    _rounded(call("fma", "k", "rk", call("fma", _stored("y", "oy"), "ry", "f"))),
)


def _centered(x: str, zero: str) -> object:
    return call("sub", call("cast", x, dtype="i32"), zero)


# round(f32((x - zx) * (y - zy)) * m + zc): QLinearMul
_fused_i8(
    "qlinear_mul",
    ("x", "y", "zx", "zy", "m", "zc"),
    _rounded(
        call(
            "add",
            call(
                "mul",
                call("cast", call("mul", _centered("x", "zx"), _centered("y", "zy")), dtype="f32"),
                "m",
            ),
            "zc",
        )
    ),
)
# the same with (y - zy) known: an i32 constant k
_fused_i8(
    "qlinear_mul_const",
    ("x", "zx", "k", "m", "zc"),
    _rounded(
        call(
            "add",
            call("mul", call("cast", call("mul", _centered("x", "zx"), "k"), dtype="f32"), "m"),
            "zc",
        )
    ),
)


# A QLinearMatMul and the QLinearAdd of its bias after it (ORT's quantizer writes BERT's
# linears so) in one kernel: the requantized i8 product leaves the accumulator through
# the add's two fused multiply-adds, exactly as the two kernels compute it.
_REQUANT = _quantized(call("qmatmul", "x", "w", a_zero=AttrRef("a_zero")))
fused(
    "qmatmul_requant_add_first",
    ("k", "rk", "x", "w", "b", "s", "oy", "ry", "f"),
    call(
        "quantize",
        call(
            "fma",
            "k",
            "rk",
            call("fma", call("add", call("cast", _REQUANT, dtype="f32"), "oy"), "ry", "f"),
        ),
        scale=1.0,
        zero_point=AttrRef("out_zero"),
        dtype="i8",
    ),
    (_A_ZERO, *_OUT, AttrSpec("out_zero", AttrType.INT, 0, "zero point of the add's i8 result")),
    "i8",
)

# quantize(f32((x - a_zero) @ (y - b_zero)) * s): a QLinearMatMul of two activations
# (attention's products: run-time zero points on both sides, their row and column sums
# in the epilogue) with its requantization, one kernel
fused(
    "qmatmul2_dequant_quant",
    ("x", "y", "s"),
    call(
        "quantize",
        call(
            "mul",
            call(
                "cast",
                call("qmatmul", "x", "y", a_zero=AttrRef("a_zero"), b_zero=AttrRef("b_zero")),
                dtype="f32",
            ),
            "s",
        ),
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
        dtype="i8",
    ),
    (_A_ZERO, AttrSpec("b_zero", AttrType.INT, 0, "zero point subtracted from y"), *_OUT),
    "i8",
)


# ------------------------------------------- the erf-GELU of ONNX Runtime's quantizer
# ORT's quantizer leaves GELU's x / sqrt(2) and erf in float between a DequantizeLinear
# and a QuantizeLinear, and writes the rest as QLinearAdd (+1) and QLinearMul (by x,
# by 0.5). These kernels are that chain in one elementwise kernel, each step the very
# op (the same arithmetic in the same order) the separate kernels run.


def inline(op_name: str, **args: object) -> Call:
    """The body of the fused op `op_name` with its operands (names) and attributes
    (AttrRefs) replaced by `args`: a fused op built from others keeps their exact
    arithmetic."""
    op = REGISTRY[op_name]

    def sub(e):
        if isinstance(e, str):
            return args.get(e, e)
        attrs = {
            k: args.get(v.name, v) if isinstance(v, AttrRef) else v for k, v in e.attrs.items()
        }
        return Call(e.op, tuple(sub(a) for a in e.args), attrs)

    return sub(op.composition)


def _erf_quantized() -> Call:
    """quantize(erf(dequantize(x) / c)): the float part of the erf-GELU."""
    real = call("dequantize", "x", scale=AttrRef("x_scale"), zero_point=AttrRef("x_zero"))
    return call(
        "quantize",
        call("erf", call("div", real, "c")),
        scale=AttrRef("e_scale"),
        zero_point=AttrRef("e_zero"),
        dtype="i8",
    )


_GATE_ATTRS = (
    *_IN,
    AttrSpec("e_scale", AttrType.FLOAT, doc="scale of the quantized erf"),
    AttrSpec("e_zero", AttrType.INT, 0, "zero point of the quantized erf"),
    AttrSpec("a_zero", AttrType.INT, 0, "zero point of 1 + erf (the QLinearAdd's result)"),
)
_GATE = ("x", "c", "ox", "rx", "p", "zx", "zy", "m", "zc")


def _gate(zero: object) -> Call:
    """qlinear_mul(1 + quantize(erf(dequantize(x) / c)), x): x * (1 + erf(x / sqrt 2))."""
    plus = inline("qlinear_add_scalar", x=_erf_quantized(), zero_point=AttrRef("a_zero"))
    return inline("qlinear_mul", x=plus, y="x", zero_point=zero)


def _erf_fused(name: str, operands: tuple[str, ...], body: Call, attrs: tuple) -> None:
    register(replace(_make(name, operands, body, (*_GATE_ATTRS, *attrs, *_ZP)), egg_dtype="i8"))


# x * (1 + erf(x / c)) on int8 x, int8 out: six kernels (dequantize, div, erf, quantize,
# QLinearAdd, QLinearMul) in one
_erf_fused("qlinear_erf_gate", _GATE, _gate(AttrRef("zero_point")), ())
# k * (x * (1 + erf(x / c))): the whole erf-GELU (k: the quantized 0.5), seven in one
_erf_fused(
    "qlinear_erf_gelu",
    (*_GATE, "k", "kz", "gz", "km", "kzc"),
    inline(
        "qlinear_mul",
        x="k",
        y=_gate(AttrRef("g_zero")),
        zx="kz",
        zy="gz",
        m="km",
        zc="kzc",
        zero_point=AttrRef("zero_point"),
    ),
    (AttrSpec("g_zero", AttrType.INT, 0, "zero point of x * (1 + erf(x / c))"),),
)


# ------------------------------------------------- softmax and layernorm on int8 edges
# ORT's quantizer leaves softmax and layernorm in float: DequantizeLinear before,
# QuantizeLinear after (QLinearSoftmax imports the same way). One row kernel each, the
# dequantize in its prologue and the quantize in its epilogue (eqsat/row_plan.py
# quantized_row_program: the standalone kernels' instructions in their order).


def _dequantized_x() -> Call:
    return call("dequantize", "x", scale=AttrRef("x_scale"), zero_point=AttrRef("x_zero"))


def _to_i8(real: Call, scale: str = "scale", zero: str = "zero_point") -> Call:
    return call("quantize", real, scale=AttrRef(scale), zero_point=AttrRef(zero), dtype="i8")


_AXIS = AttrSpec("axis", AttrType.INT, -1, "the softmax's axis")
_EPS = AttrSpec("eps", AttrType.FLOAT, 1e-5, "the layernorm's epsilon")
_REQ = (
    AttrSpec("r_scale", AttrType.FLOAT, doc="scale of the second quantization"),
    AttrSpec("r_zero", AttrType.INT, 0, "zero point of the second quantization"),
)
_SOFTMAX = call("softmax", _dequantized_x(), axis=AttrRef("axis"))


def _row_fused(name: str, operands: tuple[str, ...], body: Call, attrs: tuple) -> None:
    register(replace(_make(name, operands, body, (*_IN, *attrs, *_OUT)), egg_dtype="i8"))


_row_fused(
    "dequantize_layernorm_quantize",
    ("x", "gamma", "beta"),
    _to_i8(call("layernorm", _dequantized_x(), "gamma", "beta", eps=AttrRef("eps"))),
    (_EPS,),
)
_row_fused("dequantize_softmax_quantize", ("x",), _to_i8(_SOFTMAX), (_AXIS,))
# quantize(dequantize(quantize(softmax(dequantize(x))))): a QLinearSoftmax (or QDQ
# softmax) whose result is dequantized and quantized again at another scale (the NaN
# guard of BERT's exporters between them, removed by rule)
_row_fused(
    "dequantize_softmax_requantize",
    ("x",),
    _to_i8(
        call(
            "dequantize", _to_i8(_SOFTMAX), scale=AttrRef("scale"), zero_point=AttrRef("zero_point")
        ),
        "r_scale",
        "r_zero",
    ),
    (_AXIS, *_REQ),
)

# the row kernels above: their row op and int8 edges, read by the backend and the cost model
ROW_QUANT_OPS = {
    "dequantize_layernorm_quantize": "layernorm",
    "dequantize_softmax_quantize": "softmax",
    "dequantize_softmax_requantize": "softmax",
}


def row_quant_steps(op_name: str, attrs) -> tuple[tuple[float, int], tuple]:
    """(pre, post) of eqsat/row_plan.py RowQuant for one of ROW_QUANT_OPS."""
    pre = (float(attrs["x_scale"]), int(attrs["x_zero"]))
    post = [("quantize", float(attrs["scale"]), int(attrs["zero_point"]))]
    if op_name == "dequantize_softmax_requantize":
        post.append(("dequantize", float(attrs["scale"]), int(attrs["zero_point"])))
        post.append(("quantize", float(attrs["r_scale"]), int(attrs["r_zero"])))
    return pre, tuple(post)


# The same erf-GELU in a QDQ graph: QDQ Add and Mul (dequantize_add_quantize,
# dequantize_mul_quantize, r their dequantized operands) where QOperator has QLinearAdd
# and QLinearMul: x * (1 + erf(x / c)) * 0.5 in one kernel (r1: the 1, r2: the 0.5)
def _qdq_erf_gelu() -> Call:
    real = _dequantized_x()
    plus = inline(
        "dequantize_add_quantize",
        x=_erf_quantized(),
        r="r1",
        x_scale=AttrRef("e_scale"),
        x_zero=AttrRef("e_zero"),
        scale=AttrRef("a_scale"),
        zero_point=AttrRef("a_zero"),
    )
    gate = inline(
        "dequantize_mul_quantize",
        x=plus,
        r=real,
        x_scale=AttrRef("a_scale"),
        x_zero=AttrRef("a_zero"),
        scale=AttrRef("m_scale"),
        zero_point=AttrRef("m_zero"),
    )
    return inline(
        "dequantize_mul_quantize",
        x=gate,
        r="r2",
        x_scale=AttrRef("m_scale"),
        x_zero=AttrRef("m_zero"),
        scale=AttrRef("scale"),
        zero_point=AttrRef("zero_point"),
    )


_STEP = (
    AttrSpec("a_scale", AttrType.FLOAT, 1.0, "scale of 1 + erf (the QDQ Add's result)"),
    AttrSpec("a_zero", AttrType.INT, 0, "zero point of 1 + erf"),
    AttrSpec("m_scale", AttrType.FLOAT, 1.0, "scale of x * (1 + erf) (the QDQ Mul's result)"),
    AttrSpec("m_zero", AttrType.INT, 0, "zero point of x * (1 + erf)"),
)
register(
    replace(
        _make(
            "dequantize_erf_gelu",
            ("x", "c", "r1", "r2"),
            _qdq_erf_gelu(),
            (*_IN, *_GATE_ATTRS[2:4], *_STEP, *_OUT),
        ),
        egg_dtype="i8",
    )
)


# A QDQ MatMul's requantized product and the QDQ Add of its bias after it (ORT's QDQ
# BERT writes its linears so) in one kernel: the bias add and its quantize in the
# product's epilogue, the same arithmetic as the two kernels
fused(
    "qmatmul_requant_dequant_add",
    ("x", "w", "b", "s", "r"),
    inline(
        "dequantize_add_quantize",
        x=inline(
            "qmatmul_bias_dequant_quant", scale=AttrRef("q_scale"), zero_point=AttrRef("q_zero")
        ),
        x_scale=AttrRef("q_scale"),
        x_zero=AttrRef("q_zero"),
    ),
    (
        _A_ZERO,
        AttrSpec("q_scale", AttrType.FLOAT, 1.0, "scale of the requantized product"),
        AttrSpec("q_zero", AttrType.INT, 0, "zero point of the requantized product"),
        *_OUT,
    ),
    "i8",
)
