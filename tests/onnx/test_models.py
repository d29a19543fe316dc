"""Real architectures exported by torch (tests/data/onnx, written by
`bench/zoo.py --export-tiny` at toy sizes, both exporters): they import, match ONNX
Runtime at the size they were exported at and at other sizes of their dynamic axes,
and compile and simulate (with translation validation) through the whole pipeline."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqsat.cli import main
from tests.onnx.helpers import MODEL_FILES, TOLERANCE, example_dims, import_onnx, worst_error

pytestmark = pytest.mark.filterwarnings("ignore")
IDS = [p.stem for p in MODEL_FILES]


def test_the_zoo_files_are_checked_in():
    families = {p.stem.rsplit("_", 1)[0] for p in MODEL_FILES}
    assert {
        "resnet18",
        "resnet50",
        "mobilenet_v2",
        "bert_base",
        "gpt2",
        "llama",
        "vit_b16",
    } <= families
    assert sum(p.stat().st_size for p in MODEL_FILES) < 2 << 20


@pytest.mark.parametrize("path", MODEL_FILES, ids=IDS)
def test_matches_onnxruntime_at_the_export_size(path):
    dims = example_dims(path)
    imported = import_onnx(path, dims, symbolic=False)
    assert worst_error(path, imported, dims) < TOLERANCE


@pytest.mark.parametrize("path", MODEL_FILES, ids=IDS)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.integers(1, 3), seq=st.integers(1, 24))
def test_matches_onnxruntime_at_other_sizes(path, batch, seq):
    """Dynamic batch and sequence axes bound at import (the path `eqsat run x.onnx
    --dim S=N` takes) to sizes the file was not exported at."""
    dims = {k: (batch if k == "B" else seq) for k in example_dims(path)}
    imported = import_onnx(path, dims, symbolic=False)
    assert worst_error(path, imported, dims) < TOLERANCE


SYMBOLIC = [
    p for p in MODEL_FILES if p.stem.endswith("_ts") or p.stem.startswith(("resnet", "mobilenet"))
]


@pytest.mark.parametrize("path", SYMBOLIC, ids=[p.stem for p in SYMBOLIC])
def test_symbolic_import_runs_at_several_sizes(path):
    """Imported once with its dynamic axes as symbolic dimensions, the model text runs
    at other sizes bound when it is checked."""
    imported = import_onnx(path)
    assert imported.dims and not imported.fixed, imported.notes
    for batch, seq in ((1, 5), (3, 13)):
        dims = {k: (batch if k == "B" else seq) for k in imported.dims}
        assert worst_error(path, imported, dims) < TOLERANCE


def test_a_dimension_the_text_cannot_express_is_fixed_with_a_note():
    """The dynamo exporter's LLaMA mask checks for packed sequences with `1 + S`
    (not a product): S is fixed to its default, and the import says so."""
    path = next(p for p in MODEL_FILES if p.stem == "llama_dynamo")
    imported = import_onnx(path)
    assert "S" in imported.fixed
    assert any("--dim S=N" in note and "not a product" in note for note in imported.notes)
    assert worst_error(path, imported, example_dims(path)) < TOLERANCE


SIMULATED = ["resnet18_ts", "mobilenet_v3_dynamo", "bert_base_ts", "llama_dynamo"]


@pytest.mark.parametrize("stem", SIMULATED)
def test_simulates_and_verifies(stem, tmp_path, capsys):
    path = next(p for p in MODEL_FILES if p.stem == stem)
    report = tmp_path / "sim.json"
    assert main(["simulate", str(path), "--verify", "-q", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "verified: the simulated program matches the original model" in out
