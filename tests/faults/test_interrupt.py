"""Ctrl-C: one line (`interrupted`), exit code 130, no traceback, nothing half-written,
wherever the SIGINT lands: while the commands are imported, in egglog, in worker
processes, in the HiGHS solver (issue 16)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix

import eqsat.fileio as fileio
from eqsat.extract import highs_run
from eqsat.extract.highs_run import MilpProblem, solve_milp
from tests.conftest import ROOT


def start(argv: list[str]) -> subprocess.Popen:
    """The command in its own process group, so that a SIGINT to the group reaches it
    and its children as a terminal's Ctrl-C does, and nothing else."""
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def read_until(stream, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    return seen


def interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out.decode(), err.decode()


def test_optimize_interrupted_in_saturation(tmp_path):
    out = tmp_path / "o.model"
    proc = start(
        [
            "-m",
            "eqsat",
            "optimize",
            "tests/data/add_chain.model",
            "--rules",
            "tests/data/explode.rules",
            "--time-limit",
            "30",
            "--node-limit",
            "100000000",
            "-o",
            str(out),
        ]
    )
    early = read_until(proc.stderr, b"  round 2:")
    assert b"  round 2:" in early, early.decode()  # saturating: the egglog run is under way
    code, stdout, rest = interrupt(proc)
    lines = (early.decode() + rest).splitlines()
    assert code == 130, lines
    assert lines[-1] == "interrupted"
    progress = lines[:-1]
    assert progress[0].startswith("optimizing add_chain")
    assert all(line.startswith("  round ") for line in progress[1:]), lines
    assert stdout == ""
    assert list(tmp_path.iterdir()) == []  # no output, no temporary


def test_optimize_interrupted_in_ilp_extraction(tmp_path):
    # HiGHS never looks at signals, and a process exiting while it works is aborted
    # (std::terminate): the exit must still be 130 with one line.
    out = tmp_path / "o.model"
    argv = ["-m", "eqsat", "optimize", "tests/data/add_chain.model", "--rules"]
    argv += ["tests/data/explode.rules", "--extract", "ilp", "--node-limit", "20000"]
    proc = start([*argv, "--ilp-time-limit", "30", "-o", str(out)])
    early = read_until(proc.stderr, b"extracting (ilp)")
    assert b"extracting (ilp)" in early, early.decode()
    time.sleep(0.5)
    code, stdout, rest = interrupt(proc)
    assert (code, stdout, rest) == (130, "", "interrupted\n")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_while_the_commands_are_imported():
    # The SIGINT lands as main() starts building the parser (importing every command):
    # before, that was outside main's try and printed a traceback.
    code = (
        "import os, signal, sys\n"
        "import eqsat.cli as cli\n"
        "build = cli.build_parser\n"
        "def interrupted_build():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    return build()\n"
        "cli.build_parser = interrupted_build\n"
        "sys.exit(cli.main(['check', 'tests/data/add_chain.model']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "interrupted\n", "")


def test_verify_rules_workers_leave_ctrl_c_to_the_parent():
    proc = start(["-m", "eqsat", "verify-rules", "rules/algebra.rules", "-j", "2"])
    read_until(proc.stdout, b"examples each")
    time.sleep(0.5)  # the workers are checking rules
    code, _, err = interrupt(proc)
    assert (code, err) == (130, "interrupted\n")


def test_ctrl_c_inside_a_gc_callback_is_not_lost(monkeypatch):
    # Hypothesis registers a gc callback; Python runs the SIGINT handler at its next
    # bytecode, and a KeyboardInterrupt raised inside a gc callback is printed as
    # "Exception ignored" and dropped: verify-rules -j 1 then ran on after a Ctrl-C.
    from eqsat.rules import load_rules
    from eqsat.verify.rules import verify_rules

    sent: list[bool] = []
    seen: list[object] = []

    def interrupt_from_gc(phase, info):
        if seen and not sent:  # during the second check
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    rules = load_rules([ROOT / "rules" / "algebra.rules"])
    gc.callbacks.append(interrupt_from_gc)
    try:
        with pytest.raises(KeyboardInterrupt):
            verify_rules(rules, examples=5, names=(), on_result=seen.append, jobs=1)
    finally:
        gc.callbacks.remove(interrupt_from_gc)
    assert sent and len(seen) >= 2  # raised after the check it arrived in
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def hard_milp() -> MilpProblem:
    """An integer program HiGHS does not finish within seconds."""
    rng = np.random.default_rng(0)
    n, m = 300, 200
    return MilpProblem(
        c=-rng.random(n),
        integrality=np.ones(n),
        lb=np.zeros(n),
        ub=np.full(n, 5.0),
        a=csr_matrix(rng.integers(0, 10, (m, n)).astype(float)),
        row_lb=np.zeros(m),
        row_ub=np.full(m, 500.0),
    )


def sigint_when(ready: threading.Event, delay: float) -> threading.Thread:
    def send() -> None:
        if ready.wait(30):
            time.sleep(delay)
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    return sender


def test_ctrl_c_reaches_the_caller_during_an_in_process_ilp(monkeypatch):
    solve = highs_run._solve
    finished: list[float] = []

    def recording_solve(problem, options):
        outcome = solve(problem, options)
        finished.append(time.perf_counter())
        return outcome

    monkeypatch.setattr(highs_run, "_solve", recording_solve)
    ready = threading.Event()
    ready.set()
    sigint_when(ready, 0.2)
    with pytest.raises(KeyboardInterrupt):
        solve_milp(hard_milp(), time_limit=1.0, isolate=False)
    # Raised while HiGHS still runs (it never checks signals), not after the solve.
    assert finished == []
    assert highs_run.abandoned_solve_running()
    deadline = time.monotonic() + 30
    while highs_run.abandoned_solve_running() and time.monotonic() < deadline:
        time.sleep(0.05)  # a process exiting with HiGHS at work is aborted
    assert len(finished) == 1


def test_ctrl_c_kills_the_ilp_solver_process(monkeypatch):
    started: list[subprocess.Popen] = []
    ready = threading.Event()
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        ready.set()
        return proc

    monkeypatch.setattr(highs_run.subprocess, "Popen", recording_popen)
    sigint_when(ready, 0.5)
    with pytest.raises(KeyboardInterrupt):
        solve_milp(hard_milp(), time_limit=5.0, isolate=True)
    assert len(started) == 1
    assert started[0].poll() is not None  # killed and reaped, not left running


def test_model_and_params_are_renamed_together_despite_ctrl_c(tmp_path, monkeypatch):
    # A SIGINT right after the model text is in place must not leave it without its
    # params file: the interrupt is held until both are renamed.
    real_write = fileio.write_atomic

    def write_then_interrupt(path, data):
        real_write(path, data)
        if Path(path).suffix == ".model":
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(fileio, "write_atomic", write_then_interrupt)
    path = tmp_path / "m.model"
    with pytest.raises(KeyboardInterrupt):
        fileio.write_model_files(path, "model m {}\n", {"w": np.ones(3)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.model", "m.params.npz"]
    np.testing.assert_array_equal(fileio.load_arrays(tmp_path / "m.params.npz")["w"], np.ones(3))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
