"""Wall-clock latency on this machine: a model as written and as eqsat optimized it,
run by IREE (compiled for this CPU), the reference interpreter or ONNX Runtime, timed
taking turns. `eqsat bench` and bench/iree_vs.py are thin over it."""

from eqsat.wallclock.runners import (
    Runner,
    iree_runner,
    ort_runner,
    reference_runner,
    relative_error,
)
from eqsat.wallclock.timing import Timing, interleaved

__all__ = [
    "Runner",
    "Timing",
    "interleaved",
    "iree_runner",
    "ort_runner",
    "reference_runner",
    "relative_error",
]
