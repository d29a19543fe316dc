"""Window kernels sum from +0, as the reference does: a depthwise convolution whose
products are all -0 (a zero or padded tap times a negative weight) and an average pool
of -0 inputs give +0, so a following 1/x gives +inf, not -inf. (The GEMM forms of a
convolution and max pooling never differed: they are checked here too.)"""

from __future__ import annotations

import numpy as np
import pytest

from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from tests.backend.helpers import reference, run_backend

F32 = DType.F32
X = (1, 4, 5, 5)


def _zeros_then_ones(sign: float) -> np.ndarray:
    """Rows 0-2 of every plane are (signed) zeros, rows 3-4 are 1.5."""
    x = np.full(X, sign * 0.0, np.float32)
    x[:, :, 3:] = 1.5
    return x


def _reciprocal_of(op: str, attrs: dict, w_shape=None):
    b = GraphBuilder("signed_zero")
    args = [b.leaf("input", "x", TensorType(F32, X))]
    if w_shape is not None:
        args.append(b.leaf("param", "w", TensorType(F32, w_shape)))
    node = b.add(op, args, attrs, "window")
    b.output("y", b.add("reciprocal", [node], {}, "inv"))
    return b.graph


CASES = [
    ("conv2d", {"groups": 4, "padding": [1, 1]}, (4, 1, 3, 3), 1.0),  # depthwise
    ("conv2d", {"groups": 4, "padding": [1, 1], "stride": [2, 2]}, (4, 1, 3, 3), 1.0),
    ("conv2d", {"groups": 4}, (8, 1, 3, 3), 1.0),  # depthwise, multiplier 2, no padding
    ("conv2d", {"padding": [1, 1]}, (8, 4, 3, 3), 1.0),  # a GEMM form
    ("conv2d", {"groups": 2, "padding": [1, 1]}, (4, 2, 3, 3), 1.0),  # one GEMM per group
    ("avg_pool2d", {"kernel": [3, 3], "padding": [1, 1, 1, 1]}, None, -1.0),
    ("avg_pool2d", {"kernel": [2, 2]}, None, -1.0),  # nchw layout, no prep
    ("max_pool2d", {"kernel": [3, 3], "padding": [1, 1, 1, 1]}, None, -1.0),
]


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
@pytest.mark.parametrize(("op", "attrs", "w_shape", "sign"), CASES)
def test_the_sign_of_a_zero_sum_is_the_references(op, attrs, w_shape, sign, hw):
    graph = _reciprocal_of(op, attrs, w_shape)
    bindings = {"x": _zeros_then_ones(sign)}
    if w_shape is not None:
        bindings["w"] = -np.linspace(0.5, 2.0, int(np.prod(w_shape)), dtype=np.float32).reshape(
            w_shape
        )
    got, _, _ = run_backend(graph, hw, bindings, races=False)
    want = np.asarray(reference(graph, bindings)["y"])
    got_y = np.asarray(got["y"])
    assert np.isinf(want).any()  # the case reaches a zero sum
    np.testing.assert_array_equal(np.signbit(got_y), np.signbit(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got_y), finite)
    np.testing.assert_allclose(got_y[finite], want[finite], rtol=1e-5)
