"""`eqsat import --check` feeds ONNX Runtime the shapes the import settled on: a
dynamic dimension the import had to fix (GatherND on runtime data) is not in the
model's dims, and ONNX Runtime must still see the fixed size, not 1."""

from __future__ import annotations

import pytest

from eqsat.cli import main
from tests.conftest import ROOT

pytest.importorskip("onnxruntime", reason="the check compares with ONNX Runtime")


def test_check_with_a_dimension_fixed_by_the_import(tmp_path, capsys) -> None:
    source = ROOT / "tests" / "data" / "onnx" / "bert_base_dynamo.onnx"
    out = tmp_path / "bert.model"
    assert main(["import", str(source), "-o", str(out), "--check"]) == 0
    captured = capsys.readouterr()
    assert "is fixed to 16" in captured.out + captured.err
    assert "vs ONNX Runtime" in captured.out and out.exists()
