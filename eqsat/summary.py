"""What a model costs before any optimization: op counts, parameters, FLOPs, bytes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.ir.types import dtype_of_array
from eqsat.limits import number_text


@dataclass(frozen=True)
class Summary:
    name: str
    ops: Counter[str]
    inputs: dict[str, str]
    outputs: dict[str, str]
    param_count: int
    param_bytes: int
    flops: int
    bytes_moved: int  # every op reads its operands from and writes its result to DRAM

    def format(self) -> str:
        lines = [f"model {self.name}"]
        lines += [f"  input  {k}: {v}" for k, v in self.inputs.items()]
        lines += [f"  output {k}: {v}" for k, v in self.outputs.items()]
        total = sum(self.ops.values())
        lines.append(f"ops: {total}")
        width = max((len(k) for k in self.ops), default=0)
        lines += [
            f"  {k:<{width}}  {v}"
            for k, v in sorted(self.ops.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        lines.append(f"parameters: {self.param_count:,} ({human_bytes(self.param_bytes)})")
        lines.append(f"FLOPs: {self.flops:,} ({human_count(self.flops)})")
        lines.append(
            f"bytes moved, unfused: {self.bytes_moved:,} ({human_bytes(self.bytes_moved)})"
        )
        return "\n".join(lines)


def describe_value(name: str, value: np.ndarray) -> str:
    """One line of `eqsat run`'s listing: the value's dtype, shape, min, max and mean."""
    wide = value.astype(np.float64)
    stats = (
        f"min {wide.min():.4g}  max {wide.max():.4g}  mean {wide.mean():.4g}"
        if value.size
        else "empty"
    )
    try:
        dtype = dtype_of_array(value).value
    except ValueError:  # an ONNX output type (int64, bool...)
        dtype = value.dtype.name
    return f"  {name}: {dtype}{list(value.shape)}  {stats}"


def human_bytes(n: float) -> str:
    if isinstance(n, int) and n.bit_length() > 1000:  # beyond float: no `/` on it
        return f"{number_text(n)} B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def text_table(rows: Sequence[Sequence[str]], left: Collection[int] = ()) -> list[str]:
    """Fixed-width columns (the `left` ones left-aligned, the rest right-aligned) with a
    rule of dashes under the first row, the header: plain text for pipes and logs."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def human_count(n: float) -> str:
    if isinstance(n, int) and n.bit_length() > 1000:  # beyond float: no `/` on it
        return number_text(n)
    for unit in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or unit == "T":
            return f"{n:.0f}" if unit == "" else f"{n:.2f} {unit}"
        n /= 1000
    raise AssertionError


def summarize(graph: Graph) -> Summary:
    live = graph.live()
    ops: Counter[str] = Counter()
    flops = moved = 0
    for i, node in graph:
        if not live[i] or node.is_leaf:
            continue
        ops[node.op] += 1
        in_types = [graph.nodes[j].type for j in node.inputs]
        flops += node.opdef.flops(in_types, node.type, node.attr_dict)
        moved += node.opdef.bytes_read(in_types, node.attr_dict)
        moved += node.opdef.bytes_written(node.type)
    params = [n.type for i, n in graph.params if live[i]]
    return Summary(
        name=graph.name,
        ops=ops,
        inputs={str(n.attr("name")): str(n.type) for _, n in graph.inputs},
        outputs={name: str(graph.nodes[i].type) for name, i in graph.outputs},
        param_count=sum(t.numel for t in params),
        param_bytes=sum(t.nbytes for t in params),
        flops=flops,
        bytes_moved=moved,
    )
