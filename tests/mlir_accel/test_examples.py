"""Every bundled example, float and --quantize int8, compiled and emitted as accel MLIR:
it verifies in xDSL against the IRDL definition and reads back to the very program
that was compiled; simulating the read-back program gives the same cycles and outputs.
iree-opt --irdl-file verifies the same text where iree-base-compiler is installed."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backend import compile_graph
from backend.mlir_accel import IRDL_PATH, emit_accel_mlir
from eqsat.cli import build_parser, main
from eqsat.commands.common import load_model_from_args
from eqsat.commands.compile import graph_for_target
from hwsim import simulate
from tests.conftest import EXAMPLES

pytest.importorskip("xdsl", reason="xdsl is not installed (the iree extra)")

from backend.mlir_accel.read import read_accel_mlir
from backend.mlir_accel.verify import AccelMlirError

# Smaller sequences and batches than the examples' own, and the datacenter preset (its
# larger tiles make 8x fewer instructions than edge): the op kinds are the same, the
# programs (and xDSL's parse time, about 1 ms an op) shorter.
SMALL = {"S": "16", "B": "1", "N": "1"}
MLP = next(p for p in EXAMPLES if p.stem == "mlp")


@functools.cache
def compiled_example(path: Path, quantize: bool, hw: str = "datacenter"):
    """(compiled program, function name, quantization) as `eqsat compile` makes them."""
    dims = [f"--dim={d}={n}" for d, n in SMALL.items() if f"dim {d} =" in path.read_text()]
    quant_flags = ["--quantize", "int8"] if quantize else []
    flags = ["compile", str(path), "-q", "--hw", hw, *dims, *quant_flags]
    args = build_parser().parse_args(flags)
    loaded = load_model_from_args(args)
    lowered, hw, result = graph_for_target(args, loaded.graph, params=loaded.params)
    quant = result.quant if result is not None else None
    compiled = compile_graph(lowered, hw, quant.all_params if quant else None)
    return compiled, lowered.name, quant


# int8 for every example but the two largest: their int8 kernels are the ones the
# smaller examples make (quantizing them dominates the time, about 8 s each).
CASES = [(p, False) for p in EXAMPLES] + [
    (p, True) for p in EXAMPLES if p.stem not in ("bert_layer", "llama_block")
]


@pytest.mark.parametrize(
    ("path", "quantize"),
    CASES,
    ids=[f"{p.stem}-{'int8' if q else 'f32'}" for p, q in CASES],
)
def test_example_verifies_and_reads_back_unchanged(path: Path, quantize: bool) -> None:
    compiled, name, _ = compiled_example(path, quantize)
    text = emit_accel_mlir(compiled.program, name)
    read_name, program = read_accel_mlir(text, path.name)
    assert read_name == name
    assert program == compiled.program


@pytest.mark.parametrize("quantize", [False, True], ids=["f32", "int8"])
def test_read_back_program_simulates_identically(quantize: bool) -> None:
    compiled, name, _ = compiled_example(MLP, quantize, "edge")
    text = emit_accel_mlir(compiled.program, name)
    assert ('"accel.requantize"' in text) == quantize
    _, program = read_accel_mlir(text)
    rng = np.random.default_rng(0)
    feeds = {
        b.name: rng.standard_normal(b.shape).astype(np.float32)
        if b.dtype in ("f32", "bf16")
        else rng.integers(-100, 100, b.shape).astype(np.int8 if b.dtype == "i8" else np.int32)
        for b in compiled.program.inputs()
    }
    want = simulate(compiled.program, compiled.hw, feeds)
    got = simulate(program, compiled.hw, feeds)
    assert got.report.cycles == want.report.cycles
    for buf, value in want.outputs.items():
        np.testing.assert_array_equal(got.outputs[buf], value)


def test_cli_writes_verified_accel_mlir(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mlp.mlir"
    mlp = str(MLP)
    assert main(["compile", mlp, "--no-optimize", "--emit", "mlir-accel", "-o", str(out)]) == 0
    assert f"wrote mlir-accel to {out}" in capsys.readouterr().out
    name, program = read_accel_mlir(out.read_text())
    assert name == "mlp" and any(b.role == "output" for b in program.buffers)
    assert main(["compile", mlp, "--no-optimize", "--emit", "mlir-accel"]) == 0
    assert capsys.readouterr().out == out.read_text()


def _iree_opt() -> str | None:
    return shutil.which("iree-opt") or shutil.which(
        "iree-opt", path=str(Path(sys.executable).parent)
    )


@pytest.mark.skipif(_iree_opt() is None, reason="iree-opt is not installed (iree-base-compiler)")
def test_iree_opt_verifies_it_against_the_irdl_file() -> None:
    compiled, name, _ = compiled_example(MLP, True, "edge")
    text = emit_accel_mlir(compiled.program, name)
    cmd = [_iree_opt(), f"--irdl-file={IRDL_PATH}", "-"]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # re-printed by MLIR (values renamed %arg0, %0, ...), it still reads back unchanged
    assert read_accel_mlir(done.stdout)[1] == compiled.program
    bad = text.replace('rounding = "even"', 'rounding = "up"', 1)
    assert bad != text
    done = subprocess.run(cmd, input=bad, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "does not satisfy the constraint" in done.stderr
    with pytest.raises(AccelMlirError, match='"up" satisfies none of'):
        read_accel_mlir(bad)
