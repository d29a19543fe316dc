"""Output files get the mode a plain open() gives (0666 & ~umask), still written whole
or not at all (issue 16: every output was 0600 whatever the umask)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.fileio import current_umask, write_atomic, write_model_files

MODEL = """model m {
  input x: f32[2, 3]
  param w: f32[3, 4]
  y = matmul(x, w)
  output y
}
"""


@pytest.fixture(params=[0o022, 0o002, 0o077, 0o000])
def umask(request):
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_current_umask_reads_without_changing(umask):
    assert current_umask() == umask
    assert current_umask() == umask


def test_write_atomic_honors_the_umask(tmp_path, umask):
    path = tmp_path / "out.txt"
    write_atomic(path, "hello\n")
    assert mode(path) == 0o666 & ~umask
    assert path.read_text() == "hello\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


def test_model_and_params_files_honor_the_umask(tmp_path, umask):
    path = tmp_path / "m.model"
    params = write_model_files(path, MODEL, {"w": np.ones((3, 4), np.float32)})
    assert params == tmp_path / "m.params.npz"
    assert mode(path) == mode(params) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.model", "m.params.npz"]


@pytest.mark.parametrize("umask", [0o027], indirect=True)
def test_commands_outputs_honor_the_umask(tmp_path, umask, capsys):
    model = tmp_path / "m.model"
    model.write_text(MODEL)
    outputs = {
        "run": tmp_path / "o.npz",
        "optimize": tmp_path / "opt.model",
        "compile": tmp_path / "m.asm",
        "report": tmp_path / "r.json",
    }
    assert main(["run", str(model), "-o", str(outputs["run"])]) == 0
    argv = ["optimize", str(model), "-q", "-o", str(outputs["optimize"])]
    assert main([*argv, "--report", str(outputs["report"])]) == 0
    assert main(["compile", str(model), "--no-optimize", "-o", str(outputs["compile"])]) == 0
    capsys.readouterr()
    for path in outputs.values():
        assert mode(path) == 0o666 & ~umask, path.name


def test_write_atomic_writes_into_a_pipe_rather_than_replacing_it(tmp_path):
    # `-o /dev/null` or a named pipe: renaming a temporary file over it would replace
    # the device with a regular file (for every program on the machine).
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_model_written_to_dev_null_leaves_no_params_file_in_dev(tmp_path, capsys):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    import threading

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_model_files(fifo, "model m {}\n", {"w": np.zeros(3, np.float32)})
    reader.join(timeout=10)
    assert got == [b"model m {}\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
