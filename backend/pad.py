"""Constant padding: one kernel that copies x into the interior of the output and fills
the border.

The border of an N-D box is cut into slabs, one or two per axis: for axis a, the
elements inside the interior along the axes before a, in the begin (or end) padding
along a, anything along the axes after a. Each slab is a strided view of the output
filled by an immediate, and the pieces are streamed one after another (fenced), like
the pieces of a concat. Where the slabs are thin (a column of padding per row: many
tiny tiles) the plan (eqsat/spatial_plan.py: pad_fills_first) fills the whole output
first and copies the interior over it instead, if that costs less on this hardware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from eqsat.interpreter import narrow
from eqsat.ir.graph import Node
from eqsat.ops.spatial import fill_value, pad_widths
from eqsat.spatial_plan import pad_fills_first

from .ewise import emit_ewise
from .expr import Leaf
from .views import Imm, Value, View

if TYPE_CHECKING:
    from .compiler import Compiler


def pad_slabs(out: View, widths: list[tuple[int, int]]) -> list[View]:
    """The border of `out` around the interior given by (begin, end) per axis."""
    shape = out.shape
    inner = [(b, d - e) for d, (b, e) in zip(shape, widths, strict=True)]
    slabs = []
    for a, (lo, hi) in enumerate(inner):
        for start, end in ((0, lo), (hi, shape[a])):
            if end <= start:
                continue
            starts = [r[0] for r in inner[:a]] + [start] + [0] * (len(shape) - a - 1)
            ends = [r[1] for r in inner[:a]] + [end] + list(shape[a + 1 :])
            slabs.append(out.slice(tuple(starts), tuple(ends)))
    return slabs


def lower_pad(c: Compiler, i: int, node: Node) -> Value:
    x = c.value(node.inputs[0])
    x_type, t = c.graph.nodes[node.inputs[0]].type, node.type
    widths = pad_widths("pad", x_type, node.attr("pads"))  # type: ignore[arg-type]
    stored = narrow(np.asarray(fill_value(float(node.attr("value")), t.dtype)), t.dtype)  # type: ignore[arg-type]
    fill = Imm(float(np.asarray(stored, dtype=np.float64)), t.dtype.value)
    out = c.alloc_value(i, node, keep_last=False)
    begins = tuple(b for b, _ in widths)
    interior = out.slice(begins, tuple(b + d for b, d in zip(begins, x_type.shape, strict=True)))
    leaves = [x] if isinstance(x, View) else []
    copy = (interior, Leaf(0) if leaves else x, leaves)
    if pad_fills_first(c.hw, x_type, widths):
        pieces = [(out, fill, []), copy]
    else:
        pieces = [copy, *[(slab, fill, []) for slab in pad_slabs(out, widths)]]

    def emit(kb) -> None:
        for k, (dst, expr, ins) in enumerate(pieces):
            if k:
                kb.fence()
            emit_ewise(kb, dst, expr, ins, c.zero())  # type: ignore[arg-type]

    c.add_kernel(c.kernel_name(i), i, "main", emit, leaves, [out])
    return out
