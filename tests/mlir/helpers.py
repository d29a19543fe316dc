"""Shared by the MLIR tests: parse with xDSL and with IREE's MLIR (in process), run
on IREE's CPU backend, compare with the reference interpreter."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

pytest.importorskip("iree.compiler", reason="IREE is not installed (the [iree] extra)")
pytest.importorskip("iree.runtime", reason="IREE's runtime is not installed (the [iree] extra)")
pytest.importorskip("xdsl", reason="xDSL is not installed (the [iree] extra)")


@cache
def _xdsl_context():
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_with_xdsl(text: str) -> None:
    """xDSL parses and verifies the module (raises otherwise)."""
    from xdsl.parser import Parser

    Parser(_xdsl_context(), text).parse_module().verify()


def parse_with_iree(text: str) -> None:
    """IREE's MLIR (what iree-opt reads) parses and verifies the module."""
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(text)
        assert module.operation.verify()


def normwise_error(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
