"""Assembly files as untrusted input (issue 16): a binary file and buffers that do not
fit the simulator's DRAM limit are located AsmErrors, raised before anything is
allocated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eqsat.cli import main
from hwsim import AsmError, parse
from hwsim.asm import DEFAULT_MAX_DRAM_BYTES, read_text

PROGRAM = """.input x f32 [4, 4]
.output y f32 [4, 4]
load sram@0:4x4:f32 <- x[0:4x4/4]
store y[0:4x4/4] <- sram@0:4x4:f32
"""


def test_a_binary_file_is_located_at_its_first_bad_byte(tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.asm"
    path.write_bytes(b".input x f32 [4]\n# caf\xc3\xa9 \xff\x00\x01")
    with pytest.raises(AsmError, match=r":2:8: error: the file is not UTF-8 text \(byte 0xff\)"):
        read_text(path)
    path.write_bytes(b"\x89PNG\r\n" + np.random.default_rng(0).bytes(4096))
    for command in ("simulate", "profile"):
        assert main([command, str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{path}:1:1: error: the file is not UTF-8 text")
        assert "Traceback" not in err


def test_an_input_beyond_the_dram_limit_is_refused_before_allocating(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    path = tmp_path / "p.asm"
    path.write_text(PROGRAM.replace("[4, 4]\n.output", "[100000, 100000]\n.output", 1))

    def no_allocation(*args, **kwargs):
        raise AssertionError("allocated before the size check")

    monkeypatch.setattr("eqsat.commands.simulate.random_buffers", no_allocation)
    assert main(["simulate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:14: error: buffer 'x' (37.3 GiB) does not fit")
    assert "over the simulator's limit of 4.0 GiB (set HWSIM_MAX_DRAM_BYTES" in err


def test_the_limit_is_the_sum_of_the_buffers_and_can_be_set(monkeypatch) -> None:
    side = 23170  # two f32 buffers of side^2, and what is left of 4 GiB for a third
    text = f".input x f32 [{side}, {side}]\n.input z f32 [{side}, {side}]\n"
    spare = (DEFAULT_MAX_DRAM_BYTES - 2 * side * side * 4) // 4
    parse(text + f".output y f32 [{spare}]\n", "p.asm", verify=False)
    with pytest.raises(AsmError, match=r"p\.asm:3:15: error: buffer 'y' \(.*\) does not fit"):
        parse(text + f".output y f32 [{spare + 1}]\n", "p.asm", verify=False)
    monkeypatch.setenv("HWSIM_MAX_DRAM_BYTES", "64")
    with pytest.raises(AsmError, match=r"p\.asm:2:15: error: buffer 'y' \(64 B\) does not fit"):
        parse(PROGRAM, "p.asm")


@pytest.mark.parametrize("line", ["Load sram@0:4x4:f32 <- x[0:4x4/4]", "  9 <- x", "@@"])
def test_a_line_that_is_no_instruction_is_located(line: str) -> None:
    col = len(line) - len(line.lstrip()) + 1
    with pytest.raises(AsmError, match=rf"p\.asm:3:{col}: error: expected an instruction"):
        parse(PROGRAM.replace("load", line + "\nload", 1), "p.asm")
