"""Weight-only quantized products in MLIR (eqsat/ops/weight_only.py): the packed weights
are dequantized by one linalg.generic over [K, N] (int4: the byte of row k // 2, its
low nibble for even k, high for odd, sign-extended by shifts; times the scale of group
k // group), then multiplied as any matmul. `wq_pack` / `wq_scales` of weights known
at compile time are constants; `wobserve` is x itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.interpreter import narrow
from eqsat.ir.types import DType
from eqsat.ops import REGISTRY

from .contract import matmul_acc
from .core import Body, MlirEmitError, Val, affine_map

if TYPE_CHECKING:
    from .core import Apply
    from .emitter import Emitter


def emit_wobserve(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    return args[0]


def emit_folded_weights(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    w = em.known_value(args[0])
    if w is None:
        raise MlirEmitError(
            f"{ap.op} needs its weights at compile time (a param whose value is given)"
        )
    value = narrow(REGISTRY[ap.op].ref([w], ap.attrs), DType.parse(ap.dtype))
    return em.func.constant(value, ap.dtype, ap.hint)


def _e4m3(b: Body, q: str) -> str:
    """f32 of an FP8 E4M3FN byte with integer ops (hwsim/wq.py e4m3_value): normal
    numbers as f32 bit patterns, subnormals as mantissa * 2^-9, S.1111.111 NaN."""
    x = b.op(f"arith.extui {q} : i8 to i32")

    def i32(op: str, a: str, c: int) -> str:
        return b.op(f"arith.{op} {a}, {b.const(c, 'i32')} : i32")

    sign, exp, mant = i32("andi", x, 128), i32("andi", i32("shrui", x, 3), 15), i32("andi", x, 7)
    bits = b.op(
        f"arith.ori {i32('shli', sign, 24)}, {i32('shli', i32('addi', exp, 120), 23)} : i32"
    )
    bits = b.op(f"arith.ori {bits}, {i32('shli', mant, 20)} : i32")
    normal = b.op(f"arith.bitcast {bits} : i32 to f32")
    sub = b.op(
        f"arith.mulf {b.op(f'arith.uitofp {mant} : i32 to f32')}, {b.const(2.0**-9, 'f32')} : f32"
    )
    negative = b.op(f"arith.cmpi ne, {sign}, {b.const(0, 'i32')} : i32")
    sub = b.op(f"arith.select {negative}, {b.op(f'arith.negf {sub} : f32')}, {sub} : f32")
    zero_exp = b.op(f"arith.cmpi eq, {exp}, {b.const(0, 'i32')} : i32")
    value = b.op(f"arith.select {zero_exp}, {sub}, {normal} : f32")
    c15, c7, nan_value = b.const(15, "i32"), b.const(7, "i32"), b.const(float("nan"), "f32")
    top_exp = b.op(f"arith.cmpi eq, {exp}, {c15} : i32")
    top_mant = b.op(f"arith.cmpi eq, {mant}, {c7} : i32")
    nan = b.op(f"arith.andi {top_exp}, {top_mant} : i1")
    return b.op(f"arith.select {nan}, {nan_value}, {value} : f32")


def emit_matmul_wq(em: Emitter, ap: Apply, args: list[Val]) -> Val:
    x, wq, s = args
    bits, group, act = int(ap.attrs["bits"]), int(ap.attrs["group"]), str(ap.attrs["act"])
    fmt = str(ap.attrs["fmt"])
    k, n = x.shape[-1], ap.shape[-1]
    q_map = affine_map(2, ["d0 floordiv 2" if bits == 4 else "d0", "d1"])
    s_map = affine_map(2, [f"d0 floordiv {group}", "d1"])

    def body(b: Body) -> str:
        (q, _), (scale, sdtype) = b.args[:2]
        scale = b.to_float(scale, sdtype)  # bf16 scales: their values, used in f32
        if fmt == "e4m3":
            w = b.op(f"arith.mulf {_e4m3(b, q)}, {scale} : f32")
            return b.from_float(w, act)
        v = q
        if bits == 4:  # shift the row's nibble to the top, then arithmetically back down
            row = b.op("linalg.index 0 : index")
            odd = b.op(f"arith.andi {row}, {b.const(1, 'index')} : index")
            odd8 = b.op(f"arith.index_cast {odd} : index to i8")
            four = b.const(4, "i8")
            left = b.op(f"arith.subi {four}, {b.op(f'arith.muli {odd8}, {four} : i8')} : i8")
            v = b.op(f"arith.shrsi {b.op(f'arith.shli {q}, {left} : i8')}, {four} : i8")
        w = b.op(f"arith.mulf {b.op(f'arith.sitofp {v} : i8 to f32')}, {scale} : f32")
        return b.from_float(w, act)

    weights = em.func.generic(
        [wq, s], [q_map, s_map], (k, n), act, ["parallel", "parallel"], body, f"{ap.hint}_w"
    )
    return matmul_acc(em, x, weights, ap.shape, "f32", ap.hint)
