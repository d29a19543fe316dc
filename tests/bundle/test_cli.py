"""`eqsat compile --dim S=LO..HI` writes a bundle; `eqsat simulate BUNDLE --dim S=N` runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eqsat.cli import main

SMALL = str(Path(__file__).parent / "bert_small.model")


def test_compile_then_simulate_a_bundle(tmp_path, capsys):
    out = tmp_path / "small.eqsb"
    code = main(["compile", SMALL, "--dim", "S=1..64", "--buckets", "32,64", "-o", str(out), "-q"])
    assert code == 0 and out.is_file()
    text = capsys.readouterr().out
    assert "bert_small for edge: S=1..64, 2 programs" in text
    assert "S=32 " in text and "S=64 " in text and f"to {out}" in text
    report = tmp_path / "r.json"
    outputs = tmp_path / "y.npz"
    argv = ["simulate", str(out), "--dim", "S=40", "--verify", "--report", str(report)]
    assert main([*argv, "-o", str(outputs)]) == 0
    text = capsys.readouterr().out
    assert "dispatch      S=40 -> bucket 64 (24 padded positions)" in text
    assert "vs reference  max abs error" in text
    d = json.loads(report.read_text())
    assert d["bucket"] == 64 and d["n"] == 40 and d["max_rel_error"] < 1e-5
    assert 0 < d["padding_overhead_cycles"] < d["cycles"]
    assert np.load(outputs)["y"].shape == (1, 40, 64)


def test_auto_buckets_from_a_length_distribution(tmp_path, capsys):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("10 50\n12 30\n60 2\n")
    out = tmp_path / "auto.eqsb"
    argv = ["compile", SMALL, "--dim", "S=1..64", "--buckets", "auto", "--lengths", str(lengths)]
    assert main([*argv, "--num-buckets", "2", "--no-optimize", "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "buckets chosen from 82 lengths (4 candidates" in text
    assert ": 12, 64; expected" in text


def test_bundle_flag_errors(tmp_path, capsys):
    assert main(["compile", SMALL, "--dim", "S=1..64", "-q"]) == 1
    assert "give -o OUT.eqsb" in capsys.readouterr().err
    argv = ["compile", SMALL, "--dim", "S=1..64", "--buckets", "32", "-o", str(tmp_path / "a.eqsb")]
    assert main(argv) == 1
    assert "add 64" in capsys.readouterr().err
    assert main(["compile", SMALL, "--dim", "S=1..64", "--buckets", "auto", "-o", "x.eqsb"]) == 1
    assert "--lengths FILE" in capsys.readouterr().err
    # a range is for compiling bundles only
    try:
        main(["simulate", SMALL, "--dim", "S=1..64"])
    except SystemExit as e:
        assert e.code == 2
    assert "expected NAME=POSITIVE_INT" in capsys.readouterr().err
