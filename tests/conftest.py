"""Shared fixtures. The repository root is put on sys.path so that `eqsat`, `frontend`
and `tests.strategies` import without installing the package."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EXAMPLES = sorted((ROOT / "examples").glob("*.model"))

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI replays the same examples every run (a red CI is then a real regression, not a
# new draw); local runs keep exploring. EQSAT_HYPOTHESIS_PROFILE picks either.
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile(
    os.environ.get("EQSAT_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)


@pytest.fixture
def root() -> Path:
    return ROOT
