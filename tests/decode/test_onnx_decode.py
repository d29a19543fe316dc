"""Decode steps exported from transformers with their KV cache (tests/data/onnx/decode,
written by make_decode.py there: GPT-2, and LLaMA with grouped-query attention and
rotary embeddings; inputs the token, its position, the attention mask and the cache of
past length P): imported with P bound, they match ONNX Runtime at past lengths they
were not exported at, also with the cache zero-padded to a bucket and the padding
masked, and simulate as the reference computes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.cli import main
from eqsat.verify.onnxruntime import normwise_error
from frontend.onnx import import_onnx
from tests.conftest import ROOT
from tests.onnx.helpers import TOLERANCE, eqsat_run, ort_run, worst_error

pytestmark = pytest.mark.filterwarnings("ignore")
DECODE = ROOT / "tests" / "data" / "onnx" / "decode"
FILES = sorted(DECODE.glob("*.onnx"))
IDS = [p.stem for p in FILES]


def _dims(past: int) -> dict[str, int]:
    return {"P": past, "P1": past + 1}  # the cache's length and the attention mask's


def test_the_decode_exports_are_small_and_both_there():
    assert {p.stem for p in FILES} == {"gpt2_decode", "llama_decode"}
    assert all(p.stat().st_size < 200_000 for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=IDS)
@settings(max_examples=3)
@given(past=st.integers(1, 40))
def test_decode_step_matches_onnxruntime(path, past):
    imported = import_onnx(path, _dims(past), symbolic=False)
    assert worst_error(path, imported, _dims(past)) < TOLERANCE


def _feeds(model: onnx.ModelProto, past: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {
        "input_ids": rng.integers(0, 100, (1, 1)),
        "position_ids": np.array([[past]]),
        "attention_mask": np.ones((1, past + 1), np.int64),
    }
    for inp in model.graph.input:
        if inp.name.startswith("past_"):
            heads, dim = (d.dim_value for d in inp.type.tensor_type.shape.dim[1::2])
            feeds[inp.name] = rng.standard_normal((1, heads, past, dim)).astype(np.float32)
    return feeds


@pytest.mark.parametrize("path", FILES, ids=IDS)
@settings(max_examples=3)
@given(past=st.integers(1, 30), pad=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_padded_and_masked_decode_step_is_the_unpadded_one(path, past, pad, seed):
    """A bucket's program (P = past + pad) serves a shorter cache: zeros in the padding,
    the attention mask 0 there; the hidden state and the new cache row are ORT's."""
    model = onnx.load(str(path))
    feeds = _feeds(model, past, seed)
    want = ort_run(path, feeds)
    bucket = past + pad
    padded = dict(feeds)
    for name in feeds:
        if name.startswith("past_"):
            padded[name] = np.pad(feeds[name], ((0, 0), (0, 0), (0, pad), (0, 0)))
    padded["attention_mask"] = np.concatenate(
        [np.ones((1, past)), np.zeros((1, pad)), np.ones((1, 1))], 1
    ).astype(np.int64)
    imported = import_onnx(path, _dims(bucket), symbolic=False)
    got = eqsat_run(imported, padded)
    assert normwise_error(got["hidden"], want["hidden"]) < TOLERANCE
    for name in want:
        if name.startswith("present_"):
            np.testing.assert_array_equal(got[name][:, :, :past], want[name][:, :, :past])
            new = normwise_error(got[name][:, :, bucket], want[name][:, :, past])
            assert new < TOLERANCE


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_decode_step_simulates_as_the_model(path, capsys):
    argv = ["simulate", str(path), "--dim", "P=9", "--dim", "P1=10", "--hw", "datacenter"]
    assert main([*argv, "--verify", "-q"]) == 0
    assert "verified" in capsys.readouterr().out
