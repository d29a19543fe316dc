"""The padding transformation, checked with the reference interpreter: the masked model
at a bucket size, fed zero-padded inputs and the masks for n, gives at the valid
positions what the model gives at n. Plus the refusals, with op and line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.bundle import ModelSource, PaddingError
from eqsat.bundle.build import padded_bucket
from eqsat.bundle.dispatch import cut_to, pad_to
from eqsat.bundle.masking import mask_values
from eqsat.interpreter import evaluate, random_bindings

REDUCTIONS = """
model reductions {
  dim S = 8
  input x: f32[2, S, 6]
  input t: f32[S, 3]
  param w: f32[6, 6]
  const hundred: f32[] = 100.0
  total = reduce_sum(exp(x), axes=[1])
  mean = reduce_mean(sigmoid(x), axes=[1], keepdims=true)
  peak = reduce_max(sub(x, hundred), axes=[0, 1])
  cross = reduce_mean(x, axes=[1, 2])
  cols = softmax(x, axis=1)
  e = exp(t)
  gram = matmul(transpose(e, perm=[1, 0]), e)
  pooled = matmul(softmax(matmul(x, w), axis=1), w)
  prefix = cumsum(x, axis=1)
  output total
  output mean
  output peak
  output cross
  output cols
  output gram
  output pooled
  output prefix
}
"""


def _source(text: str) -> ModelSource:
    return ModelSource(text, "<test>")


def _padded_run(source: ModelSource, size: int, n: int, seed: int, dim: str = "S"):
    exact = source.graph(dim, n)
    bind = random_bindings(exact, seed)
    want = evaluate(exact, bind)
    pm = padded_bucket(source, dim, size)
    feeds = {k: pad_to(v, pm.inputs.get(k, ()), size) for k, v in bind.items()}
    feeds.update({name: mask_values(role, size, n) for role, name in pm.masks.items()})
    got = evaluate(pm.graph, feeds)
    return {k: cut_to(v, pm.outputs[k], size, n) for k, v in got.items()}, want, pm


@settings(max_examples=25)
@given(size=st.integers(2, 12), data=st.data())
def test_masked_reductions_equal_the_model_at_n(size, data):
    n = data.draw(st.integers(1, size))
    got, want, _ = _padded_run(_source(REDUCTIONS), size, n, data.draw(st.integers(0, 99)))
    for name in want:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_masks_are_only_added_where_s_is_reduced_over():
    _, _, pm = _padded_run(_source(REDUCTIONS), 8, 5, 0)
    assert set(pm.masks) == {"keep", "bias", "stretch"}
    assert pm.inputs == {"x": (1,), "t": (0,)}
    assert pm.outputs["total"] == () and pm.outputs["cols"] == ((1, 0, 0),)
    ops = [n.op for n in pm.graph.nodes]
    # a where for the sum and mean of exp/sigmoid (not zero where padded), the max and
    # the gram matrix of exp(t); none for the mean of the zero-padded input x itself,
    # nor for softmax(...) @ w (probabilities are exactly 0 on padded keys)
    assert ops.count("where") == 4
    assert ops.count("softmax") == 2


BERT_LIKE = """
model enc {
  dim S = 16
  input x: f32[1, S, 8]
  param wq: f32[8, 8]
  param wk: f32[8, 8]
  param g: f32[8]
  param b: f32[8]
  q = reshape(matmul(x, wq), shape=[1, S, 2, 4])
  k = reshape(matmul(x, wk), shape=[1, S, 2, 4])
  probs = softmax(matmul(transpose(q, perm=[0, 2, 1, 3]), transpose(k, perm=[0, 2, 3, 1])), axis=-1)
  ctx = reshape(transpose(matmul(probs, transpose(k, perm=[0, 2, 1, 3])), perm=[0, 2, 1, 3]), shape=[1, S, 8])
  y = layernorm(add(ctx, x), g, b)
  output y
}
"""


def test_attention_needs_only_the_softmax_bias():
    got, want, pm = _padded_run(_source(BERT_LIKE), 16, 5, 1)
    assert pm.masks == {"bias": "pad_bias_S"}
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
    assert all(np.isfinite(v).all() for v in evaluate(pm.graph, _zero_feeds(pm)).values())


def _zero_feeds(pm):
    """Every input zero, as padding leaves whole rows: still finite everywhere."""
    feeds = {}
    for _, n in pm.graph.inputs + pm.graph.params:
        feeds[str(n.attr("name"))] = np.zeros(n.type.shape, n.type.dtype.np_dtype)
    feeds.update({name: mask_values(role, pm.size, 1) for role, name in pm.masks.items()})
    return feeds


REFUSED = {
    "merge": ("y = reshape(x, shape=[4, S])", "reshape", "merges S with another axis"),
    "concat": ("y = concat(x, x, axis=0)", "concat", "S is mixed with another extent"),
    "slice": ("y = slice(x, starts=[0], ends=[2], axes=[0])", "slice", "part of the S axis"),
    "reverse": ("y = cumsum(x, axis=0, reverse=true)", "cumsum", "reverse running sum"),
    "norm": (
        "y = layernorm(transpose(x, perm=[1, 0]), reduce_max(x, axes=[1]), reduce_max(x, axes=[1]))",
        "layernorm",
        "normalizes over S",
    ),
    "value": ("y = mul(x, n)", "const", "a constant computed from the value of S"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_padding_cannot_keep_exact_is_refused_with_op_and_line(case):
    stmt, op, words = REFUSED[case]
    text = (
        "model bad {\n  dim S = 8\n  input x: f32[S, 4]\n  const n: f32[] = S\n  "
        + stmt
        + "\n  output y\n}\n"
    )
    with pytest.raises(PaddingError) as err:
        padded_bucket(_source(text), "S", 8)
    msg = str(err.value)
    assert words in msg, msg
    assert err.value.op == op
    line, shown = (4, "const n: f32[] = S") if case == "value" else (5, stmt)
    assert msg.startswith(f"<test>:{line}:3: error: {op} (in '"), msg
    assert shown in msg  # the source line is shown


def test_a_param_whose_shape_holds_s_is_refused():
    text = "model p {\n  dim S = 4\n  input x: f32[S]\n  param pos: f32[S]\n  y = add(x, pos)\n  output y\n}\n"
    with pytest.raises(PaddingError, match="param whose shape holds S"):
        padded_bucket(_source(text), "S", 4)


def test_a_causal_mask_folded_to_a_constant_is_accepted():
    text = """
model causal {
  dim S = 6
  input x: f32[S, S]
  const neg: f32[] = -1e9
  future = greater(iota(shape=[S, S], axis=1), iota(shape=[S, S], axis=0))
  y = softmax(where(future, neg, x), axis=-1)
  output y
}
"""
    got, want, pm = _padded_run(_source(text), 6, 3, 2)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6, atol=1e-7)
    assert pm.inputs == {"x": (0, 1)}


DECODE = ModelSource.from_file(Path(__file__).parents[2] / "examples" / "llama_decode.model")


@settings(max_examples=8)
@given(size=st.integers(2, 40), data=st.data())
def test_a_kv_cache_grown_by_one_token_pads_in_the_middle(size, data):
    """concat(past_k, k) along L: the padding sits between the cache and the new token;
    the softmax bias and the cut outputs (present_k/v) skip it."""
    n = data.draw(st.integers(1, size))
    got, want, pm = _padded_run(DECODE, size, n, data.draw(st.integers(0, 99)), dim="L")
    assert pm.inputs == {"x": (), "past_k": (2,), "past_v": (2,), "mask": (3,)}
    assert pm.outputs["present_k"] == ((2, 0, 1),) and pm.outputs["y"] == ()
    assert set(pm.masks) == {"bias:0:1"}
    for name in want:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
