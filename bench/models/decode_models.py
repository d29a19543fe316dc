"""LLaMA-style decoder layers as text models at any size, for bench/decode.py and
tests/decode: the causal prefill of a sequence and the decode step of one token over a
KV cache, with one set of params, so that the cache one writes the other reads.

The layer is examples/llama_block.model's (pre-RMSNorm, multi-head attention, residual
adds, SwiGLU feed-forward, no biases, no rotary embedding) made causal; the decode step
is examples/llama_decode.model (`decode_model(SMALL)` is that file's program). The
cache is [B, heads, L, head_dim] per layer for keys and for values; `mask` is added to
the scores of the L past positions (0 where valid, -1e9 on the padding of a bucket).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqsat.fold import fold_constants
from eqsat.ir.graph import Graph
from frontend import check_model
from frontend.parser import parse_model


@dataclass(frozen=True)
class DecoderShape:
    hidden: int
    heads: int
    ffn: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SHAPES = {
    "small": DecoderShape(512, 8, 1408),  # examples/llama_block.model
    "tinyllama": DecoderShape(2048, 32, 5632),  # TinyLlama-1.1B's layer, without GQA
    "llama7b": DecoderShape(4096, 32, 11008),  # LLaMA-7B's layer
}
MASKED = -1e9  # the score offset of a padded cache position: exp() of it is 0 in f32


def _params(s: DecoderShape) -> str:
    h, f = s.hidden, s.ffn
    return f"""\
  param attn_norm: f32[{h}]
  param wq: f32[{h}, {h}]
  param wk: f32[{h}, {h}]
  param wv: f32[{h}, {h}]
  param wo: f32[{h}, {h}]
  param ffn_norm: f32[{h}]
  param w_gate: f32[{h}, {f}]
  param w_up: f32[{h}, {f}]
  param w_down: f32[{f}, {h}]
  const scale: f32[] = {1.0 / float(np.sqrt(s.head_dim))!r}
"""


def _ffn() -> str:
    return """\
  h2 = rmsnorm(x1, ffn_norm, eps=1e-6)
  gate = matmul(h2, w_gate)
  ffn = matmul(mul(mul(gate, sigmoid(gate)), matmul(h2, w_up)), w_down)
  y = add(x1, ffn)
  output y, present_k, present_v
}
"""


def _heads(s: DecoderShape, rows: str) -> str:
    return f"shape=[B, {rows}, {s.heads}, {s.head_dim}]), perm=[0, 2, 1, 3])"


def prefill_model(s: DecoderShape, name: str = "llama_prefill") -> str:
    """The layer over S tokens with a causal mask; outputs y and the cache it fills."""
    h = s.hidden
    return f"""\
model {name} {{
  dim B = 1
  dim S = 128
  input x: f32[B, S, {h}]
{_params(s)}\
  const masked: f32[] = {MASKED!r}
  const visible: f32[] = 0.0

  h = rmsnorm(x, attn_norm, eps=1e-6)
  q = transpose(reshape(matmul(h, wq), {_heads(s, "S")}
  present_k = transpose(reshape(matmul(h, wk), {_heads(s, "S")}
  present_v = transpose(reshape(matmul(h, wv), {_heads(s, "S")}
  causal = where(greater(iota(shape=[S, S], axis=1), iota(shape=[S, S], axis=0)), masked, visible)
  scores = add(mul(matmul(q, transpose(present_k, perm=[0, 1, 3, 2])), scale), causal)
  ctx = reshape(transpose(matmul(softmax(scores, axis=-1), present_v), perm=[0, 2, 1, 3]), shape=[B, S, {h}])
  x1 = add(x, matmul(ctx, wo))
{_ffn()}"""


def decode_model(s: DecoderShape, name: str = "llama_decode") -> str:
    """One token over a cache of L: outputs y and the cache grown to L + 1."""
    h, nh, d = s.hidden, s.heads, s.head_dim
    return f"""\
model {name} {{
  dim B = 1
  dim L = 128
  input x: f32[B, 1, {h}]
  input past_k: f32[B, {nh}, L, {d}]
  input past_v: f32[B, {nh}, L, {d}]
  input mask: f32[B, 1, 1, L]
{_params(s)}\
  const self_mask: f32[B, 1, 1, 1] = 0.0

  h = rmsnorm(x, attn_norm, eps=1e-6)
  q = transpose(reshape(matmul(h, wq), {_heads(s, "1")}
  k = transpose(reshape(matmul(h, wk), {_heads(s, "1")}
  v = transpose(reshape(matmul(h, wv), {_heads(s, "1")}
  present_k = concat(past_k, k, axis=2)
  present_v = concat(past_v, v, axis=2)
  scores = add(mul(matmul(q, transpose(present_k, perm=[0, 1, 3, 2])), scale), concat(mask, self_mask, axis=3))
  ctx = reshape(transpose(matmul(softmax(scores, axis=-1), present_v), perm=[0, 2, 1, 3]), shape=[B, 1, {h}])
  x1 = add(x, matmul(ctx, wo))
{_ffn()}"""


def graph_of(text: str, dims: dict[str, int]) -> Graph:
    """The checked, constant-folded graph of model text with its dimensions bound."""
    return fold_constants(check_model(parse_model(text), dims))


def layer_weights(s: DecoderShape, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random weights of one layer, scaled by 1/sqrt(fan-in) so activations keep their
    size through the layer (as a trained model's roughly do)."""

    def w(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)

    h, f = s.hidden, s.ffn
    norms = {
        n: (1.0 + 0.1 * rng.standard_normal(h)).astype(np.float32)
        for n in ("attn_norm", "ffn_norm")
    }
    mats = {n: w(h, h) for n in ("wq", "wk", "wv", "wo")}
    return {**norms, **mats, "w_gate": w(h, f), "w_up": w(h, f), "w_down": w(f, h)}


def decode_feeds(cache_k: np.ndarray, cache_v: np.ndarray, bucket: int) -> dict[str, np.ndarray]:
    """past_k, past_v and mask of a decode step whose cache ([B, heads, L, d]) is padded
    with zeros to `bucket` positions, the padding masked out."""
    b, _, length, _ = cache_k.shape
    if bucket < length:
        raise ValueError(f"bucket {bucket} is shorter than the cache ({length})")
    pad = ((0, 0), (0, 0), (0, bucket - length), (0, 0))
    mask = np.zeros((b, 1, 1, bucket), np.float32)
    mask[..., length:] = MASKED
    return {"past_k": np.pad(cache_k, pad), "past_v": np.pad(cache_v, pad), "mask": mask}
