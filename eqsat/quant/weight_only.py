"""Weight-only quantization (`--quantize w4a16 | w8a16 | fp8 | bf16`): for memory-bound
work (a decoder generating one token reads every weight once per token), only the
weights shrink; activations stay 16-bit or wider.

Division of labour, as for int8 (eqsat/quant/__init__.py):

1. This pass marks the weight of every quantizable matmul (x @ w, w a rank-2 f32 param
   whose value is known, K divisible by the group size) as
   wobserve(w, group=G, bits=B, fmt=F, act=A) - w itself - and computes, with the reference
   interpreter, the terms rules/quant.rules build from it (wq_pack(w) and wq_scales(w):
   packed integers and group scales; cast(w, bf16) for bf16 weights), stored as new
   params and seeded into the e-graph as `term = param`.
2. rules/quant.rules (approximate, only with --quantize) turn matmul(x, wobserve(w))
   into matmul_wq(x, wq_pack(w), wq_scales(w)) (or a bf16 product), and drop wobserve
   where it stays; extraction decides where it pays.
3. The backend lowers matmul_wq to a GEMM whose weight tiles come through the load-path
   dequantizer (hwsim LoadDq): DRAM moves packed bytes only.

Activations ("a16"): the annotation says bf16 where the hardware declares bf16 MACs,
else f32; the rules offer the f32 product in either case and the bf16 one (x cast to
bf16, weights dequantized into bf16 tiles, f32 accumulation) where bf16 is declared,
and extraction keeps the cheaper (bf16 on edge: smaller SRAM tiles; f32 on datacenter,
whose vector unit runs a one-row f32 product faster than the array).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqsat.flags import UsageError
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType
from eqsat.quant.passes import QuantPlan, _Seeds
from hwsim.hardware import PRESET_DIR, PRESETS, Hardware

DEFAULT_GROUP = 128
DEFAULT_SCALE_DTYPE = "bf16"  # group scales as GPTQ/AWQ kernels store them (--group-scale-dtype)


@dataclass(frozen=True)
class Scheme:
    """One weight-only scheme: weight bits (16: bf16 weights) and the weight dtype the
    hardware must declare in `weight_dtypes`."""

    name: str
    bits: int
    weight_dtype: str
    fmt: str = "int"  # int, or e4m3 (FP8 bytes)


SCHEMES = {
    "w4a16": Scheme("w4a16", 4, "i4"),
    "w8a16": Scheme("w8a16", 8, "i8"),
    "fp8": Scheme("fp8", 8, "fp8", "e4m3"),
    "bf16": Scheme("bf16", 16, "bf16"),
}


def hardware_file(spec: str) -> str:
    """The file a --hw spec names (a preset's TOML for a preset name)."""
    return str(PRESET_DIR / f"{spec}.toml") if spec in PRESETS else str(Path(spec))


def check_hardware(scheme: Scheme, hw: Hardware, spec: str) -> str:
    """The activation dtype the scheme runs in on `hw`; a UsageError naming the hardware
    file when it does not declare the weight precision the scheme stores."""
    where = hardware_file(spec)
    if scheme.weight_dtype not in hw.weight_dtypes:
        declared = ", ".join(f'"{d}"' for d in hw.weight_dtypes)
        raise UsageError(
            f"--quantize {scheme.name}: {where} does not declare {scheme.weight_dtype} weights "
            f'(weight_dtypes = [{declared}]); add "{scheme.weight_dtype}" to weight_dtypes '
            "in the hardware file if its load path supports them"
        )
    if scheme.bits == 16 and "bf16" not in hw.macs_per_cycle:
        raise UsageError(f"--quantize bf16: {where} declares no bf16 rate in [macs_per_cycle]")
    return "bf16" if "bf16" in hw.macs_per_cycle else "f32"


def quantizable_weights(
    graph: Graph, params: Mapping[str, np.ndarray], group: int, bits: int
) -> list[int]:
    """f32 matmuls x @ w, w a rank-2 f32 param with a known finite value whose K (rows)
    the group divides (bits 4 and 8), the default tile."""
    out = []
    for i, node in graph:
        if node.op != "matmul" or node.attr_dict.get("tile", ()) not in ((), []):
            continue
        x, w = (graph.nodes[j] for j in node.inputs)
        if w.op != "param" or w.type.rank != 2 or w.type.dtype is not DType.F32:
            continue
        if x.type.dtype is not DType.F32 or x.type.rank < 2:
            continue
        if str(w.attr("name")) not in params:
            continue
        if bits != 16 and w.type.shape[0] % group:
            continue
        if not np.isfinite(np.asarray(params[str(w.attr("name"))], dtype=np.float32)).all():
            continue
        out.append(i)
    return out


def plan_weight_only(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    bits: int,
    group: int,
    act: str,
    fmt: str = "int",
    bits_of: Mapping[str, int] | None = None,
    sdtype: str = "f32",
) -> QuantPlan:
    """Mark the weights, compute their quantized params and the e-graph seeds.
    `bits_of`: weights (param names) stored at other integer widths than `bits`
    (`--weight-bits wk=8`: a projection whose own output needs more than int4 gives).
    `sdtype`: the group scales' storage dtype (f32 or bf16)."""
    bits_of = dict(bits_of or {})
    live = graph.live()
    mms = [i for i in quantizable_weights(graph, params, group, bits) if live[i]]
    weights = sorted({graph.nodes[i].inputs[1] for i in mms})

    def width(w: int) -> int:
        return bits_of.get(str(graph.nodes[w].attr("name")), bits)

    def attrs_of(w: int) -> dict:
        b = width(w)
        if b == 16:
            return {"group": 1, "bits": b, "fmt": fmt, "act": act}
        return {"group": group, "bits": b, "fmt": fmt, "sdtype": sdtype, "act": act}

    b = GraphBuilder(graph.name, graph.dims)
    b.graph.constants = dict(graph.constants)
    new: dict[int, int] = {}
    marked: dict[int, int] = {}
    for i, node in graph:
        inputs = [new[j] for j in node.inputs]
        if i in mms:
            w = node.inputs[1]
            if w not in marked:
                marked[w] = b.add("wobserve", (new[w],), attrs_of(w))
            inputs[1] = marked[w]
        new[i] = b.add(node.op, inputs, node.attr_dict, node.name)
    for name, i in graph.outputs:
        b.output(name, new[i])
    seeds = _WeightSeeds(graph)
    for w in weights:
        seeds.weight(w, str(graph.nodes[w].attr("name")), width(w), group, fmt, sdtype)
    names = [str(graph.nodes[w].attr("name")) for w in weights]
    return QuantPlan(b.graph, seeds.evaluate(params), seeds.egglog(), [], names)


class _WeightSeeds(_Seeds):
    """The weight-side terms of the weight-only rules (built as the rules build them),
    each paired with a new param that holds its value."""

    var_prefix = "$wseed"

    def __init__(self, graph: Graph) -> None:
        super().__init__(graph, {str(n.attr("name")) for _, n in graph.inputs + graph.params})

    def weight(
        self, w: int, wname: str, bits: int, group: int, fmt: str, sdtype: str = "f32"
    ) -> None:
        node = self.graph.nodes[w]
        pw = self.b.leaf("param", wname, node.type)
        if bits == 16:
            self._pair(self.b.add("cast", (pw,), {"dtype": "bf16"}), f"{wname}.bf16")
            return
        attrs = {"group": group, "bits": bits, "fmt": fmt, "sdtype": sdtype}
        tag = "f8" if fmt == "e4m3" else f"w{bits}"
        self._pair(self.b.add("wq_pack", (pw,), attrs), f"{wname}.{tag}")
        self._pair(self.b.add("wq_scales", (pw,), attrs), f"{wname}.{tag}s")


def weight_bytes(graph: Graph) -> int:
    """DRAM bytes of the params a program reads (what a decode step streams)."""
    return sum(n.type.nbytes for _, n in graph.params)
