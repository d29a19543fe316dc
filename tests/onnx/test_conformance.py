"""The ONNX backend node tests (regenerated from the installed onnx package) for every
op the importer claims: import, run with the reference interpreter, compare with the
expected outputs at each case's tolerances. The cases that cannot pass are listed with
their reason (tests/onnx/conformance_expected.py) and must keep failing; every other
claimed case must pass. bench/onnx_conformance.py prints the counts per op."""

from __future__ import annotations

import pytest

from eqsat.verify.onnx_cases import claimed_cases, op_under_test, run_case
from tests.onnx.conformance_expected import expected_failure

CASES = list(claimed_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case):
    result = run_case(case)
    reason = expected_failure(case)
    if reason is None:
        assert result.passed, result.message
    else:
        assert not result.passed, f"passes now: remove it from the expected failures ({reason})"
        assert result.message, "a failing case must say why"


def test_the_claimed_ops_have_their_cases():
    ops = {op_under_test(c) for c in CASES if "(expanded)" not in op_under_test(c)}
    assert len(ops) >= 60, sorted(ops)
    assert len(CASES) >= 600
