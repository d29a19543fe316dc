"""What a command quantized (`--quantize`): the plan, the float params it quantized and
the inputs its SQNR is measured on; and how many int8 kernels an optimized graph has.

Apart from eqsat/quant/cli.py (the flags) so that the modules it calls for each scheme
(weight_only_run.py, report.py, floor.py) read these without importing it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.quant.passes import QuantPlan


@dataclass
class QuantRun:
    """A planned quantization and where its evaluation inputs come from."""

    plan: QuantPlan
    params: dict[str, np.ndarray]  # original param values the plan quantized
    eval_inputs: list[dict[str, np.ndarray]]
    calibration: str  # human description
    sqnr: dict[str, float] = field(default_factory=dict)
    scheme: str = "int8"
    layer_choices: list = field(default_factory=list)  # --quantize auto (eqsat/quant/auto.py)
    auto: Any = None  # eqsat.quant.auto.AutoResult with --quantize auto
    floor: Any = None  # eqsat.quant.floor.FloorResult with --quantize int8 --sqnr-min

    @property
    def all_params(self) -> dict[str, np.ndarray]:
        return {**self.params, **self.plan.params}


def int8_kernels(graph: Graph) -> int:
    """Kernels of `graph` that multiply in int8."""
    from eqsat.ops import OpKind
    from eqsat.ops.fused import body_nodes

    n = 0
    for _, node in graph:
        if node.op in ("qmatmul", "qconv2d"):
            n += 1
        elif node.opdef.kind is OpKind.FUSED and node.opdef.composition is not None:
            ts = [graph.nodes[j].type for j in node.inputs]
            body = body_nodes(node.opdef.composition, node.opdef.operands, ts, node.attr_dict)
            n += any(b.op.name in ("qmatmul", "qconv2d") for b in body)
    return n
