"""Flag errors print in one style (issue 16): `eqsat COMMAND: error: ...`, whether
argparse found them (exit 2, after the usage) or a command's own check (exit 1);
never a traceback from a value a flag let through."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqsat.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODEL = str(ROOT / "tests" / "data" / "add_chain.model")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["optimize", MODEL, "--time-limit", "0"], 1, "--time-limit must be positive, got 0.0"),
        (["optimize", MODEL, "--node-limit", "0"], 1, "--node-limit must be at least 1"),
        (["optimize", MODEL, "--node-limit", "x"], 2, "argument --node-limit: invalid int"),
        (["optimize", MODEL, "--ilp-time-limit", "nan"], 2, "argument --ilp-time-limit: expected"),
        (["run", MODEL, "--seed", "-1"], 2, "argument --seed: expected a non-negative integer"),
        (["simulate", MODEL, "--seed", "9" * 30], 2, "argument --seed: expected"),
        (["profile", MODEL, "--seed", "-1"], 2, "argument --seed: expected"),
        (["check", MODEL, "--dim", "Q=3"], 1, "--dim Q: model 'add_chain' has no dimension 'Q'"),
    ],
)
def test_flag_errors_say_error(argv: list[str], code: int, message: str, capsys) -> None:
    if code == 2:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    else:
        assert main(argv) == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"eqsat {argv[0]}: error: ") and message in last, err
    assert "Traceback" not in err


def test_located_errors_keep_their_location(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.model"
    path.write_text("model m {\n  y = relu(x)\n  output y\n}\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:2:12: error: 'x' is not defined")
