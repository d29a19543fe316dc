"""Benchmark: autoregressive generation with a KV cache on the simulated accelerator.

A LLaMA-style decoder of `--layers` layers (bench/models/decode_models.py; default the
TinyLlama-1.1B layer shape: hidden 2048, 32 heads, SwiGLU 5632, f32) runs a causal
prefill of `--prompt` tokens, then `--tokens` decode steps, each one token over the
cache the steps before it grew. Every layer of every step is simulated (hwsim), the
layer's program called once per layer with that layer's weights.

Buckets: a decode step over a cache of L tokens runs the program compiled for the
bucket of L (L rounded up to a multiple of `--bucket`), its cache padded with zeros
to the bucket and the padded positions masked (-1e9 added to their scores). Each
bucket is optimized and compiled once per preset, through eqsat.pipeline directly.
The next token is the greedy pick of a tied-embedding head on the last layer's output,
computed on the host (numpy, not simulated and not counted); its embedding is the next
step's input.

Per step: the cache length, the bucket, the simulated cycles of all layers, the
memory-bound roofline (eqsat.roofline's DRAM term of the unpadded step at the real
cache length: weights, cache read, outputs written, at the preset's DRAM bandwidth;
for the prefill, the model roofline: the busiest unit), the share of it reached, and the cycles per kernel kind (eqsat.fidelity.kernel_kind).
Then tokens/s at the preset's clock for the prefill and the decode steps. `--verify`
checks every step's output against the reference interpreter of the unpadded model.

    python bench/decode.py                                  # 128 + 64 tokens, both presets
    python bench/decode.py --presets datacenter --shape small --layers 4 --json out.json
    python bench/decode.py --onnx tests/data/onnx/decode/gpt2_decode.onnx --prompt 20 --verify

`--onnx FILE`: the decode steps of a transformers model exported as one decode step
with its cache (tests/data/onnx/decode/make_decode.py), imported per bucket with its
past length P bound, from a random cache (the export has no prefill), the padding
masked through its attention_mask input; `--verify` against ONNX Runtime.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend import compile_graph  # noqa: E402
from bench.models.decode_models import (  # noqa: E402
    SHAPES,
    DecoderShape,
    decode_feeds,
    decode_model,
    graph_of,
    layer_weights,
    prefill_model,
)
from eqsat.fidelity import kernel_kind  # noqa: E402
from eqsat.interpreter import evaluate  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.roofline import memory_bound_cycles, model_roofline  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402
from hwsim.hardware import Hardware  # noqa: E402


@dataclass
class Step:
    """One prefill or decode step over all layers."""

    phase: str  # prefill | decode
    cache: int  # tokens in the cache before the step (decode), 0 for the prefill
    bucket: int  # the cache length the program was compiled for
    tokens: int  # tokens the step processes
    cycles: int = 0
    roofline: int = 0  # decode: memory-bound (the unpadded step); prefill: the model roofline
    by_kind: dict[str, int] = field(default_factory=dict)
    max_error: float | None = None  # against the reference interpreter (--verify)

    @property
    def share(self) -> float:
        return self.roofline / self.cycles if self.cycles else 0.0


class Programs:
    """Optimized, compiled programs by (phase, length) for one preset, made on demand."""

    def __init__(self, shape: DecoderShape, hw: Hardware, rules) -> None:
        self.shape, self.hw, self.rules = shape, hw, rules
        self.cache: dict[tuple[str, int], object] = {}
        self.compile_seconds = 0.0

    def get(self, phase: str, length: int):
        key = (phase, length)
        if key not in self.cache:
            t0 = time.perf_counter()
            graph = self.graph(phase, length)
            optimized = optimize(graph, self.rules, self.hw).graph
            self.cache[key] = compile_graph(optimized, self.hw)
            self.compile_seconds += time.perf_counter() - t0
        return self.cache[key]

    def graph(self, phase: str, length: int):
        if phase == "prefill":
            return graph_of(prefill_model(self.shape), {"S": length})
        return graph_of(decode_model(self.shape), {"L": length})


def run_layer(compiled, hw: Hardware, feeds: dict, step: Step) -> dict[str, np.ndarray]:
    """Simulate one layer; add its cycles, by kernel kind, to `step`."""
    result = simulate(compiled.program, hw, compiled.feeds(feeds), check_races=False)
    spans = {k.name: k.cycles for k in result.report.kernels}
    kinds: dict[str, int] = defaultdict(int)
    for k in compiled.kernels:
        op = compiled.graph.nodes[k.node].op if k.node >= 0 else None
        kinds[kernel_kind(op) if op else "other"] += spans.get(k.name, 0)
    accounted = sum(kinds.values())
    if result.report.cycles > accounted:  # time outside any kernel span
        kinds["other"] += result.report.cycles - accounted
    for kind, cycles in kinds.items():
        step.by_kind[kind] = step.by_kind.get(kind, 0) + cycles
    step.cycles += result.report.cycles
    return compiled.results(result.outputs)


def _error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


def generate(args, shape: DecoderShape, preset: str, rules) -> dict:
    hw = load_hardware(preset)
    rng = np.random.default_rng(args.seed)
    weights = [layer_weights(shape, rng) for _ in range(args.layers)]
    embedding = rng.standard_normal((args.vocab, shape.hidden)).astype(np.float32)
    prompt = rng.integers(0, args.vocab, args.prompt)
    programs = Programs(shape, hw, rules)
    roofline_of: dict[tuple[str, int], int] = {}

    def roofline(phase: str, length: int) -> int:
        """A decode step's memory-bound roofline; the prefill's model roofline (the
        busiest unit: it reuses each weight for every token of the prompt)."""
        if (phase, length) not in roofline_of:
            r = model_roofline(programs.graph(phase, length), hw)
            bound = r.cycles if phase == "prefill" else memory_bound_cycles(r, hw)
            roofline_of[phase, length] = bound * args.layers
        return roofline_of[phase, length]

    # prefill: the prompt through every layer, filling each layer's cache
    step = Step("prefill", 0, args.prompt, args.prompt, roofline=roofline("prefill", args.prompt))
    compiled = programs.get("prefill", args.prompt)
    x = embedding[prompt][None]
    caches = []
    for w in weights:
        out = run_layer(compiled, hw, {"x": x, **w}, step)
        if args.verify:
            ref = evaluate(programs.graph("prefill", args.prompt), {"x": x, **w})["y"]
            step.max_error = max(step.max_error or 0.0, _error(out["y"], ref))
        caches.append((out["present_k"], out["present_v"]))
        x = out["y"]
    steps = [step]
    token = int(np.argmax(embedding @ x[0, -1]))
    for _ in range(args.tokens):
        length = caches[0][0].shape[2]
        bucket = math.ceil(length / args.bucket) * args.bucket
        step = Step("decode", length, bucket, 1, roofline=roofline("decode", length))
        compiled = programs.get("decode", bucket)
        x = embedding[token][None, None]
        for j, w in enumerate(weights):
            k, v = caches[j]
            out = run_layer(compiled, hw, {"x": x, **w, **decode_feeds(k, v, bucket)}, step)
            if args.verify:  # the unpadded step at the real cache length
                graph = programs.graph("decode", length)
                feeds = {"x": x, **w, **decode_feeds(k, v, length)}
                ref = evaluate(graph, feeds)["y"]
                step.max_error = max(step.max_error or 0.0, _error(out["y"], ref))
            new_k, new_v = out["present_k"][:, :, bucket:], out["present_v"][:, :, bucket:]
            caches[j] = (np.concatenate([k, new_k], 2), np.concatenate([v, new_v], 2))
            x = out["y"]
        token = int(np.argmax(embedding @ x[0, -1]))
        steps.append(step)
    return summary(preset, hw, steps, programs.compile_seconds)


class OnnxPrograms:
    """A decode step exported to ONNX (tests/data/onnx/decode/make_decode.py: inputs
    input_ids, position_ids, attention_mask [1, P1] and past_* [1, heads, P, d]),
    imported with P bound to a bucket, optimized and compiled once per bucket."""

    def __init__(self, path: Path, hw: Hardware, rules) -> None:
        import onnx

        self.path, self.hw, self.rules = path, hw, rules
        model = onnx.load(str(path))
        self.past = {
            i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim[1::2])
            for i in model.graph.input
            if i.name.startswith("past_")
        }
        self.cache: dict[int, tuple] = {}
        self.compile_seconds = 0.0

    def imported(self, length: int):
        """(imported model, its graph, its params) with the past length bound."""
        from eqsat.fold import fold_constants
        from frontend import check_model
        from frontend.onnx import import_onnx

        imported = import_onnx(self.path, {"P": length, "P1": length + 1}, symbolic=False)
        graph = fold_constants(check_model(imported.model, None, imported.arrays))
        params = {k: v for k, v in imported.arrays.items() if k in graph.bound_names()}
        return imported, graph, params

    def get(self, bucket: int):
        if bucket not in self.cache:
            t0 = time.perf_counter()
            imported, graph, params = self.imported(bucket)
            compiled = compile_graph(optimize(graph, self.rules, self.hw).graph, self.hw)
            self.cache[bucket] = (imported, compiled, params)
            self.compile_seconds += time.perf_counter() - t0
        return self.cache[bucket]


def generate_onnx(args, preset: str, rules) -> dict:
    """Decode steps of an exported decode step (no prefill: the export has none), from a
    random cache of `--prompt` tokens; random token ids (they do not change the work)."""
    hw = load_hardware(preset)
    rng = np.random.default_rng(args.seed)
    programs = OnnxPrograms(args.onnx, hw, rules)
    cache = {
        name: rng.standard_normal((1, heads, args.prompt, dim)).astype(np.float32)
        for name, (heads, dim) in programs.past.items()
    }
    steps = []
    for _ in range(args.tokens):
        length = next(iter(cache.values())).shape[2]
        bucket = math.ceil(length / args.bucket) * args.bucket
        _, graph, _ = programs.imported(length)
        memory = memory_bound_cycles(model_roofline(graph, hw), hw)
        step = Step("decode", length, bucket, 1, roofline=memory)
        imported, compiled, params = programs.get(bucket)
        feeds = {
            "input_ids": rng.integers(0, 100, (1, 1)),
            "position_ids": np.array([[length]]),
            "attention_mask": np.concatenate(
                [np.ones((1, length)), np.zeros((1, bucket - length)), np.ones((1, 1))], 1
            ).astype(np.int64),
        }
        pad = ((0, 0), (0, 0), (0, bucket - length), (0, 0))
        padded = {**feeds, **{n: np.pad(c, pad) for n, c in cache.items()}}
        out = imported.results(run_layer(compiled, hw, {**imported.feeds(padded), **params}, step))
        if args.verify:  # ONNX Runtime on the unpadded step
            from eqsat.verify.onnxruntime import normwise_error
            from tests.onnx.helpers import ort_run

            want = ort_run(
                args.onnx, {**feeds, "attention_mask": np.ones((1, length + 1), np.int64), **cache}
            )
            step.max_error = normwise_error(out["hidden"], want["hidden"])
        for name in cache:
            new = out[name.replace("past_", "present_")][:, :, bucket:]
            cache[name] = np.concatenate([cache[name], new], 2)
        steps.append(step)
    return summary(preset, hw, steps, programs.compile_seconds)


def summary(preset: str, hw: Hardware, steps: list[Step], compile_seconds: float) -> dict:
    hz = hw.clock_ghz * 1e9
    prefill = steps[0] if steps[0].phase == "prefill" else None
    decode = [s for s in steps if s.phase == "decode"]
    decode_cycles = sum(s.cycles for s in decode)
    shares = [s.share for s in decode]
    return {
        "preset": preset,
        "clock_ghz": hw.clock_ghz,
        "prefill_tokens_per_s": prefill.tokens * hz / prefill.cycles if prefill else None,
        "prefill_share": prefill.share if prefill else None,
        "decode_tokens_per_s": len(decode) * hz / decode_cycles if decode else 0.0,
        "decode_cycles_per_token": decode_cycles / len(decode) if decode else 0.0,
        "decode_share_mean": sum(shares) / len(shares) if shares else 0.0,
        "decode_share_min": min(shares, default=0.0),
        "buckets": sorted({s.bucket for s in decode}),
        "compile_seconds": compile_seconds,
        "steps": [{**asdict(s), "share": s.share} for s in steps],
    }


def print_preset(r: dict, kinds: list[str]) -> None:
    print(f"\n{r['preset']} ({r['clock_ghz']:g} GHz)")
    head = f"{'step':>7} {'cache':>5} {'bucket':>6} {'cycles':>11} {'roofline':>11} {'share':>6}"
    print(head + "".join(f" {k:>11}" for k in kinds) + "  max err")
    for i, s in enumerate(r["steps"]):
        name = "prefill" if s["phase"] == "prefill" else str(i)
        row = f"{name:>7} {s['cache']:>5} {s['bucket']:>6} {s['cycles']:>11,} {s['roofline']:>11,}"
        row += f" {s['share']:>6.1%}"
        row += "".join(f" {s['by_kind'].get(k, 0):>11,}" for k in kinds)
        err = s["max_error"]
        print(row + ("" if err is None else f"  {err:.1e}"))
    prefill = r["prefill_tokens_per_s"]
    print(
        (
            f"prefill {prefill:,.0f} tokens/s ({r['prefill_share']:.1%} of its roofline); "
            if prefill
            else ""
        )
        + f"decode {r['decode_tokens_per_s']:,.1f} tokens/s, "
        f"{r['decode_cycles_per_token']:,.0f} cycles/token, roofline share mean "
        f"{r['decode_share_mean']:.1%}, min {r['decode_share_min']:.1%}; buckets "
        f"{r['buckets']}, compiled in {r['compile_seconds']:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--presets", default="edge,datacenter")
    p.add_argument("--shape", choices=sorted(SHAPES), default="tinyllama")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--prompt", type=int, default=128, help="prefill tokens")
    p.add_argument("--tokens", type=int, default=64, help="decode steps")
    p.add_argument("--bucket", type=int, default=32, help="cache lengths per compiled program")
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verify", action="store_true", help="check every step against the reference")
    p.add_argument("--json", type=Path, help="write the figures as JSON")
    p.add_argument(
        "--onnx",
        type=Path,
        help="decode steps of this exported step instead (tests/data/onnx/decode)",
    )
    args = p.parse_args(argv)
    shape = SHAPES[args.shape]
    rules = compile_rule_paths(sorted(DEFAULT_RULES_DIR.glob("*.rules")))
    if args.onnx:
        print(
            f"{args.onnx.name}: {args.tokens} decode steps from a random cache of "
            f"{args.prompt} tokens, buckets of {args.bucket}"
        )
    else:
        print(
            f"{args.shape}: hidden {shape.hidden}, {shape.heads} heads, ffn {shape.ffn}, "
            f"{args.layers} layers; prefill {args.prompt} tokens, {args.tokens} decode steps, "
            f"buckets of {args.bucket}"
        )
    results = []
    for preset in args.presets.split(","):
        if args.onnx:
            r = generate_onnx(args, preset, rules)
        else:
            r = generate(args, shape, preset, rules)
        kinds = sorted({k for s in r["steps"] for k in s["by_kind"]})
        print_preset(r, kinds)
        results.append(r)
    if args.json:
        config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"config": config, "presets": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
