"""One test per kind of mistake in a model: the CLI prints `FILE:LINE:COL: error: ...`
with the exact position, then the source line and a caret under the column, and
exits 1. The same mistake raises the matching ModelError subclass from the library."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from eqsat.cli import main
from eqsat.errors import SourceError, UserError
from frontend import check_model, parse_model
from frontend import errors as fe
from tests.conftest import ROOT


@dataclass(frozen=True)
class Case:
    kind: str
    source: str
    line: int
    col: int
    message: str  # a fragment of the message
    error: type[fe.ModelError]


def _m(body: str) -> str:
    return "model m {\n" + body + "\n}\n"


CASES = [
    Case(
        "syntax-unexpected-character",
        _m("  input x: f32[4, 8] $\n  output x"),
        2,
        22,
        "unexpected character '$'",
        fe.ModelSyntaxError,
    ),
    Case(
        "syntax-unexpected-token",
        _m("  input x: f32[4, 8]\n  y = relu(x,, x)\n  output y"),
        3,
        14,
        "unexpected ','",
        fe.ModelSyntaxError,
    ),
    Case(
        "syntax-unexpected-eof",
        "model m {\n  input x: f32[4]\n  output x\n",
        3,
        11,
        "unexpected end of file",
        fe.ModelSyntaxError,
    ),
    Case(
        "syntax-operand-after-attribute",
        _m("  input x: f32[4]\n  y = concat(x, axis=0, x)\n  output y"),
        3,
        25,
        "operands must come before keyword attributes",
        fe.ModelSyntaxError,
    ),
    Case(
        "unknown-op",
        _m("  input x: f32[4, 8]\n  y = add(rleu(x), x)\n  output y"),
        3,
        11,
        "'rleu' is not an op; did you mean 'relu'?",
        fe.UnknownOpError,
    ),
    Case(
        "leaf-is-not-callable",
        _m("  input x: f32[4, 8]\n  y = param(x)\n  output y"),
        3,
        7,
        "'param' is a declaration, not an op",
        fe.UnknownOpError,
    ),
    Case(
        "wrong-arity",
        _m("  input x: f32[4, 8]\n  y = relu(x, x)\n  output y"),
        3,
        7,
        "'relu' takes 1 operand (x), got 2",
        fe.ArityError,
    ),
    Case(
        "wrong-arity-variadic",
        _m("  input x: f32[4, 8]\n  y = concat(axis=0)\n  output y"),
        3,
        7,
        "'concat' takes at least 1 operand",
        fe.ArityError,
    ),
    Case(
        "unknown-attribute",
        _m("  input x: f32[4, 8]\n  y = softmax(x, axis=1, dim=0)\n  output y"),
        3,
        26,
        "'softmax' has no attribute 'dim'",
        fe.AttributeError_,
    ),
    Case(
        "ill-typed-attribute",
        _m("  input x: f32[4, 8]\n  y = softmax(x, axis=1.5)\n  output y"),
        3,
        18,
        "attribute 'axis' must be an integer, got the number 1.5",
        fe.AttributeError_,
    ),
    Case(
        "missing-attribute",
        _m("  input x: f32[4, 8]\n  y = reshape(x)\n  output y"),
        3,
        7,
        "'reshape' needs the attribute 'shape'",
        fe.AttributeError_,
    ),
    Case(
        "attribute-given-twice",
        _m("  input x: f32[4, 8]\n  y = softmax(x, axis=0, axis=1)\n  output y"),
        3,
        26,
        "attribute 'axis' is given twice",
        fe.AttributeError_,
    ),
    Case(
        "shape-mismatch",
        _m("  input x: f32[4, 8]\n  param w: f32[7, 3]\n  y = relu(matmul(x, w))\n  output y"),
        4,
        12,
        "'matmul': inner dimensions differ",
        fe.TypeMismatchError,
    ),
    Case(
        "dtype-mismatch",
        _m("  input x: f32[4, 8]\n  input i: i8[4, 8]\n  y = add(x, i)\n  output y"),
        4,
        7,
        "'add' needs operands of one dtype, got f32[4, 8], i8[4, 8]",
        fe.TypeMismatchError,
    ),
    Case(
        "unknown-dtype",
        _m("  input x: f64[4, 8]\n  output x"),
        2,
        12,
        "unknown dtype 'f64'",
        fe.TypeMismatchError,
    ),
    Case(
        "unbound-name",
        _m("  input x: f32[4, 8]\n  y = add(x, xx)\n  output y"),
        3,
        14,
        "'xx' is not defined; did you mean 'x'?",
        fe.UnboundNameError,
    ),
    Case(
        "unbound-output-name",
        _m("  input x: f32[4, 8]\n  output x, z"),
        3,
        13,
        "'z' is not defined",
        fe.UnboundNameError,
    ),
    Case(
        "duplicate-name",
        _m("  input x: f32[4, 8]\n  x = relu(x)\n  output x"),
        3,
        3,
        "'x' is already defined (at line 2)",
        fe.DuplicateNameError,
    ),
    Case(
        "duplicate-dim",
        _m("  dim B = 2\n  dim B = 3\n  input x: f32[B]\n  output x"),
        3,
        3,
        "dimension 'B' is declared twice",
        fe.DuplicateNameError,
    ),
    Case(
        "duplicate-output",
        _m("  input x: f32[4, 8]\n  output x, x"),
        3,
        13,
        "'x' is an output twice",
        fe.DuplicateNameError,
    ),
    Case(
        "unbound-dimension",
        _m("  dim B = 2\n  input x: f32[B, S]\n  output x"),
        3,
        19,
        "symbolic dimension 'S' has no value",
        fe.UnboundDimError,
    ),
    Case(
        "dimension-without-default",
        _m("  dim B\n  input x: f32[4, 2*B]\n  output x"),
        3,
        19,  # the dimension expression 2*B
        "it is declared without a default: pass --dim B=N",
        fe.UnboundDimError,
    ),
    Case(
        "missing-output",
        _m("  input x: f32[4, 8]\n  y = relu(x)"),
        4,
        1,
        "model 'm' has no output",
        fe.MissingOutputError,
    ),
    Case(
        "const-out-of-range",
        _m("  const c: i8[] = 300\n  output c"),
        2,
        3,
        "300 is outside the range of i8",
        fe.TypeMismatchError,
    ),
    Case(
        "number-out-of-range",
        _m("  input x: f32[4]\n  y = layernorm(x, x, x, eps=1e999)\n  output y"),
        3,
        30,
        "number 1e999 is out of range",
        fe.ModelSyntaxError,
    ),
    Case(
        "external-const-without-params-file",
        _m("  input x: f32[4]\n  const m: f32[4] = external\n  y = add(x, m)\n  output y"),
        3,
        3,
        "const 'm' is external but no params file was found",
        fe.MissingDataError,
    ),
    Case(
        "const-values-count",
        _m("  input x: f32[4]\n  const m: f32[4] = [1, 2, 3]\n  y = add(x, m)\n  output y"),
        3,
        3,
        "const 'm' of type f32[4] needs 4 values, got 3",
        fe.TypeMismatchError,
    ),
]


def _write(tmp_path: Path, case: Case) -> Path:
    path = tmp_path / f"{case.kind}.model"
    path.write_text(case.source)
    return path


def _assert_report(stderr: str, path: Path, case: Case) -> None:
    lines = stderr.splitlines()
    head = f"{path}:{case.line}:{case.col}: error: "
    assert lines[0].startswith(head), f"{lines[0]!r} does not start with {head!r}"
    assert case.message in lines[0]
    source_line = case.source.splitlines()[case.line - 1]
    assert lines[1] == "  " + source_line.expandtabs(1)
    assert lines[2] == "  " + " " * (case.col - 1) + "^"
    assert len(lines) == 3
    assert "Traceback" not in stderr


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.kind)
def test_error_through_cli(case, tmp_path, capsys):
    path = _write(tmp_path, case)
    assert main(["check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    _assert_report(captured.err, path, case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.kind)
def test_error_class_and_position(case):
    with pytest.raises(fe.ModelError) as info:
        check_model(parse_model(case.source, "f.model"))
    err = info.value
    assert type(err) is case.error
    assert isinstance(err, SourceError) and isinstance(err, UserError)
    assert (err.file, err.line, err.col) == ("f.model", case.line, case.col)
    assert case.message in err.message


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        (_m("  const c: f32[] = " + "9" * 400 + "\n  output c"), fe.TypeMismatchError, "range"),
        (_m("  const c: bf16[] = 1e39\n  output c"), fe.TypeMismatchError, "range of bf16"),
        (_m("  const c: i32[] = 2.5\n  output c"), fe.TypeMismatchError, "integer value"),
        (
            _m("  input x: f32[2]\n  y = layernorm(x, x, x, eps=" + "9" * 400 + ")\n  output y"),
            fe.AttributeError_,
            "too large",
        ),
        (
            _m("  input x: f32[]\n  y = slice(x, starts=[0], ends=[1])\n  output y"),
            fe.TypeMismatchError,
            "rank 0",
        ),
        (_m("  input x: f32[]\n  y = concat(x, x)\n  output y"), fe.TypeMismatchError, "rank 0"),
    ],
)
def test_regressions_raise_model_errors(source, error, message):
    """These used to escape as OverflowError/IndexError, or to pass the checker and
    crash (or silently wrap) in the interpreter."""
    with pytest.raises(error, match=message):
        check_model(parse_model(source))


def test_every_error_class_is_covered():
    classes = {c.error for c in CASES}
    declared = {
        cls
        for cls in vars(fe).values()
        if isinstance(cls, type) and issubclass(cls, fe.ModelError) and cls is not fe.ModelError
    }
    assert declared <= classes, declared - classes


def test_run_reports_model_errors_too(tmp_path, capsys):
    case = next(c for c in CASES if c.kind == "shape-mismatch")
    path = _write(tmp_path, case)
    assert main(["run", str(path), "-o", str(tmp_path / "o.npz")]) == 1
    _assert_report(capsys.readouterr().err, path, case)
    assert not (tmp_path / "o.npz").exists()


def test_caret_under_column_after_tab(tmp_path, capsys):
    source = "model m {\n\tinput x: f32[4]\n\ty = relu(z)\n\toutput y\n}\n"
    case = Case("tab", source, 3, 11, "'z' is not defined", fe.UnboundNameError)
    path = _write(tmp_path, case)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    _assert_report(err, path, case)
    source_line, caret = err.splitlines()[1:3]
    assert source_line[caret.index("^")] == "z"


def test_missing_file_is_a_user_error(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.model")]) == 1
    err = capsys.readouterr().err
    assert "nope.model: cannot read model" in err
    assert "Traceback" not in err


def test_non_utf8_file(tmp_path, capsys):
    path = tmp_path / "bin.model"
    path.write_bytes(b"model m { \xff\xfe }")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:1:1: error: the file is not UTF-8 text")


def _subprocess(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "eqsat", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_subprocess_error_has_no_traceback(tmp_path):
    case = next(c for c in CASES if c.kind == "unknown-op")
    path = _write(tmp_path, case)
    proc = _subprocess("check", str(path))
    assert proc.returncode == 1
    assert proc.stdout == ""
    _assert_report(proc.stderr, path, case)


def test_subprocess_bad_dim_flag(tmp_path):
    proc = _subprocess("check", str(ROOT / "examples" / "mlp.model"), "--dim", "Q=3")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        "eqsat check: error: --dim Q: model 'mlp' has no dimension 'Q' (its dimensions: B)"
    )
