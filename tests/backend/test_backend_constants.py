"""Values the compiler must know or keep exactly: channel scales computed from consts,
and the sign of zero through a broadcast (the zero tile a broadcast is expanded with)."""

from __future__ import annotations

import numpy as np
import pytest

from frontend import check_model, parse_model
from tests.backend.helpers import assert_matches, reference, run_backend


def _model(body: str):
    return check_model(parse_model("model t {\n" + body + "\n}"))


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_channel_scales_computed_from_consts_are_known_at_compile_time(hw_name):
    # The scales are abs() of a const: not a leaf, yet fixed before the program runs, so
    # requantize_pc gets its per-channel multipliers as immediates.
    graph = _model(
        """
        input x: i32[4, 3]
        const c: f32[3] = [-0.5, 0.125, -2.0]
        s = abs(c)
        y = requantize_pc(x, s, scale=0.25)
        output y
        """
    )
    bindings = {"x": np.arange(-6, 6, dtype=np.int32).reshape(4, 3) * 37}
    got, _, _ = run_backend(graph, hw_name, bindings)
    want = reference(graph, bindings)
    np.testing.assert_array_equal(got["y"], want["y"])
    assert np.abs(want["y"]).max() > 0  # not a trivial all-zero result


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_negative_zero_survives_a_broadcast_expanded_on_chip(hw_name):
    # r - c with r broadcast along rows and c along columns: the machine cannot broadcast
    # both in one instruction, so r is first added to a zero tile. -0.0 - 0.0 is -0.0,
    # and its reciprocal -inf: a +0.0 zero tile would give +inf.
    graph = _model(
        """
        input r: f32[1, 4]
        input c: f32[3, 1]
        d = sub(r, c)
        y = reciprocal(d)
        output d, y
        """
    )
    bindings = {
        "r": np.array([[-0.0, 0.0, -1.0, 2.0]], dtype=np.float32),
        "c": np.array([[0.0], [0.0], [1.0]], dtype=np.float32),
    }
    got, _, _ = run_backend(graph, hw_name, bindings)
    want = reference(graph, bindings)
    assert_matches(graph, got, want)
    np.testing.assert_array_equal(np.signbit(got["d"]), np.signbit(want["d"]))
    assert np.isneginf(want["y"]).any()
