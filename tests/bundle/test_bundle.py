"""Bundles end to end on the simulator: a BERT layer compiled once for S in 1..512 with
4 buckets runs every S with the outputs of an exact-shape compile on the valid
positions, and the padding overhead is reported."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.bundle import (
    BundleError,
    DimRange,
    compile_bundle,
    load_bundle,
    run_bundle,
    save_bundle,
)

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SMALL = HERE / "bert_small.model"
BUCKETS = [64, 128, 256, 512]


@pytest.fixture(scope="session")
def small_bundle():
    return compile_bundle(SMALL, DimRange("S", 1, 512), BUCKETS, "edge")


def _close(got: dict, want: dict) -> None:
    for name, ref in want.items():
        assert got[name].shape == ref.shape
        scale = float(np.abs(ref).max())
        np.testing.assert_allclose(got[name], ref, rtol=0, atol=1e-5 * scale, err_msg=name)


def test_one_e_graph_gives_a_program_per_bucket(small_bundle):
    assert small_bundle.buckets == BUCKETS
    assert small_bundle.stats["optimized"] and small_bundle.stats["egraph_nodes"] > 0
    ops = {n.op for n in small_bundle.programs[512].graph.nodes}
    assert "attention_masked" in ops  # the masked softmax fused like any other
    est = [small_bundle.programs[b].est_cycles for b in BUCKETS]
    assert est == sorted(est) and len(set(est)) == 4


@settings(max_examples=6)
@given(n=st.integers(1, 512), seed=st.integers(0, 9))
def test_every_s_equals_an_exact_shape_compile_on_the_valid_positions(small_bundle, n, seed):
    run = run_bundle(small_bundle, {"S": n}, seed=seed, verify=True, exact=True)
    assert run.bucket == min(b for b in BUCKETS if b >= n)
    assert run.outputs["y"].shape == (1, n, 64)
    _close(run.outputs, run.exact_outputs)
    assert run.errors[1] < 1e-5
    assert 0 <= run.overhead_cycles < run.cycles
    assert (run.overhead_cycles == 0) == (n == run.bucket)


def test_the_dispatcher_refuses_what_fits_no_bucket(small_bundle):
    with pytest.raises(BundleError, match=re.escape("outside the bundle's range S=1..512")):
        run_bundle(small_bundle, {"S": 513})
    with pytest.raises(BundleError, match="varies only 'S'"):
        run_bundle(small_bundle, {"S": 3, "B": 2})
    with pytest.raises(BundleError, match="has shape"):
        run_bundle(small_bundle, {"S": 3}, {"x": np.zeros((1, 4, 64), np.float32)})


def test_a_bundle_file_gives_back_the_same_programs(small_bundle, tmp_path):
    path = tmp_path / "small.eqsb"
    size = save_bundle(small_bundle, path)
    assert size == path.stat().st_size
    loaded = load_bundle(path)
    assert loaded.buckets == BUCKETS and loaded.dim == small_bundle.dim
    x = np.random.default_rng(5).standard_normal((1, 70, 64)).astype(np.float32)
    a = run_bundle(small_bundle, {"S": 70}, {"x": x})
    b = run_bundle(loaded, {"S": 70}, {"x": x})
    assert a.bucket == b.bucket == 128 and a.cycles == b.cycles
    np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])
    damaged = tmp_path / "damaged.eqsb"
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(damaged, "w") as out:
        for name in z.namelist():
            data = z.read(name)
            if name == "manifest.json":
                info = json.loads(data)
                del info["buckets"][0]["masks"]
                data = json.dumps(info)
            out.writestr(name, data)
    with pytest.raises(BundleError, match="damaged bundle \\(KeyError: 'masks'\\)"):
        load_bundle(damaged)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(BundleError, match="not a bundle"):
        load_bundle(path)


def test_the_bert_layer_at_full_size_matches_an_exact_compile():
    bundle = compile_bundle(
        ROOT / "examples" / "bert_layer.model", DimRange("S", 1, 512), [384, 512]
    )
    run = run_bundle(bundle, {"S": 300}, verify=True, exact=True)
    assert run.bucket == 384
    _close(run.outputs, run.exact_outputs)
    assert run.errors[1] < 1e-5
    # padding 300 -> 384 costs cycles; the estimate and the measurement agree in sign
    assert run.overhead_cycles > 0 and run.measured_overhead_cycles > 0


def test_a_decode_step_by_buckets_of_its_cache_length():
    """examples/llama_decode.model: present_k = concat(past_k, k) along L, so padding
    sits between the cache and the new token; the outputs come back without it."""
    bundle = compile_bundle(
        ROOT / "examples" / "llama_decode.model", DimRange("L", 1, 32), [16, 32], optimize=False
    )
    run = run_bundle(bundle, {"L": 20}, verify=True)
    assert run.bucket == 32 and run.outputs["present_k"].shape == (1, 8, 21, 64)
    assert run.errors[1] < 1e-5
