"""Symbolic dimensions as dynamic dims (`--emit mlir --dynamic S`): one emitted
function, compiled once by IREE, computes what the interpreter computes on the model
bound at every value of the dimension; what cannot be one function is refused with
the reason."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.mlir import emit_mlir
from backend.mlir.core import MlirEmitError
from backend.mlir.dynamic import Sym, symbolic_shapes
from backend.mlir.iree import run_iree
from eqsat.cli import main
from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from tests.mlir.helpers import normwise_error, parse_with_iree, parse_with_xdsl
from tests.optimize_helpers import optimize_graph

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "examples" / "attention.model"
CNN = ROOT / "examples" / "cnn.model"


def _dynamic_module(path: Path, name: str, optimized: bool):
    base = load_model(path)

    def build(dims):
        graph = load_model(path, dims).graph
        return optimize_graph(graph).graph if optimized else graph

    program = build(dict(base.graph.dims))
    shapes = symbolic_shapes(build, dict(base.graph.dims), [name], program)
    return emit_mlir(program, shapes=shapes)


@cache
def _attention_module():
    return _dynamic_module(ATTENTION, "S", optimized=True)


def test_dynamic_dims_are_question_marks_read_off_the_arguments():
    text = _attention_module().text
    assert text.startswith("func.func @main(%x: tensor<2x?x256xf32>")
    assert "-> (tensor<2x?x256xf32>)" in text.splitlines()[0]
    assert "tensor.dim %x, %c : tensor<2x?x256xf32>" in text
    parse_with_xdsl(text)
    parse_with_iree(text)


@settings(max_examples=6, deadline=None)
@given(s=st.integers(1, 96))
def test_optimized_attention_runs_for_every_sequence_length(s):
    """Optimized at S=64, emitted once with S dynamic, run at S: the interpreter's
    outputs on the model bound at S."""
    loaded = load_model(ATTENTION, {"S": s})
    bindings = loaded.bindings(s)
    got = run_iree(_attention_module(), bindings).outputs
    for out, want in evaluate(loaded.graph, bindings).items():
        assert got[out].shape == want.shape
        assert normwise_error(got[out], want) < 1e-5, (s, out)


def test_dynamic_batch_through_convolutions():
    module = _dynamic_module(CNN, "N", optimized=False)
    assert "tensor<?x1x28x28xf32>" in module.text
    for n in (1, 3):
        loaded = load_model(CNN, {"N": n})
        bindings = loaded.bindings(0)
        got = run_iree(module, bindings).outputs
        for out, want in evaluate(loaded.graph, bindings).items():
            assert normwise_error(got[out], want) < 1e-5


def test_sym_is_a_product_of_dimensions():
    s, b = Sym(1, ("S",)), Sym(1, ("B",))
    assert s * 12 == Sym(12, ("S",)) and 12 * s == s * 12
    assert b * s == Sym(1, ("B", "S")) and f"{s}x" == "?x" and s + 0 == s
    assert s > 4096 and not s < 1 and s != 1


def _write(tmp_path, text: str) -> Path:
    path = tmp_path / "m.model"
    path.write_text(text)
    return path


def test_an_axis_that_is_not_a_product_is_refused(tmp_path):
    path = _write(
        tmp_path,
        "model grow {\n  dim S = 8\n  input x: f32[S, 4]\n  param p: f32[1, 4]\n"
        "  y = concat(x, p, axis=0)\n  output y\n}\n",
    )
    base = load_model(path)
    with pytest.raises(MlirEmitError, match=r"'y' \(concat\): axis 0 has 9 elements at S=8"):
        symbolic_shapes(lambda d: load_model(path, d).graph, {"S": 8}, ["S"], base.graph)


def test_a_constant_that_follows_the_dimension_is_refused(tmp_path, capsys):
    model = ROOT / "tests" / "mlir" / "models" / "gpt2_block.model"
    args = ["compile", str(model), "--emit", "mlir", "--dynamic", "S", "--no-optimize"]
    assert main([*args, "-o", str(tmp_path / "g.mlir")]) == 1
    err = capsys.readouterr().err
    assert "constant 'causal' changes with S: a constant cannot have a dynamic dim" in err
    assert not (tmp_path / "g.mlir").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--emit", "mlir", "--dynamic", "T"], "--dynamic T: model 'attention' has no such"),
        (["--dynamic", "S"], "--dynamic works with --emit mlir only"),
        (["--emit", "mlir", "--dynamic", "S", "--quantize", "int8"], "emit the int8 program"),
    ],
)
def test_dynamic_flag_errors(flags, message, capsys):
    assert main(["compile", str(ATTENTION), *flags, "-q"]) == 1
    assert message in capsys.readouterr().err
