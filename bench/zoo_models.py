"""The model zoo: real architectures built from their configs with random weights.

Nothing is downloaded: torchvision and transformers build every model from a config
(`weights=None`, `BertModel(BertConfig())`). Every parameter is redrawn at random
(biases and norm scales too, so that nothing is a convenient zero or one) from a
fixed seed. `tiny` gives the same architecture at toy sizes: the ONNX files the test
suite checks in (tests/data/onnx/) are those.

Each entry: a module, example inputs, the dynamic axes of each input, and the torch
exporter that handles it (TorchScript-based or dynamo-based).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torchvision
import transformers as tf
from torch import nn


@dataclass
class ZooModel:
    name: str
    family: str
    module: nn.Module
    inputs: tuple
    dynamic: dict  # input (name or position) -> {axis: dimension name}
    exporter: str = "torchscript"
    notes: list[str] = field(default_factory=list)


class LastHidden(nn.Module):
    """A transformers model returning its last hidden state (one tensor)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            return self.model(input_ids).last_hidden_state
        return self.model(input_ids, attention_mask=attention_mask).last_hidden_state


class Pixels(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values).last_hidden_state


def randomize(module: nn.Module, seed: int = 0) -> nn.Module:
    """Every parameter and buffer of float type redrawn: weights ~ N(0, 1/fan_in),
    vectors ~ N(mean, 0.1) around their initial mean (norm scales stay near 1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in list(module.named_parameters()) + list(module.named_buffers()):
            if not p.is_floating_point() or "inv_freq" in name:
                continue
            if "running_var" in name:
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
            else:
                p.copy_(p.mean() + 0.1 * torch.randn(p.shape, generator=g))
    return module.eval()


def _ids(batch: int, seq: int, vocab: int) -> tuple:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    if batch > 1:
        mask[-1, seq // 2 :] = 0  # a padded sequence
    return ids, mask


def _tiny_resnet(bottleneck: bool) -> nn.Module:
    """A ResNet at toy widths, from torchvision's own blocks."""
    from torchvision.models.resnet import BasicBlock, Bottleneck

    block = Bottleneck if bottleneck else BasicBlock
    widths, inplanes = (8, 16), 8
    layers: list[nn.Module] = [
        nn.Conv2d(3, inplanes, 7, 2, 3, bias=False),
        nn.BatchNorm2d(inplanes),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    for k, planes in enumerate(widths):
        stride = 1 if k == 0 else 2
        out = planes * block.expansion
        down = None
        if stride != 1 or inplanes != out:
            down = nn.Sequential(
                nn.Conv2d(inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out)
            )
        layers.append(block(inplanes, planes, stride, down))
        inplanes = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, 10)]
    return nn.Sequential(*layers)


def _vision(name, family, module, size, batch, exporter="torchscript") -> ZooModel:
    x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(2))
    return ZooModel(name, family, randomize(module), (x,), {0: {0: "B"}}, exporter)


def _text(name, family, model, vocab, batch, seq, mask=True, exporter="torchscript") -> ZooModel:
    ids, attention = _ids(batch, seq, vocab)
    inputs = (ids, attention) if mask else (ids,)
    dynamic = {"input_ids": {0: "B", 1: "S"}}
    if mask:
        dynamic["attention_mask"] = {0: "B", 1: "S"}
    return ZooModel(name, family, randomize(LastHidden(model)), inputs, dynamic, exporter)


def resnet18(tiny: bool) -> ZooModel:
    m = _tiny_resnet(False) if tiny else torchvision.models.resnet18(weights=None)
    return _vision("resnet18", "CNN", m, 32 if tiny else 224, 2 if tiny else 1)


def resnet50(tiny: bool) -> ZooModel:
    m = _tiny_resnet(True) if tiny else torchvision.models.resnet50(weights=None)
    return _vision("resnet50", "CNN", m, 32 if tiny else 224, 2 if tiny else 1)


def mobilenet_v2(tiny: bool) -> ZooModel:
    if tiny:  # three inverted-residual stages at half width
        stages = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2]]
        m = torchvision.models.MobileNetV2(
            num_classes=10, width_mult=0.5, inverted_residual_setting=stages
        )
    else:
        m = torchvision.models.mobilenet_v2(weights=None)
    return _vision("mobilenet_v2", "CNN (depthwise)", m, 32 if tiny else 224, 2 if tiny else 1)


def mobilenet_v3(tiny: bool) -> ZooModel:
    m = torchvision.models.mobilenet_v3_small(
        weights=None, width_mult=0.1 if tiny else 1.0, num_classes=10 if tiny else 1000
    )
    return _vision("mobilenet_v3", "CNN (SE, hard-swish)", m, 32 if tiny else 224, 2 if tiny else 1)


def bert(tiny: bool) -> ZooModel:
    cfg = (
        tf.BertConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            vocab_size=100,
            max_position_embeddings=64,
        )
        if tiny
        else tf.BertConfig()
    )
    return _text(
        "bert_base",
        "encoder",
        tf.BertModel(cfg, add_pooling_layer=False),
        cfg.vocab_size,
        2 if tiny else 1,
        16 if tiny else 128,
    )


def gpt2(tiny: bool) -> ZooModel:
    cfg = (
        tf.GPT2Config(
            n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64, use_cache=False
        )
        if tiny
        else tf.GPT2Config(use_cache=False)
    )
    return _text(
        "gpt2", "decoder", tf.GPT2Model(cfg), cfg.vocab_size, 2 if tiny else 1, 16 if tiny else 128
    )


def llama(tiny: bool) -> ZooModel:
    """LLaMA-7B layer shapes (hidden 4096, FFN 11008, 32 heads), two layers; the tiny
    one has grouped-query attention (4 heads, 2 key/value heads)."""
    cfg = (
        tf.LlamaConfig(
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_hidden_layers=2,
            vocab_size=100,
            use_cache=False,
        )
        if tiny
        else tf.LlamaConfig(
            hidden_size=4096,
            intermediate_size=11008,
            num_attention_heads=32,
            num_key_value_heads=32,
            num_hidden_layers=2,
            vocab_size=32000,
            use_cache=False,
        )
    )
    return _text(
        "llama",
        "decoder (RMSNorm, rotary, SwiGLU)",
        tf.LlamaModel(cfg),
        cfg.vocab_size,
        2 if tiny else 1,
        16 if tiny else 128,
        mask=False,
        exporter="dynamo",
    )


def vit(tiny: bool) -> ZooModel:
    cfg = (
        tf.ViTConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            image_size=32,
            patch_size=8,
        )
        if tiny
        else tf.ViTConfig()
    )
    m = Pixels(tf.ViTModel(cfg, add_pooling_layer=False))
    x = torch.randn(
        2 if tiny else 1,
        3,
        cfg.image_size,
        cfg.image_size,
        generator=torch.Generator().manual_seed(2),
    )
    return ZooModel("vit_b16", "vision transformer", randomize(m), (x,), {0: {0: "B"}})


def t5_encoder(tiny: bool) -> ZooModel:
    cfg = (
        tf.T5Config(d_model=32, d_ff=64, d_kv=16, num_heads=2, num_layers=2, vocab_size=100)
        if tiny
        else tf.T5Config.from_dict({})
    )
    return _text(
        "t5_encoder",
        "encoder (relative positions)",
        tf.T5EncoderModel(cfg),
        cfg.vocab_size,
        2 if tiny else 1,
        16 if tiny else 128,
        mask=False,
    )


# The zoo the issue names, then extra families for the tiny test files.
ZOO: dict[str, Callable[[bool], ZooModel]] = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "bert_base": bert,
    "gpt2": gpt2,
    "llama": llama,
    "vit_b16": vit,
}
EXTRA: dict[str, Callable[[bool], ZooModel]] = {
    "mobilenet_v3": mobilenet_v3,
    "t5_encoder": t5_encoder,
}


# Architectures beyond the zoo, at small sizes (96 x 96 images, 2-layer 256-wide text
# models, 32 tokens): how a model eqsat was not tuned on comes through import, the
# interpreter against ONNX Runtime, optimize, simulate --verify and the cost model
# (`python bench/zoo.py --models convnext_tiny,...`).
def _small_vision(name: str, family: str, build: Callable[[], nn.Module], size: int = 96):
    return lambda tiny: _vision(name, family, build(), size, 1)


def _small_text(name: str, family: str, build: Callable[[], nn.Module], vocab: int):
    return lambda tiny: _text(name, family, build(), vocab, 1, 32)


def _small_pixels(name: str, family: str, build: Callable[[], nn.Module], size: int = 64):
    """A transformers vision model at `size` x `size`, returning its last hidden state."""
    return lambda tiny: _vision(name, family, Pixels(build()), size, 1)


_tv = torchvision.models
MORE: dict[str, Callable[[bool], ZooModel]] = {
    "convnext_tiny": _small_vision(
        "convnext_tiny", "CNN (7x7 depthwise, channels-last MLP)", lambda: _tv.convnext_tiny()
    ),
    "efficientnet_b0": _small_vision(
        "efficientnet_b0", "CNN (MBConv, SE, SiLU)", lambda: _tv.efficientnet_b0()
    ),
    "densenet121": _small_vision("densenet121", "CNN (dense concat)", lambda: _tv.densenet121()),
    "shufflenet_v2": _small_vision(
        "shufflenet_v2", "CNN (channel shuffle)", lambda: _tv.shufflenet_v2_x1_0()
    ),
    "regnet_y": _small_vision("regnet_y", "CNN (grouped, SE)", lambda: _tv.regnet_y_400mf()),
    "googlenet": _small_vision(
        "googlenet",
        "CNN (inception)",
        lambda: _tv.googlenet(aux_logits=False, init_weights=False),
    ),
    "swin_t": _small_vision("swin_t", "windowed attention", lambda: _tv.swin_t(), 64),
    "distilbert": _small_text(
        "distilbert",
        "encoder",
        lambda: tf.DistilBertModel(
            tf.DistilBertConfig(dim=256, hidden_dim=1024, n_layers=2, n_heads=4)
        ),
        30522,
    ),
    "albert": _small_text(
        "albert",
        "encoder (shared layers)",
        lambda: tf.AlbertModel(
            tf.AlbertConfig(
                hidden_size=256,
                intermediate_size=1024,
                num_hidden_layers=2,
                num_attention_heads=4,
                embedding_size=128,
            )
        ),
        30000,
    ),
    "mistral": _small_text(
        "mistral",
        "decoder (GQA, sliding window)",
        lambda: tf.MistralModel(
            tf.MistralConfig(
                hidden_size=256,
                intermediate_size=512,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "bloom": _small_text(
        "bloom",
        "decoder (ALiBi)",
        lambda: tf.BloomModel(
            tf.BloomConfig(hidden_size=256, n_layer=2, n_head=4, vocab_size=1000)
        ),
        1000,
    ),
    # surveyed 2026-11-29 (README, "Nineteen more architectures")
    "squeezenet": _small_vision("squeezenet", "CNN (fire, concat)", lambda: _tv.squeezenet1_1()),
    "mnasnet": _small_vision("mnasnet", "CNN (NAS, depthwise)", lambda: _tv.mnasnet0_5()),
    "resnext": _small_vision("resnext", "CNN (grouped 32x4d)", lambda: _tv.resnext50_32x4d()),
    "mobilenet_v3_small": _small_vision(
        "mobilenet_v3_small", "CNN (hardswish SE)", lambda: _tv.mobilenet_v3_small()
    ),
    "regnet_x": _small_vision("regnet_x", "CNN (grouped)", lambda: _tv.regnet_x_400mf()),
    "efficientnet_v2": _small_vision(
        "efficientnet_v2", "CNN (fused MBConv)", lambda: _tv.efficientnet_v2_s()
    ),
    "inception_v3": _small_vision(
        "inception_v3",
        "CNN (inception v3)",
        lambda: _tv.inception_v3(aux_logits=False, init_weights=False),
        96,
    ),
    "roberta": _small_text(
        "roberta",
        "encoder",
        lambda: tf.RobertaModel(
            tf.RobertaConfig(
                hidden_size=256,
                intermediate_size=1024,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "electra": _small_text(
        "electra",
        "encoder",
        lambda: tf.ElectraModel(
            tf.ElectraConfig(
                hidden_size=256,
                embedding_size=128,
                intermediate_size=1024,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "gpt_neo": _small_text(
        "gpt_neo",
        "decoder (local attention)",
        lambda: tf.GPTNeoModel(
            tf.GPTNeoConfig(
                hidden_size=256,
                num_layers=2,
                num_heads=4,
                attention_types=[[["global", "local"], 1]],
                vocab_size=1000,
                window_size=16,
            )
        ),
        1000,
    ),
    "opt": _small_text(
        "opt",
        "decoder (OPT)",
        lambda: tf.OPTModel(
            tf.OPTConfig(
                hidden_size=256,
                ffn_dim=1024,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
                word_embed_proj_dim=256,
            )
        ),
        1000,
    ),
    "phi": _small_text(
        "phi",
        "decoder (parallel attn/ffn, partial rotary)",
        lambda: tf.PhiModel(
            tf.PhiConfig(
                hidden_size=256,
                intermediate_size=1024,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "qwen2": _small_text(
        "qwen2",
        "decoder (GQA, qkv bias)",
        lambda: tf.Qwen2Model(
            tf.Qwen2Config(
                hidden_size=256,
                intermediate_size=512,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "gemma": _small_text(
        "gemma",
        "decoder (GeGLU, MQA)",
        lambda: tf.GemmaModel(
            tf.GemmaConfig(
                hidden_size=256,
                intermediate_size=512,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=1,
                head_dim=64,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "gpt_j": _small_text(
        "gpt_j",
        "decoder (rotary, parallel)",
        lambda: tf.GPTJModel(
            tf.GPTJConfig(n_embd=256, n_layer=2, n_head=4, rotary_dim=32, vocab_size=1000)
        ),
        1000,
    ),
    "deit": _small_pixels(
        "deit",
        "vision transformer (DeiT)",
        lambda: tf.DeiTModel(
            tf.DeiTConfig(
                hidden_size=192,
                intermediate_size=768,
                num_hidden_layers=2,
                num_attention_heads=3,
                image_size=64,
                patch_size=16,
            )
        ),
    ),
    "segformer": _small_pixels(
        "segformer",
        "vision transformer (Segformer)",
        lambda: tf.SegformerModel(
            tf.SegformerConfig(
                num_encoder_blocks=2,
                depths=[1, 1],
                sr_ratios=[4, 2],
                hidden_sizes=[32, 64],
                num_attention_heads=[1, 2],
                patch_sizes=[7, 3],
                strides=[4, 2],
                mlp_ratios=[4, 4],
            )
        ),
    ),
    "mobilevit": _small_pixels(
        "mobilevit",
        "hybrid CNN/transformer",
        lambda: tf.MobileViTModel(tf.MobileViTConfig(image_size=64)),
    ),
    "convnext_v2": _small_pixels(
        "convnext_v2",
        "CNN (GRN)",
        lambda: tf.ConvNextV2Model(
            tf.ConvNextV2Config(depths=[1, 1, 1, 1], hidden_sizes=[32, 64, 128, 256])
        ),
    ),
}
