"""Run numpy's BLAS single-threaded while simulating.

The simulator multiplies many small tiles with Python work in between; a threaded
BLAS then pays a thread wake-up (milliseconds) on every call. OpenBLAS, which numpy's
wheels bundle, has a thread-local `openblas_set_num_threads_local`; if it cannot be
found (another BLAS), this is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Iterator
from pathlib import Path

import numpy as np


@functools.cache
def _setter() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("*openblas*")):
        try:
            fn = ctypes.CDLL(str(path)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Within the block, BLAS calls from this thread use one thread."""
    fn = _setter()
    if fn is None:
        yield
        return
    previous = fn(1)
    try:
        yield
    finally:
        fn(previous)
