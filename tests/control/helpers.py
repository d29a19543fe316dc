"""Shared pieces of the control-flow tests."""

from __future__ import annotations

from functools import cache

from eqsat.control.load import LoadedControl, load_control
from tests.conftest import ROOT

EARLY_EXIT = ROOT / "examples" / "early_exit.model"
DECODE_LOOP = ROOT / "examples" / "decode_loop.model"
ONNX_DIR = ROOT / "tests" / "data" / "onnx" / "control"


@cache
def loaded(path) -> LoadedControl:
    return load_control(path)
