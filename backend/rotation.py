"""hadamard(x, block=B): a fast Walsh-Hadamard transform on the vector unit, tiled as
eqsat/rotation_plan.py plans it (the cost model prices the same instructions).

x is viewed as [R, B] rows without copying where its strides allow (else copied
row-major first); per tile of rows: load (double buffered), the butterfly program,
store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.rotation_plan import hadamard_program, hadamard_rows_per_tile

from .emit import KernelBuilder, Pipeline, sub
from .errors import BackendError
from .space import Operand, dram
from .views import Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def lower_hadamard(c: Compiler, i: int, node: Node) -> Value:
    block = int(node.attr("block"))  # type: ignore[call-overload]
    t = node.type
    rows = t.numel // block
    whole = c.as_view(c.value(node.inputs[0]), t.shape, c.label(i))
    x = whole.reshape((rows, block))
    if x is None or x.strides[1] != 1:  # DMA rows need unit strides
        x = c.materialize(whole, c.label(i), i).reshape((rows, block))
    assert x is not None
    out = c.new_buffer("f32", t.shape, c.label(i))
    out2 = out.reshape((rows, block))
    assert out2 is not None
    if hadamard_rows_per_tile(c.hw, rows, block) < 1:
        raise BackendError(f"hadamard of {t}: one block row does not fit the SRAM of {c.hw.name}")
    c.add_kernel(
        c.kernel_name(i),
        i,
        "main",
        lambda kb: emit_hadamard(kb, x, out2, block),  # type: ignore[arg-type]
        [x],
        [out],
    )
    return out


def emit_hadamard(kb: KernelBuilder, x: View, out: View, block: int) -> None:
    """out = x H_block row by row ([R, block] views, unit column strides)."""
    rows = x.shape[0]
    rt = hadamard_rows_per_tile(kb.hw, rows, block)
    xs = kb.alloc2(rt, block, "f32")
    t, u = kb.alloc(rt, block, "f32"), kb.alloc(rt, block, "f32")
    outs = kb.alloc2(rt, block, "f32")
    xo, oo = Operand(x.buf, x.offset, x.strides), Operand(out.buf, out.offset, out.strides)
    pipe = Pipeline(kb, "h")
    for r0 in range(0, rows, rt):
        rn = min(rt, rows - r0)
        slot = pipe.slot("x")
        xt = sub(xs[slot], rn, block)
        src = dram(xo, x.offset + r0 * x.strides[0], rn, block, x.strides[0])
        gen, _ = pipe.load("x", [(xt, src)])
        pipe.begin_out()
        o = sub(outs[pipe.out_slot()], rn, block)
        pipe.compute(hadamard_program(xt, sub(t, rn, block), sub(u, rn, block), o, block))
        pipe.release(gen)
        dst = dram(oo, out.offset + r0 * out.strides[0], rn, block, out.strides[0])
        pipe.store([(dst, o)])
