"""`--scheduler local[:N] | ADDRESS`: a Dask distributed client to optimize on."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from eqsat.flags import UsageError

CONNECT_TIMEOUT = "10s"


def parse_scheduler(spec: str) -> tuple[str, int | str]:
    """("local", workers) or ("address", "tcp://host:port")."""
    if spec == "local" or spec.startswith("local:"):
        count = spec.partition(":")[2]
        if not count:
            return "local", max(os.cpu_count() or 1, 1)
        if not count.isdigit() or int(count) < 1:
            raise UsageError(
                f"--scheduler {spec}: the number of local workers must be a positive "
                "integer, e.g. local:2"
            )
        return "local", int(count)
    if "://" not in spec and ":" not in spec:
        raise UsageError(
            f"--scheduler {spec}: expected local, local:N or a scheduler address such as "
            "tcp://10.0.0.5:8786"
        )
    return "address", spec if "://" in spec else f"tcp://{spec}"


@contextlib.contextmanager
def dask_client(spec: str | None) -> Iterator[Any]:
    """A dask.distributed Client for `spec` (None: yields None, work stays in this
    process); a LocalCluster it started is closed on exit."""
    if spec is None:
        yield None
        return
    kind, where = parse_scheduler(spec)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--scheduler needs dask.distributed, which is not installed: pip install 'eqsat[dask]'"
        ) from None
    if kind == "local":
        cluster = LocalCluster(
            n_workers=int(where),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        with cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(str(where), timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as err:
        raise UsageError(
            f"--scheduler {spec}: cannot reach a Dask scheduler there ({err}); start one "
            "with `dask scheduler` or use local:N"
        ) from None
    with client:
        yield client
