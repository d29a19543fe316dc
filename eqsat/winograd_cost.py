"""The price of each Winograd op as the backend runs it: the three-kernel form's
transform kernels (eqsat/winograd_plan.py) and the one-kernel convolution
(eqsat/winograd_fused.py), above both so that neither imports the other."""

from __future__ import annotations

from eqsat.ops.winograd import CONV_EPILOGUES, EPILOGUES
from eqsat.spatial_plan import add_costs, nhwc_strides, view_copy_cost
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


def winograd_cost(
    hw: Hardware, op_name: str, in_types, out, attrs, unrunnable: int, x_channels_last=False
) -> KernelCost:
    """The price of a Winograd op as the backend runs it. The weight transform runs at
    load time (prepared weights are free); of a run-time tensor it cannot run. With
    `x_channels_last`, x is stored channels-last: the input transform's prep walks it
    strided, and the one-kernel convolution (which reads NCHW rows) copies it first."""
    m = int(attrs["m"])
    if op_name == "winograd_weight":
        return planned_cost(unrunnable, 0, False)
    if op_name in CONV_EPILOGUES:  # the whole convolution in one kernel
        pad = tuple(attrs["padding"])
        cost = conv_cost(hw, in_types[0].shape, in_types[1].shape, m, pad, CONV_EPILOGUES[op_name])
        if x_channels_last and cost.feasible:
            x = in_types[0]
            cost = add_costs([view_copy_cost(hw, x, nhwc_strides(x.shape)), cost])
    elif op_name == "winograd_input":
        cost = input_cost(hw, in_types[0].shape, m, tuple(attrs["padding"]), x_channels_last)
    else:
        cost = output_cost(hw, in_types[0].shape, m, tuple(attrs["size"]), EPILOGUES[op_name])
    if not cost.feasible:
        return planned_cost(cost.cycles + unrunnable, cost.dram_bytes, False)
    return cost
