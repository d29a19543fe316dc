"""A few hostile files of every kind through the CLI: success or a clean error, never
a traceback. EQSAT_FUZZ_EXAMPLES sets the cases per kind (default 12); bench/fuzz.py
runs thousands with hang and crash detection."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.runner import KINDS, run_case, signature

EXAMPLES = int(os.environ.get("EQSAT_FUZZ_EXAMPLES", "12"))

pytest.importorskip("onnx")


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_hostile_input_gives_a_clean_answer(kind: str, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_case(kind, seed, Path(tmp))
    assert outcome.ok, (
        f"{kind} seed {seed}: {outcome.problem}: {signature(outcome)}\n{outcome.error}"
    )
