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
# two-layer, 256-wide decoders with grouped-query attention (Mistral, Qwen2)
_SMALL_GQA = dict(
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=1000,
)
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
        lambda: tf.MistralModel(tf.MistralConfig(**_SMALL_GQA)),
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
        lambda: tf.Qwen2Model(tf.Qwen2Config(**_SMALL_GQA)),
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


# A second survey (README, "Nineteen more architectures"): encoders of encoder-decoder
# models, audio, segmentation and detection necks (Resize), transposed and dilated
# convolutions, at small sizes. Joined into MORE below.
def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class Enc(nn.Module):
    """encoder of an encoder-decoder model: last hidden state"""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m.get_encoder()(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state


class Audio(nn.Module):
    def __init__(self, m, key):
        super().__init__()
        self.m = m
        self.key = key

    def forward(self, x):
        return self.m(**{self.key: x}).last_hidden_state


def _audio(name, family, build: Callable[[], nn.Module], shape, key):
    x = torch.randn(*shape, generator=_gen(3))
    return lambda tiny: ZooModel(
        name, family, randomize(Audio(build(), key)), (x,), {0: {0: "B"}}, "torchscript"
    )


def _encdec(name, family, build: Callable[[], nn.Module], vocab):
    ids = torch.randint(0, vocab, (1, 32), generator=_gen(1))
    mask = torch.ones(1, 32, dtype=torch.long)
    return lambda tiny: ZooModel(
        name,
        family,
        randomize(Enc(build())),
        (ids, mask),
        {"input_ids": {0: "B", 1: "S"}, "attention_mask": {0: "B", 1: "S"}},
        "torchscript",
    )


class UNet(nn.Module):
    """A small UNet: conv blocks, max pools, skip concatenations; the decoder upsamples
    by nearest interpolation (a Resize) or by ConvTranspose2d(k=2, s=2)."""

    def __init__(self, deconv: bool = False):
        super().__init__()

        def c(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

        self.deconv = deconv
        self.d1, self.d2, self.b = c(3, 16), c(16, 32), c(32, 64)
        if deconv:
            self.t2, self.t1 = nn.ConvTranspose2d(64, 32, 2, 2), nn.ConvTranspose2d(32, 16, 2, 2)
        wide, mid = (32, 16) if deconv else (64, 32)
        self.u2, self.u1 = c(wide + 32, 32), c(mid + 16, 16)
        self.out = nn.Conv2d(16, 2, 1)

    def up(self, x, which: int):
        if self.deconv:
            return (self.t2 if which == 2 else self.t1)(x)
        return nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(nn.functional.max_pool2d(a, 2))
        m = self.b(nn.functional.max_pool2d(b, 2))
        u = self.u2(torch.cat([self.up(m, 2), b], 1))
        u = self.u1(torch.cat([self.up(u, 1), a], 1))
        return self.out(u)


class Mixer(nn.Module):
    """MLP-Mixer: patch embedding, token-mixing and channel-mixing MLPs"""

    def __init__(self, d=64, p=8, n=16, depth=2):
        super().__init__()
        self.embed = nn.Conv2d(3, d, p, p)
        self.blocks = nn.ModuleList(
            [
                nn.ModuleDict(
                    dict(
                        n1=nn.LayerNorm(d),
                        t=nn.Sequential(nn.Linear(n, 2 * n), nn.GELU(), nn.Linear(2 * n, n)),
                        n2=nn.LayerNorm(d),
                        c=nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
                    )
                )
                for _ in range(depth)
            ]
        )

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        for b in self.blocks:
            x = x + b["t"](b["n1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + b["c"](b["n2"](x))
        return x.mean(1)


class YoloTiny(nn.Module):
    """YOLO-ish: SiLU conv blocks, a CSP split/concat, SPPF max pools, upsample"""

    def __init__(self):
        super().__init__()

        def cv(i, o, k=3, s=1):
            return nn.Sequential(
                nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o), nn.SiLU()
            )

        self.stem, self.down = cv(3, 16, 3, 2), cv(16, 32, 3, 2)
        self.c1, self.c2, self.m = cv(32, 32, 1), cv(48, 32, 1), cv(16, 16)
        self.sppf, self.head = cv(32, 16, 1), cv(64 + 32, 32, 1)

    def forward(self, x):
        x = self.down(self.stem(x))
        y = self.c1(x)
        a, b = y.chunk(2, 1)
        y = self.c2(torch.cat([a, b, self.m(b)], 1))
        s = self.sppf(y)
        p1 = nn.functional.max_pool2d(s, 5, 1, 2)
        p2 = nn.functional.max_pool2d(p1, 5, 1, 2)
        p3 = nn.functional.max_pool2d(p2, 5, 1, 2)
        z = torch.cat([s, p1, p2, p3], 1)
        return self.head(
            torch.cat(
                [z, nn.functional.interpolate(nn.functional.max_pool2d(y, 2), scale_factor=2.0)], 1
            )
        )


SURVEY_TWO: dict[str, Callable[[bool], ZooModel]] = {
    "t5_small_enc": _encdec(
        "t5_small_enc",
        "encoder (relative bias, RMSNorm)",
        lambda: tf.T5Model(
            tf.T5Config(d_model=256, d_ff=512, num_layers=2, num_heads=4, vocab_size=1000)
        ),
        1000,
    ),
    "bart_enc": _encdec(
        "bart_enc",
        "encoder (BART)",
        lambda: tf.BartModel(
            tf.BartConfig(
                d_model=256,
                encoder_ffn_dim=512,
                decoder_ffn_dim=512,
                encoder_layers=2,
                decoder_layers=2,
                encoder_attention_heads=4,
                decoder_attention_heads=4,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "whisper_enc": _audio(
        "whisper_enc",
        "audio encoder (conv1d)",
        lambda: (
            tf.WhisperModel(
                tf.WhisperConfig(
                    d_model=128,
                    encoder_layers=2,
                    decoder_layers=1,
                    encoder_attention_heads=4,
                    decoder_attention_heads=4,
                    encoder_ffn_dim=256,
                    decoder_ffn_dim=256,
                    num_mel_bins=40,
                    max_source_positions=50,
                )
            ).encoder
        ),
        (1, 40, 100),
        "input_features",
    ),
    "wav2vec2": _audio(
        "wav2vec2",
        "audio (conv feature extractor, group norm)",
        lambda: tf.Wav2Vec2Model(
            tf.Wav2Vec2Config(
                hidden_size=128,
                num_hidden_layers=2,
                num_attention_heads=4,
                intermediate_size=256,
                conv_dim=(64, 64, 64),
                conv_stride=(5, 2, 2),
                conv_kernel=(10, 3, 3),
                num_conv_pos_embeddings=16,
                num_conv_pos_embedding_groups=4,
            )
        ),
        (1, 4000),
        "input_values",
    ),
    "clip_text": _small_text(
        "clip_text",
        "text encoder (causal, quick-gelu)",
        lambda: tf.CLIPTextModel(
            tf.CLIPTextConfig(
                hidden_size=128,
                intermediate_size=256,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
                max_position_embeddings=64,
            )
        ),
        1000,
    ),
    "deberta": _small_text(
        "deberta",
        "encoder (disentangled attention)",
        lambda: tf.DebertaV2Model(
            tf.DebertaV2Config(
                hidden_size=128,
                intermediate_size=256,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=1000,
            )
        ),
        1000,
    ),
    "unet": _small_vision("unet", "CNN (UNet: upsample, skip concat)", UNet, 64),
    "mixer": _small_vision("mixer", "MLP-Mixer (token mixing)", Mixer, 32),
    "yolo": _small_vision("yolo", "CNN (YOLO-ish: CSP, SPPF, upsample)", YoloTiny, 64),
    "mobilenet_v3_large": _small_vision(
        "mobilenet_v3_large", "CNN (hardswish SE)", lambda: torchvision.models.mobilenet_v3_large()
    ),
    "wide_resnet": _small_vision(
        "wide_resnet", "CNN (wide bottleneck)", lambda: torchvision.models.wide_resnet50_2(), 64
    ),
}


class DCGAN(nn.Module):
    """DCGAN generator: ConvTranspose2d(k=4, s=2, p=1) stacks with batch norm"""

    def __init__(self, z=32):
        super().__init__()

        def t(i, o, s, p):
            return [
                nn.ConvTranspose2d(i, o, 4, s, p, bias=False),
                nn.BatchNorm2d(o),
                nn.ReLU(),
            ]

        self.net = nn.Sequential(
            *t(z, 64, 1, 0),
            *t(64, 32, 2, 1),
            *t(32, 16, 2, 1),
            nn.ConvTranspose2d(16, 3, 4, 2, 1),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.net(x)


def _latent(name, family, build, z=32):
    x = torch.randn(1, z, 1, 1, generator=_gen(4))
    return lambda tiny: ZooModel(
        name, family, randomize(build()), (x,), {0: {0: "B"}}, "torchscript"
    )


SURVEY_TWO["unet_deconv"] = _small_vision(
    "unet_deconv", "CNN (UNet, ConvTranspose decoder)", lambda: UNet(deconv=True), 64
)
SURVEY_TWO["dcgan"] = _latent("dcgan", "generator (ConvTranspose k4 s2)", DCGAN)


class SegOut(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


class TCN(nn.Module):
    """dilated causal 1-D convolutions (WaveNet/TCN)"""

    def __init__(self, c=32):
        super().__init__()
        self.inp = nn.Conv1d(8, c, 1)
        self.layers = nn.ModuleList(
            [nn.Conv1d(c, c, 2, dilation=2**i, padding=2**i) for i in range(5)]
        )
        self.out = nn.Conv1d(c, 4, 1)

    def forward(self, x):
        h = self.inp(x)
        for l in self.layers:
            h = h + torch.tanh(l(h))[..., : h.shape[-1]]
        return self.out(h)


def _seq(name, family, build, shape):
    x = torch.randn(*shape, generator=_gen(5))
    return lambda tiny: ZooModel(
        name, family, randomize(build()), (x,), {0: {0: "B"}}, "torchscript"
    )


SURVEY_TWO["deeplab"] = _small_vision(
    "deeplab",
    "segmentation (atrous ASPP, bilinear resize)",
    lambda: SegOut(
        torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=5
        )
    ),
    96,
)
SURVEY_TWO["tcn"] = _seq("tcn", "TCN (dilated conv1d)", TCN, (1, 8, 64))

MORE.update(SURVEY_TWO)
