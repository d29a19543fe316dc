"""Architectures beyond the zoo, at toy sizes with random weights: does each import from
both torch exporters, match ONNX Runtime at sizes other than the export's, and
simulate to the same numbers?

Run: python bench/families.py [NAME ...]   (the `[zoo]` extra)
Each model is exported twice (TorchScript-based and dynamo-based torch.onnx), then,
per exporter, imported at two (batch, sequence) sizes it was not all exported at and
compared with ONNX Runtime (reference interpreter and simulated program, `edge`).
Prints one line per model and exporter; exports are cached next to the zoo's.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import onnx
import torch
import torchvision
import transformers as tf
from zoo import cache_dir, ort_outputs
from zoo_models import LastHidden, Pixels, randomize

from backend import compile_graph
from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from eqsat.verify.onnxruntime import normwise_error, onnx_feeds
from frontend.torch_export import export_onnx
from hwsim import load_hardware, simulate

SIZES = ({"B": 2, "S": 12}, {"B": 3, "S": 7})
TOLERANCE = 1e-4


def _text(model):
    ids = torch.randint(0, 100, (2, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 7:] = 0
    dynamic = {"input_ids": {0: "B", 1: "S"}, "attention_mask": {0: "B", 1: "S"}}
    return randomize(LastHidden(model)), (ids, mask), dynamic


def _vision(model, size: int = 32):
    return randomize(model), (torch.randn(2, 3, size, size),), {0: {0: "B"}}


_LAYERS = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "vocab_size": 100,
}
_DECODER = {**_LAYERS, "num_key_value_heads": 2, "use_cache": False}

FAMILIES = {
    "distilbert": lambda: _text(
        tf.DistilBertModel(
            tf.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=100)
        )
    ),
    "roberta": lambda: _text(
        tf.RobertaModel(
            tf.RobertaConfig(**_LAYERS, max_position_embeddings=64), add_pooling_layer=False
        )
    ),
    "albert": lambda: _text(
        tf.AlbertModel(tf.AlbertConfig(embedding_size=16, **_LAYERS), add_pooling_layer=False)
    ),
    "deberta_v2": lambda: _text(
        tf.DebertaV2Model(tf.DebertaV2Config(**_LAYERS, max_position_embeddings=64))
    ),
    "mistral": lambda: _text(tf.MistralModel(tf.MistralConfig(**_DECODER))),
    "qwen2": lambda: _text(tf.Qwen2Model(tf.Qwen2Config(**_DECODER))),
    "gemma": lambda: _text(
        tf.GemmaModel(tf.GemmaConfig(**{**_DECODER, "num_key_value_heads": 1}, head_dim=8))
    ),
    "phi3": lambda: _text(tf.Phi3Model(tf.Phi3Config(**_DECODER, pad_token_id=0))),
    "opt": lambda: _text(
        tf.OPTModel(
            tf.OPTConfig(
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                ffn_dim=64,
                vocab_size=100,
                word_embed_proj_dim=32,
                max_position_embeddings=64,
                use_cache=False,
            )
        )
    ),
    "bloom": lambda: _text(
        tf.BloomModel(
            tf.BloomConfig(hidden_size=32, n_layer=2, n_head=4, vocab_size=100, use_cache=False)
        )
    ),
    "falcon": lambda: _text(
        tf.FalconModel(
            tf.FalconConfig(
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=100,
                use_cache=False,
            )
        )
    ),
    "bart_encoder": lambda: _text(
        tf.BartModel(
            tf.BartConfig(
                d_model=32,
                encoder_layers=2,
                decoder_layers=2,
                encoder_attention_heads=4,
                decoder_attention_heads=4,
                encoder_ffn_dim=64,
                decoder_ffn_dim=64,
                vocab_size=100,
                max_position_embeddings=64,
            )
        ).get_encoder()
    ),
    "convnext": lambda: _vision(
        torchvision.models.ConvNeXt(
            [
                torchvision.models.convnext.CNBlockConfig(16, 32, 1),
                torchvision.models.convnext.CNBlockConfig(32, None, 1),
            ],
            num_classes=10,
        )
    ),
    "efficientnet_b0": lambda: _vision(
        torchvision.models.efficientnet_b0(weights=None, num_classes=10)
    ),
    "regnet_y": lambda: _vision(torchvision.models.regnet_y_400mf(weights=None, num_classes=10)),
    "shufflenet_v2": lambda: _vision(
        torchvision.models.shufflenet_v2_x0_5(weights=None, num_classes=10)
    ),
    "densenet121": lambda: _vision(torchvision.models.densenet121(weights=None, num_classes=10)),
    "googlenet": lambda: _vision(
        torchvision.models.googlenet(
            weights=None, num_classes=10, aux_logits=False, init_weights=False
        ),
        64,
    ),
    "deit": lambda: (
        randomize(
            Pixels(
                tf.DeiTModel(
                    tf.DeiTConfig(**{**_LAYERS, "vocab_size": None}, image_size=32, patch_size=8),
                    add_pooling_layer=False,
                )
            )
        ),
        (torch.randn(2, 3, 32, 32),),
        {0: {0: "B"}},
    ),
}


def check(path: Path, dims: dict[str, int]) -> tuple[float, float]:
    """(run error, simulated error) against ONNX Runtime at `dims`."""
    loaded = load_model(path, dims)
    feeds = onnx_feeds(onnx.load(str(path), load_external_data=False), loaded.graph.dims)
    want = ort_outputs(path, feeds)
    bindings = {**loaded.bindings(0), **loaded.onnx.feeds(feeds)}
    got = loaded.onnx.results(evaluate(loaded.graph, bindings))
    hw = load_hardware("edge")
    compiled = compile_graph(loaded.graph, hw)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    simulated = loaded.onnx.results(compiled.results(result.outputs))
    run = max(normwise_error(got[k], want[k]) for k in want)
    sim = max(normwise_error(simulated[k], want[k]) for k in want)
    return run, sim


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"architectures to check (default: all of {', '.join(FAMILIES)})",
    )
    names = parser.parse_args().names or list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        parser.error(
            f"unknown architecture {', '.join(unknown)}; choose from {', '.join(FAMILIES)}"
        )
    folder = cache_dir() / "families"
    folder.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name in names:
        module, inputs, dynamic = FAMILIES[name]()
        if isinstance(inputs[0], torch.Tensor) and inputs[0].dtype.is_floating_point:
            sizes = [{"B": s["B"]} for s in SIZES]
        else:
            sizes = list(SIZES)
        for exporter in ("torchscript", "dynamo"):
            path = folder / f"{name}_{exporter}.onnx"
            t = time.perf_counter()
            try:
                if not path.exists():
                    export_onnx(module, inputs, path, dynamic, exporter)
            except Exception as err:  # the exporter's limit, not eqsat's
                print(
                    f"{name:16s} {exporter:11s} torch.onnx cannot export it ({type(err).__name__})"
                )
                continue
            try:
                errors = [check(path, dims) for dims in sizes]
            except Exception as err:
                failures += 1
                print(f"{name:16s} {exporter:11s} FAIL {type(err).__name__}: {str(err)[:200]}")
                continue
            worst_run = max(e[0] for e in errors)
            worst_sim = max(e[1] for e in errors)
            ok = worst_run < TOLERANCE and worst_sim < TOLERANCE
            failures += not ok
            print(
                f"{name:16s} {exporter:11s} {'ok  ' if ok else 'FAIL'} sizes {sizes}: run error "
                f"{worst_run:.1e}, simulated {worst_sim:.1e} ({time.perf_counter() - t:.1f} s)"
            )
    print(f"{len(names)} families, {failures} failures")


if __name__ == "__main__":
    main()
