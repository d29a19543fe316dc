"""Writes the decode-step ONNX files next to this script: a transformers GPT-2 and a
LLaMA-style model (grouped-query attention, rotary embeddings) at toy sizes (random
weights, fixed seed), each exported as one decode step with its KV cache: the new
token's id, its position, the attention mask over cache and token ([1, P1], P1 = P + 1)
and the cache of the tokens before it (`past_key_values`, past length a dynamic axis
P) in; the last hidden state and the grown cache (`present`) out. Position and mask
are inputs so that a program imported for a bucket of P serves shorter caches: zeros
in the padding, the mask 0 there, the position the real one. tests/decode/test_onnx_decode.py imports them and
compares with ONNX Runtime; the tests do not need torch.

Run with torch and transformers (the `[zoo]` extra, /work/zoovenv here):

    python tests/data/onnx/decode/make_decode.py
"""

from __future__ import annotations

import warnings
from pathlib import Path

import onnx
import torch
import transformers as tf
from transformers.cache_utils import DynamicCache

HERE = Path(__file__).resolve().parent
PAST = 5  # the past length exported at (a dynamic axis: any length imports)


class DecodeStep(torch.nn.Module):
    """One token over a cache given as flat tensors: (ids, k0, v0, k1, v1, ...) ->
    (hidden, present_k0, present_v0, ...)."""

    def __init__(self, model: torch.nn.Module, layers: int) -> None:
        super().__init__()
        self.model, self.layers = model, layers

    def forward(self, input_ids, position_ids, attention_mask, *past):
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(
            input_ids=input_ids,
            position_ids=position_ids,
            attention_mask=attention_mask,
            past_key_values=cache,
            use_cache=True,
        )
        present = out.past_key_values
        flat = []
        for layer in present.layers:
            flat += [layer.keys, layer.values]
        return (out.last_hidden_state, *flat)


def export(
    name: str, model: torch.nn.Module, layers: int, kv_heads: int, head_dim: int, vocab: int
):
    model.eval()
    step = DecodeStep(model, layers)
    ids = torch.randint(0, vocab, (1, 1))
    position = torch.tensor([[PAST]])
    mask = torch.ones(1, PAST + 1, dtype=torch.int64)
    past = [torch.randn(1, kv_heads, PAST, head_dim) for _ in range(2 * layers)]
    past_names = [f"past_{kv}{i}" for i in range(layers) for kv in "kv"]
    present_names = [f"present_{kv}{i}" for i in range(layers) for kv in "kv"]
    path = HERE / f"{name}.onnx"
    dynamic = {**{n: {2: "P"} for n in past_names}, "attention_mask": {1: "P1"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            step,
            (ids, position, mask, *past),
            str(path),
            input_names=["input_ids", "position_ids", "attention_mask", *past_names],
            output_names=["hidden", *present_names],
            dynamic_axes=dynamic,
            opset_version=17,
            dynamo=False,
        )
    m = onnx.load(str(path))
    entry = m.metadata_props.add()
    entry.key, entry.value = "eqsat.dim.P", str(PAST)
    onnx.save(m, str(path))
    print(f"{path}: {path.stat().st_size:,} bytes")


def main() -> None:
    torch.manual_seed(0)
    gpt2 = tf.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)
    export("gpt2_decode", tf.GPT2Model(gpt2), 2, 2, 16, 100)
    llama = tf.LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        num_hidden_layers=2,
        vocab_size=100,
        max_position_embeddings=64,
    )
    export("llama_decode", tf.LlamaModel(llama), 2, 2, 8, 100)


if __name__ == "__main__":
    main()
