"""Shared fixtures. The repository root is put on sys.path so that `eqsat`, `frontend`
and `tests.strategies` import without installing the package."""

import os
import sys
import tempfile
from pathlib import Path

# Under pytest-xdist every core runs a worker: one BLAS thread per worker, or the
# workers' BLAS threads outnumber the cores and spin (set before numpy is imported).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Models with `if`/`loop` regions (tests/control): the tests of static graphs skip them.
CONTROL_EXAMPLES = ("decode_loop", "early_exit")
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.model") if p.stem not in CONTROL_EXAMPLES)

# The compile cache of the tests' own runs: a fresh directory, never the user's.
os.environ["EQSAT_CACHE_DIR"] = tempfile.mkdtemp(prefix="eqsat-test-cache-")

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


@pytest.fixture(scope="session")
def dask_address():
    """The address of a 2-worker Dask LocalCluster shared by the tests of --scheduler
    (started once: about 3 s)."""
    distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    import logging

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()
