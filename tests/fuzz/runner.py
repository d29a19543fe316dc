"""One fuzz case: make a hostile file of a kind, run the command that reads it, and
classify what happened."""

from __future__ import annotations

import contextlib
import io
import random
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz import corpus, mutate

ROOT = corpus.ROOT

KINDS = ("model", "model-sim", "rules", "npz", "calibrate", "asm", "egraph", "onnx", "hardware")
MLP = str(corpus.MLP)


@dataclass
class Outcome:
    kind: str
    code: int | None  # exit code; None: an exception escaped the CLI
    stderr: str
    error: str = ""  # the escaped exception, with its traceback

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def problem(self) -> str:
        """'' for a success or a clean error; else what is wrong."""
        if self.code is None:
            return "traceback"
        if "Traceback (most recent call last)" in self.stderr:
            return "traceback printed"
        if self.code not in (0, 1, 2):
            return f"exit {self.code}"
        if self.code and not self.stderr.strip():
            return "error without a message"
        return ""


def make_case(kind: str, rng: random.Random, tmp: Path) -> list[str]:
    """Write the hostile file(s) of `kind` under `tmp`; the argv that reads them."""
    if kind == "model":
        path = tmp / "m.model"
        path.write_bytes(mutate.mutate_text(rng, rng.choice(corpus.models())))
        return ["check", str(path)]
    if kind == "model-sim":  # one edit of a small model, then the whole pipeline
        path = tmp / "m.model"
        seed = rng.choice([corpus.MLP, corpus.ROOT / "examples" / "attention.model"]).read_text()
        path.write_text(mutate.mutate_tokens(rng, seed, rounds=1))
        return ["simulate", str(path), "-q", "--time-limit", "5", "-o", str(tmp / "out.npz")]
    if kind == "rules":
        path = tmp / "r.rules"
        path.write_bytes(mutate.mutate_text(rng, rng.choice(corpus.rules())))
        return ["rules", "check", str(path)]
    if kind == "npz":
        path = tmp / "in.npz"
        path.write_bytes(mutate.mutate_npz(rng, corpus.mlp_inputs()))
        return ["run", MLP, "--inputs", str(path), "-o", str(tmp / "out.npz")]
    if kind == "calibrate":  # samples stacked on a leading axis, as --calibrate takes them
        path = tmp / "cal.npz"
        inputs = {k: v[None] for k, v in corpus.mlp_inputs().items() if k == "x"}
        path.write_bytes(mutate.mutate_npz(rng, inputs))
        argv = ["optimize", MLP, "--quantize", "int8", "--calibrate", str(path), "-q"]
        return [*argv, "--iter-limit", "2", "-o", str(tmp / "q.model")]
    if kind == "asm":
        path = tmp / "p.asm"
        path.write_bytes(mutate.mutate_text(rng, corpus.assembly()))
        return ["simulate", str(path), "-o", str(tmp / "out.npz")]
    if kind == "egraph":
        path = tmp / "e.json"
        path.write_bytes(mutate.mutate_json(rng, corpus.egraph_json()))
        return ["extract", str(path)]
    if kind == "onnx":
        path = tmp / "m.onnx"
        path.write_bytes(mutate.mutate_onnx(rng, rng.choice(corpus.onnx_models())))
        return ["import", str(path), "-o", str(tmp / "m.model")]
    if kind == "hardware":
        path = tmp / "hw.toml"
        path.write_bytes(mutate.mutate_text(rng, rng.choice(corpus.hardware())))
        return ["compile", MLP, "--no-optimize", "--hw", str(path), "-o", str(tmp / "p.asm")]
    raise ValueError(f"unknown fuzz kind {kind!r}")


def run_cli(kind: str, argv: list[str]) -> Outcome:
    """Run `eqsat ARGV` in this process, capturing its output."""
    from eqsat.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 2
    except Exception:
        return Outcome(kind, None, err.getvalue(), traceback.format_exc())
    return Outcome(kind, code, err.getvalue())


def run_case(kind: str, seed: int, tmp: Path) -> Outcome:
    rng = random.Random(f"{kind}:{seed}")
    argv = make_case(kind, rng, tmp)
    return run_cli(kind, argv)


def signature(outcome: Outcome) -> str:
    """Where a failure happened: the exception type and the innermost frame of this
    repository (messages and positions vary from case to case; these do not)."""
    text = outcome.error or outcome.stderr
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\w+)', text)
    ours = [f for f in frames if f[0].startswith(str(ROOT)) and "/tests/fuzz/" not in f[0]]
    last = text.strip().splitlines()[-1] if text.strip() else outcome.problem
    kind = last.split(":")[0][:80]
    if not ours:
        return last[:120]
    path, line, func = ours[-1]
    return f"{kind} @ {Path(path).relative_to(ROOT)}:{line} {func}"
