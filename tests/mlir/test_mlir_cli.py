"""`eqsat compile --emit mlir` then `eqsat run --backend iree` on the emitted file, fed
by name from an npz of `eqsat run --save-inputs`: the same outputs as the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eqsat.cli import main
from tests.mlir.helpers import normwise_error, parse_with_xdsl

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp.model"


def test_compile_emit_mlir_then_run_on_iree(tmp_path, capsys):
    mlir, saved = tmp_path / "mlp.mlir", tmp_path / "in.npz"
    want, got = tmp_path / "want.npz", tmp_path / "got.npz"
    assert main(["compile", str(EXAMPLE), "--no-optimize", "--emit", "mlir", "-o", str(mlir)]) == 0
    text = mlir.read_text()
    parse_with_xdsl(text)
    assert text.startswith("func.func @main(%x: tensor<8x784xf32>")
    assert (
        main(["run", str(EXAMPLE), "--seed", "3", "-o", str(want), "--save-inputs", str(saved)])
        == 0
    )
    capsys.readouterr()
    args = ["run", str(EXAMPLE), "--inputs", str(saved), "--backend", "iree", "--mlir", str(mlir)]
    assert main([*args, "--repeat", "2", "-o", str(got)]) == 0
    printed = capsys.readouterr().out
    assert "IREE (llvm-cpu, this host)" in printed and "per run (best of 2)" in printed
    a, b = np.load(want), np.load(got)
    assert normwise_error(b["probs"], a["probs"]) < 1e-5


def test_mlir_flag_without_iree_backend_is_a_usage_error(tmp_path, capsys):
    assert main(["run", str(EXAMPLE), "--mlir", str(tmp_path / "x.mlir")]) != 0
    assert "--backend iree" in capsys.readouterr().err


def test_mlir_iree_refuses_is_a_located_error(tmp_path, capsys):
    """A module IREE cannot compile: the file, line and column and IREE's reason,
    no traceback, exit 1."""
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @main(%x: tensor<8x784xf32>) -> tensor<8x10xf32> {\n"
        "  return %x : tensor<8x784xf32>\n}\n"
    )
    assert main(["run", str(EXAMPLE), "--backend", "iree", "--mlir", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: IREE could not compile the module: line 2, column 3:" in err
    assert "doesn't match function result type" in err and "Traceback" not in err
