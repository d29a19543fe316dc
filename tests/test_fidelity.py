"""eqsat/fidelity.py: kernels are classed by what they run, and every node the backend
lowers to kernels is set against its own kernels' simulated cycles."""

from __future__ import annotations

import pytest

from eqsat.fidelity import KINDS, by_kind, kernel_kind, measure_program
from eqsat.loading import load_model
from eqsat.ops import REGISTRY
from hwsim import load_hardware


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        ("matmul", "matmul"),
        ("matmul_bias_gelu", "matmul"),
        ("conv2d_bias_add_relu", "conv"),
        ("qmatmul_bias_requant", "int8"),
        ("qconv2d", "int8"),
        ("quantize", "int8"),
        ("softmax", "normalize"),
        ("max_pool2d", "pooling"),
        ("add_relu", "elementwise"),
        ("reduce_sum", "reduce"),
        ("transpose", "other"),
    ],
)
def test_kernel_kinds(op, kind):
    assert kernel_kind(op) == kind


def test_every_op_has_a_kind():
    assert {kernel_kind(name) for name in REGISTRY} <= set(KINDS)


def test_each_lowered_node_is_set_against_its_kernels():
    loaded = load_model("examples/cnn.model")
    row = measure_program(loaded.graph, load_hardware("edge"), loaded.bindings(0))
    convs = [k for k in row.kernels if k.kind == "conv"]
    assert len(convs) == 3 and all(k.simulated > 0 and k.predicted > 0 for k in row.kernels)
    # each conv's prep kernel is counted with it: the three convs alone take most cycles
    assert sum(k.simulated for k in convs) > row.simulated / 2
    summary = {s.kind: s for s in by_kind(row.kernels)}
    assert summary["conv"].count == 3
    assert summary["conv"].worst in convs
