"""Mutation fuzzing of the example models: parse_model + check_model raise nothing but
ModelError, whatever the input. Models that survive a mutation still round-trip.

The seed is printed (see it with `pytest -s` or in the failure report); set
EQSAT_FUZZ_SEED to replay a run and EQSAT_FUZZ_COUNT to fuzz longer.
"""

from __future__ import annotations

import os
import random
import re
import time

import pytest

from eqsat.errors import SourceError, UserError
from frontend import check_model, parse_model, parse_model_file, print_model
from frontend.errors import ModelError
from tests.conftest import EXAMPLES

SEED = int(os.environ.get("EQSAT_FUZZ_SEED", random.SystemRandom().randrange(2**32)))
COUNT = int(os.environ.get("EQSAT_FUZZ_COUNT", "4000"))

TOKEN = re.compile(
    r"\s+|#[^\n]*|[A-Za-z_][A-Za-z0-9_.]*|[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|.", re.S
)
# Replacement tokens: keywords, ops, dtypes, odd numbers, punctuation.
VOCAB = [
    "model", "dim", "input", "param", "const", "output", "true", "false",
    "f32", "bf16", "i8", "i32", "f64", "relu", "matmul", "reshape", "slice", "concat",
    "conv2d", "softmax", "layernorm", "quantize", "input", "axis", "axes", "perm", "shape",
    "0", "1", "-1", "-7", "3.5", "1e-5", "1e999", "99999999999999999999", "9" * 400,
    "[", "]", "(", ")", "{", "}", ",", "=", ":", "*", "#", "\n", " ", "\t",
]  # fmt: skip
ODD_CHARS = ["\x00", "\r", "\x0b", "\x0c", "\u2028", "\u00e9", "\ufeff", "\U0001f600", "\\", '"']


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def mutate(rng: random.Random, toks: list[str]) -> str:
    toks = list(toks)
    for _ in range(rng.randint(1, 3)):
        if not toks:
            toks.append(rng.choice(VOCAB))
            continue
        i = rng.randrange(len(toks))
        kind = rng.randrange(6)
        if kind == 0:  # delete
            del toks[i]
        elif kind == 1:  # duplicate
            toks.insert(i, toks[i])
        elif kind == 2:  # swap two tokens
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:  # replace with a vocabulary token
            toks[i] = rng.choice(VOCAB)
        elif kind == 4:  # insert random bytes (as latin-1 characters) inside a token
            junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4))).decode("latin-1")
            k = rng.randint(0, len(toks[i]))
            toks[i] = toks[i][:k] + junk + toks[i][k:]
        else:  # insert odd unicode
            toks.insert(i, rng.choice(ODD_CHARS))
    return "".join(toks)


def _check_one(text: str) -> str:
    """parse + check; returns 'ok' or the error class name. Anything else propagates."""
    try:
        model = parse_model(text, "fuzz.model")
        graph = check_model(model)
    except ModelError as err:
        assert isinstance(err, SourceError) and isinstance(err, UserError)
        assert err.line >= 1 and err.col >= 1
        assert str(err).startswith(f"fuzz.model:{err.line}:{err.col}: error: ")
        return type(err).__name__
    # A surviving mutant still prints and re-parses to the same model and graph.
    again = parse_model(print_model(model))
    assert again == model
    assert check_model(again) == graph
    return "ok"


def test_mutated_examples_raise_only_model_errors():
    print(f"fuzz seed {SEED} (replay: EQSAT_FUZZ_SEED={SEED})")
    rng = random.Random(SEED)
    sources = [p.read_text() for p in EXAMPLES]
    toks = [tokens(s) for s in sources]
    assert all("".join(t) == s for t, s in zip(toks, sources, strict=True))
    outcomes: dict[str, int] = {}
    start = time.perf_counter()
    for n in range(COUNT):
        text = mutate(rng, rng.choice(toks))
        try:
            outcome = _check_one(text)
        except Exception as err:
            pytest.fail(
                f"mutation {n} (seed {SEED}) raised {type(err).__name__}: {err}\n--- input ---\n{text}"
            )
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"{COUNT} mutations in {time.perf_counter() - start:.1f}s: {outcomes}")
    # The mutations reach past the parser: several error kinds, and some mutants check.
    assert len(outcomes) >= 4, outcomes


def test_mutated_bytes_through_files(tmp_path):
    """Random bytes, not only characters: parse_model_file must decode or report."""
    rng = random.Random(SEED ^ 0x5EED)
    sources = [p.read_bytes() for p in EXAMPLES]
    path = tmp_path / "fuzz.model"
    for n in range(200):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(data) + 1)
            data[k:k] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
        path.write_bytes(bytes(data))
        try:
            check_model(parse_model_file(path))
        except ModelError:
            pass
        except Exception as err:  # pragma: no cover - the failure report
            pytest.fail(f"byte mutation {n} (seed {SEED}) raised {type(err).__name__}: {err}")
