"""Random well-typed models (the shared strategy of tests/strategies.py): IREE runs
the emitted MLIR and matches the reference interpreter (f32 to float rounding, bf16
to its precision, integers exactly: IREE's integer arithmetic wraps like numpy's).

The bindings are also given as compile-time values (`consts`): only per-channel
requantization reads them (its multiplier tables), as the int8 flow provides them."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backend.mlir import emit_mlir
from backend.mlir.iree import run_iree
from eqsat.interpreter import evaluate_nodes, random_bindings
from tests.backend.helpers import assert_matches, bf16_magnitude, reference
from tests.mlir.helpers import parse_with_iree
from tests.strategies import graphs


def _pow_near_overflow(graph, bindings) -> bool:
    """A float pow whose result is beyond 1e36 (or inf): math.powf and numpy's power
    differ in the last ulps, which there decides between a finite value and inf."""
    values = evaluate_nodes(graph, bindings)
    return any(
        node.op == "pow"
        and node.type.dtype.is_float
        and values[i] is not None
        and bool(np.any(np.abs(values[i].astype(np.float64)) > 1e36))
        for i, node in graph
    )


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(graphs(max_ops=6), st.integers(0, 2**16))
def test_random_models_run_on_iree_like_the_reference(graph, seed):
    bindings = random_bindings(graph, seed)
    assume(not _pow_near_overflow(graph, bindings))
    module = emit_mlir(graph, consts=bindings)
    parse_with_iree(module.text)
    run = run_iree(module, bindings)
    assert_matches(graph, run.outputs, reference(graph, bindings), bf16_magnitude(graph, bindings))
