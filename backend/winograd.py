"""Winograd convolution kernels: the input and output transforms of eqsat/ops/winograd.py,
and the whole convolution as one kernel (winograd_conv*, eqsat/winograd_fused.py).

The instructions come from eqsat/winograd_plan.py, the plan the cost model replays;
here they are placed in the program: DRAM references moved onto the buffers the
planner gave the operands, tokens made the kernel's own. The input transform reads
the padded NHWC image the convolution prep writes (conv_prep.nhwc_image). The weight
transform runs at load time (a prepared weight, eqsat/weights.py): a winograd_weight
of a run-time tensor has no kernel.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eqsat.ir.graph import Node
from eqsat.ops.winograd import CONV_EPILOGUES, EPILOGUES, input_out_hw, tiles
from eqsat.winograd_fused import conv_instrs, conv_plan
from eqsat.winograd_plan import input_instrs, input_plan, output_instrs, output_plan
from hwsim.isa import DramRef, Instr, Load, Store

from .conv_prep import nhwc_image
from .errors import BackendError
from .views import Imm, Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def _dense(c: Compiler, i: int, v: View) -> View:
    """v as a row-major view (a copy kernel when it is not one)."""
    expect, s = [], 1
    for d in reversed(v.shape):
        expect.append(s)
        s *= d
    if tuple(reversed(expect)) == tuple(v.strides):
        return v
    return c.materialize(v, c.label(i), i)


def _placer(places: dict[str, View], tag: str):
    def ref(r: DramRef) -> DramRef:
        v = places[r.buffer]
        if v.buf.phys is None:
            raise AssertionError(f"buffer {v.buf.label} was not placed")
        return dataclasses.replace(r, buffer=v.buf.phys, offset=v.buf.base + v.offset + r.offset)

    def place(ins: Instr) -> Instr:
        ins = dataclasses.replace(
            ins,
            wait=tuple(tag + t for t in ins.wait),
            signal=tuple(tag + t for t in ins.signal),
        )
        if isinstance(ins, Load):
            return dataclasses.replace(ins, src=ref(ins.src))
        if isinstance(ins, Store):
            return dataclasses.replace(ins, dst=ref(ins.dst))
        return ins

    return place


def _emit(c: Compiler, name: str, i: int, instrs_of, places: dict[str, View], reads, writes):
    def emit(kb) -> None:
        place = _placer(places, kb.token(""))
        for ins in instrs_of():
            kb.emit(place(ins))

    c.add_kernel(name, i, "main", emit, reads, writes)


def lower_winograd_input(c: Compiler, i: int, node: Node) -> Value:
    j = node.inputs[0]
    t = c.graph.nodes[j].type
    x = c.as_view(c.value(j), t.shape, c.label(i))
    m = int(node.attr("m"))  # type: ignore[call-overload]
    pad = tuple(int(p) for p in node.attr("padding"))  # type: ignore[union-attr]
    ho, wo = input_out_hw(t, pad)
    th, tw = tiles((ho, wo), m)
    n, ch = t.shape[:2]
    found = input_plan(c.hw, n, ch, m, ho, wo)
    if found is None:
        raise BackendError(f"{c.label(i)}: no Winograd input tile fits {c.hw.name}'s SRAM")
    plan = found[0]
    image = nhwc_image(c, i, x, pad, (m * th + 2, m * tw + 2), Imm(0.0, x.dtype))
    out = c.alloc_value(i, node, keep_last=False)
    if not isinstance(out, View) or _dense(c, i, out) is not out:
        out = c.new_buffer("f32", node.type.shape, c.label(i))
    places = {"x": image, "v": out}
    _emit(c, c.kernel_name(i), i, lambda: input_instrs(plan, "x", "v"), places, [image], [out])
    return out


def lower_winograd_output(c: Compiler, i: int, node: Node) -> Value:
    bias, residual, relu = EPILOGUES[node.op]
    tv = c.graph.nodes[node.inputs[0]].type
    src = _dense(c, i, c.as_view(c.value(node.inputs[0]), tv.shape, c.label(i)))
    m = int(node.attr("m"))  # type: ignore[call-overload]
    size = tuple(int(s) for s in node.attr("size"))  # type: ignore[union-attr]
    n, o, ho, wo = node.type.shape
    found = output_plan(c.hw, n, o, m, ho, wo, (bias, residual, relu))
    if found is None:
        raise BackendError(f"{c.label(i)}: no Winograd output tile fits {c.hw.name}'s SRAM")
    plan = found[0]
    places: dict[str, View] = {"t": src}
    reads = [src]
    if bias:
        bt = c.graph.nodes[node.inputs[1]].type
        b = c.as_view(c.value(node.inputs[1]), bt.shape, c.label(i))
        b = _dense(c, i, b)
        places["b"] = b
        reads.append(b)
    nhwc = False
    if residual:
        rt = c.graph.nodes[node.inputs[2]].type
        r = c.as_view(c.value(node.inputs[2]), rt.shape, c.label(i))
        if rt.shape != node.type.shape:
            r = r.broadcast_to(node.type.shape)
        nhwc = _is_nhwc(r) and _fits_nhwc(c, plan)
        if not nhwc:
            r = _dense(c, i, r)
        places["r"] = r
        reads.append(r)
    out = c.placed(i) or c.new_buffer("f32", node.type.shape, c.label(i))  # a concat's block
    places["y"] = out
    del size

    def instrs():
        b, r = "b" if bias else None, "r" if residual else None
        return output_instrs(plan, "t", "y", b, r, residual_nhwc=nhwc)

    _emit(c, c.kernel_name(i), i, instrs, places, reads, [out])
    return out


def _is_nhwc(v: View) -> bool:
    """A [N, C, H, W] view of a dense [N, H, W, C] buffer (a window kernel's output)."""
    _, ch, h, w = v.shape
    return tuple(v.strides) == (h * w * ch, 1, w * ch, ch)


def _fits_nhwc(c: Compiler, plan) -> bool:
    """Does the plan's block leave room for the pixel-major residual slots?"""
    probe = output_instrs(
        plan, "t", "y", "b", "r", limit=c.hw.sram_bytes, max_steps=1, residual_nhwc=True
    )
    return probe.sram <= c.hw.sram_bytes


def lower_winograd_conv(c: Compiler, i: int, node: Node) -> Value:
    """The whole convolution in one kernel (eqsat/winograd_fused.py): x read as it is
    (NCHW), no padding kernel, the transformed tiles on chip."""
    bias, residual, relu = CONV_EPILOGUES[node.op]
    xt, ut = (c.graph.nodes[j].type for j in node.inputs[:2])
    x = _dense(c, i, c.as_view(c.value(node.inputs[0]), xt.shape, c.label(i)))
    u = _dense(c, i, c.as_view(c.value(node.inputs[1]), ut.shape, c.label(i)))
    m = int(node.attr("m"))  # type: ignore[call-overload]
    pad = tuple(int(p) for p in node.attr("padding"))  # type: ignore[union-attr]
    n, ch, h, w = xt.shape
    found = conv_plan(c.hw, n, ch, ut.shape[2], h, w, m, pad, (bias, residual, relu))
    if found is None:
        raise BackendError(f"{c.label(i)}: no fused Winograd block fits {c.hw.name}'s SRAM")
    plan = found[0]
    places: dict[str, View] = {"x": x, "u": u}
    reads = [x, u]
    for name, k, on in (("b", 2, bias), ("r", 3, residual)):
        if on:
            t = c.graph.nodes[node.inputs[k]].type
            v = c.as_view(c.value(node.inputs[k]), t.shape, c.label(i))
            if name == "r" and t.shape != node.type.shape:
                v = v.broadcast_to(node.type.shape)
            places[name] = _dense(c, i, v)
            reads.append(places[name])
    out = c.placed(i) or c.new_buffer("f32", node.type.shape, c.label(i))  # a concat's block
    places["y"] = out

    def instrs():
        b, r = "b" if bias else None, "r" if residual else None
        return conv_instrs(plan, "x", "u", "y", b, r)

    _emit(c, c.kernel_name(i), i, instrs, places, reads, [out])
    return out


def lower_winograd_weight(c: Compiler, i: int, node: Node) -> Value:
    raise BackendError(
        f"{c.label(i)}: winograd_weight runs when the weights are loaded; its operand "
        "must be computed from params only"
    )


LOWER_WINOGRAD = {
    "winograd_input": lower_winograd_input,
    "winograd_weight": lower_winograd_weight,
    **dict.fromkeys(EPILOGUES, lower_winograd_output),
    **dict.fromkeys(CONV_EPILOGUES, lower_winograd_conv),
}
