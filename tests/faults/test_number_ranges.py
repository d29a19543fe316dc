"""Numbers checked for range where they are read (issue 16; eqsat/limits.py): in models,
rules, flags and assembly, a number beyond the legal range is a located error, never
an OverflowError, a ValueError from int() or an allocation."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqsat.cli import main
from eqsat.limits import MAX_RANK, MAX_SIDE, number_text
from eqsat.rules.errors import RuleSyntaxError
from eqsat.rules.parser import parse_rules
from eqsat.summary import human_bytes, human_count
from frontend import check_model, parse_model
from frontend.errors import ModelError
from hwsim import AsmError, parse

HUGE = "9" * 400
ENORMOUS = "9" * 5000  # past Python's 4,300-digit limit for int() of a text


def _model(body: str) -> str:
    return "model m {\n" + body + "\n}\n"


@pytest.mark.parametrize(
    ("body", "line", "col", "message"),
    [
        (f"  dim B = {HUGE}\n  input x: f32[B]\n  output x", 2, 11, "does not fit in 64 bits"),
        (f"  dim B = {ENORMOUS}\n  input x: f32[B]\n  output x", 2, 11, "(5000 digits)"),
        (f"  input x: f32[4, {HUGE}]\n  output x", 2, 19, "does not fit in 64 bits"),
        (f"  input x: f32[4, 3*{HUGE}]\n  output x", 2, 21, "does not fit in 64 bits"),
        (f"  dim B = {MAX_SIDE + 1}\n  input x: f32[B]\n  output x", 2, 3, "larger than"),
        (f"  input x: f32[{MAX_SIDE + 1}]\n  output x", 2, 16, "larger than the limit"),
        ("  input x: f32[65536, 65536, 65537]\n  output x", 2, 12, "at most 2^48 elements"),
        (
            f"  input x: f32[{', '.join(['1'] * (MAX_RANK + 1))}]\n  output x",
            2,
            12,
            "at most 32 axes",
        ),
        (
            f"  input x: f32[4, 4]\n  y = softmax(x, axis={HUGE})\n  output y",
            3,
            18,
            "'axis': integer 999999999999... (400 digits) does not fit",
        ),
        (
            f"  input x: f32[4, 4]\n  y = reshape(x, shape=[-{HUGE}])\n  output y",
            3,
            25,
            "does not fit in 64 bits",
        ),
        (
            f"  input x: f32[4]\n  y = add(x, x, ignored={ENORMOUS})\n  output y",
            3,
            25,
            "out of range",
        ),
        (f"  const c: i32[] = {HUGE}\n  output c", 2, 3, "(400 digits) is outside the range"),
    ],
)
def test_model_numbers_out_of_range(body: str, line: int, col: int, message: str) -> None:
    with pytest.raises(ModelError) as info:
        check_model(parse_model(_model(body), "m.model"))
    err = info.value
    assert (err.line, err.col) == (line, col), str(err)
    assert message in err.message
    assert len(str(err).splitlines()[0]) < 220  # a long number is shown cut short


def test_a_float_written_as_a_long_integer_is_still_a_float() -> None:
    graph = check_model(parse_model(_model(f"  const c: f32[] = 1{'0' * 30}\n  output c")))
    assert [n.op for _, n in graph] == ["const"]


def test_the_cli_prints_the_400_digit_dim_as_a_located_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.model"
    path.write_text(_model(f"  dim B = {HUGE}\n  input x: f32[B]\n  y = relu(x)\n  output y"))
    for command in ("check", "optimize", "simulate"):
        assert main([command, str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{path}:2:11: error: integer 999999999999... (400 digits)")
        assert "Traceback" not in err


@pytest.mark.parametrize("value", [HUGE, ENORMOUS, str(MAX_SIDE + 1)])
def test_dim_flag_out_of_range(value: str, capsys) -> None:
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(SystemExit) as info:
        main(["check", str(root / "examples" / "mlp.model"), "--dim", f"B={value}"])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("eqsat check: error: argument --dim: B: ") and len(err) < 200


@pytest.mark.parametrize("number", [HUGE, ENORMOUS, "9223372036854775808"])
def test_rule_integers_fit_int64(number: str) -> None:
    with pytest.raises(RuleSyntaxError, match="does not fit in 64 bits") as info:
        parse_rules(f"ruleset r\n# d\nr: relu(x) => x if rank(x) == {number}\n", "r.rules")
    assert (info.value.line, info.value.col) == (3, 31)


def test_summary_counts_never_overflow() -> None:
    assert human_count(10**400) == number_text(10**400)
    assert human_bytes(10**400).endswith(" B")
    assert human_count(12_345_678) == "12.35 M"
    assert number_text(10**5000) == "2^16609 or more"


ASM = ".input x f32 [4, 4]\n.output y f32 [4, 4]\n"


@pytest.mark.parametrize(
    ("line", "col", "message"),
    [
        (f"load sram@{ENORMOUS}:4x4:f32 <- x[0:4x4/4]", 11, "(5000 digits) does not fit"),
        (f"load sram@0:4x4:f32 <- x[{HUGE}:4x4/4]", 26, "does not fit in 64 bits"),
        (
            "load sram@0:4x4:f32 <- x[0:4x4/4]\nbinary.mul sram@0:4x4:f32 <- sram@0:4x4:f32, 1e999",
            46,
            "out of range",
        ),
        (
            f"load sram@0:4x4:f32 <- x[0:4x4/4]\nmove sram@0:4x4:f32 <- sram@0:4x4:f32 act={HUGE}",
            0,
            "",
        ),
    ],
)
def test_assembly_numbers_out_of_range(line: str, col: int, message: str) -> None:
    if not message:  # an option value that is not a number is kept as text, not read
        with pytest.raises(AsmError):
            parse(ASM + line, "p.asm")
        return
    with pytest.raises(AsmError) as info:
        parse(ASM + line, "p.asm")
    lineno = 2 + len(line.splitlines())
    assert str(info.value).startswith(f"p.asm:{lineno}:{col}: error: ")
    assert message in str(info.value)


def test_assembly_option_integers_fit_int64() -> None:
    text = ASM.replace("f32", "i8") + (
        "load sram@0:4x4:i8 <- x[0:4x4/4]\n"
        f"requantize sram@0:4x4:i8 <- sram@0:4x4:i8 mult={ENORMOUS} shift=1\n"
    )
    with pytest.raises(AsmError, match=r"p\.asm:4:48: error: integer 9+ does not fit"):
        parse(text, "p.asm")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (f".input x f32 [4, {HUGE}]", "a dim does not fit in 64 bits"),
        (f".input x f32 [{', '.join(['2'] * 40)}]", "a buffer has at most 32 dims, got 40"),
    ],
)
def test_assembly_buffer_shapes_out_of_range(header: str, message: str) -> None:
    with pytest.raises(AsmError, match=f"p.asm:1:15: error: {message}"):
        parse(header + "\n", "p.asm")
