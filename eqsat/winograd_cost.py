"""The price of each Winograd op as the backend runs it: the three-kernel form's
transform kernels (eqsat/winograd_plan.py) and the one-kernel convolution
(eqsat/winograd_fused.py), above both so that neither imports the other."""

from __future__ import annotations

from eqsat.ops.winograd import CONV_EPILOGUES, EPILOGUES
from eqsat.winograd_fused import conv_cost
from eqsat.winograd_plan import input_cost, output_cost, planned_cost
from hwsim.costmodel import KernelCost
from hwsim.hardware import Hardware

WINOGRAD_OPS = frozenset(
    {
        "winograd_weight",
        "winograd_input",
        "winograd_output",
        "winograd_output_bias",
        "winograd_output_bias_relu",
        "winograd_output_bias_add_relu",
        "winograd_conv",
        "winograd_conv_bias",
        "winograd_conv_bias_relu",
        "winograd_conv_bias_add_relu",
    }
)


def winograd_cost(hw: Hardware, op_name: str, in_types, out, attrs, unrunnable: int) -> KernelCost:
    """The price of a Winograd op as the backend runs it. The weight transform runs at
    load time (prepared weights are free); of a run-time tensor it cannot run."""
    m = int(attrs["m"])
    if op_name == "winograd_weight":
        return planned_cost(unrunnable, 0, False)
    if op_name in CONV_EPILOGUES:  # the whole convolution in one kernel
        pad = tuple(attrs["padding"])
        cost = conv_cost(hw, in_types[0].shape, in_types[1].shape, m, pad, CONV_EPILOGUES[op_name])
    elif op_name == "winograd_input":
        cost = input_cost(hw, in_types[0].shape, m, tuple(attrs["padding"]))
    else:
        cost = output_cost(hw, in_types[0].shape, m, tuple(attrs["size"]), EPILOGUES[op_name])
    if not cost.feasible:
        return planned_cost(cost.cycles + unrunnable, cost.dram_bytes, False)
    return cost
