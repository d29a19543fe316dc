"""The early-exit and decode-loop examples: compiled and simulated with host control,
they equal the reference interpreter on inputs that take each branch and on several
trip counts; the host's cycles are the device's plus dispatches and read-backs."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from backend.control import CompiledControl, compile_control
from eqsat.control.interpret import run_control
from hwsim.hardware import load_hardware
from tests.control.helpers import DECODE_LOOP, EARLY_EXIT, loaded

EDGE = load_hardware("edge")


@cache
def compiled(path) -> CompiledControl:
    return compile_control(loaded(path).program, EDGE)


def check_host_cycles(report) -> None:
    hw = EDGE
    assert report.dispatch_cycles == report.dispatches * hw.dispatch_cycles
    assert report.readback_cycles == report.readbacks * hw.host_readback_cycles
    assert report.cycles == report.device_cycles + report.control_cycles
    assert report.device_cycles == sum(r.cycles for _, r in report.reports)


def early_exit_inputs(seed: int, scale: float) -> dict[str, np.ndarray]:
    values = loaded(EARLY_EXIT).bindings(seed)
    values["x"] = (values["x"] * scale).astype(np.float32)
    return values


@settings(max_examples=12)
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([0.0, 0.5, 2.0, 30.0, 100.0]))
@example(seed=1, scale=0.0)  # uniform probabilities: not confident, the second half runs
@example(seed=1, scale=100.0)  # a peaked softmax: confident, exits early
def test_early_exit_matches_the_interpreter(seed: int, scale: float) -> None:
    program = loaded(EARLY_EXIT).program
    values = early_exit_inputs(seed, scale)
    want, trace = run_control(program, values)
    got, report = compiled(EARLY_EXIT).run(values)
    np.testing.assert_allclose(got["probs"], want["probs"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["confident"], want["confident"])
    [(_, taken)] = trace.branches
    assert report.branches == [("confident", taken)]
    # The exit skips the second half: one program (the first half); else two.
    assert report.dispatches == (1 if taken else 2)
    assert report.readbacks == 1
    check_host_cycles(report)


def test_early_exit_takes_both_branches_and_the_exit_is_cheaper() -> None:
    cycles = {}
    for scale in (0.0, 100.0):
        values = early_exit_inputs(1, scale)
        _, trace = run_control(loaded(EARLY_EXIT).program, values)
        _, report = compiled(EARLY_EXIT).run(values)
        cycles[trace.branches[0][1]] = report
    assert set(cycles) == {True, False}
    exit_, full = cycles[True], cycles[False]
    assert exit_.device_cycles < full.device_cycles
    assert full.control_cycles - exit_.control_cycles == EDGE.dispatch_cycles


@cache
def greedy_tokens(seed: int) -> list[int]:
    """The tokens the decoder emits when nothing stops it (max_len trips)."""
    values = decode_inputs(seed, end_token=-1)
    out, _ = run_control(loaded(DECODE_LOOP).program, values)
    return [int(t) for t in out["tokens"].reshape(-1)]


def decode_inputs(seed: int, end_token: int) -> dict[str, np.ndarray]:
    values = loaded(DECODE_LOOP).bindings(seed)
    values["start"] = np.array([seed % 16], dtype=np.int32)
    values["end_token"] = np.array(end_token, dtype=np.int32)
    return values


@settings(max_examples=10)
@given(seed=st.integers(0, 50), stop=st.integers(0, 8))
@example(seed=3, stop=0)
@example(seed=3, stop=8)
def test_decode_loop_matches_the_interpreter(seed: int, stop: int) -> None:
    """`stop` < 8: the end token is the token emitted at trip `stop`, so decoding stops
    after the first trip that emits it; 8: an end token never emitted (all 8 trips)."""
    tokens = greedy_tokens(seed)
    end = tokens[stop] if stop < len(tokens) else -1
    trips = tokens.index(end) + 1 if end in tokens else len(tokens)
    values = decode_inputs(seed, end)
    want, trace = run_control(loaded(DECODE_LOOP).program, values)
    assert trace.trips == [(0, trips)]
    got, report = compiled(DECODE_LOOP).run(values)
    for name in ("tokens", "steps"):
        np.testing.assert_array_equal(got[name], want[name])
    assert int(got["steps"]) == trips
    assert report.trips == [trips]
    # One dispatch and one read-back of the continue flag per trip (the trip count
    # and the first condition are compile-time constants: no read-back).
    assert report.dispatches == trips and report.readbacks == trips
    check_host_cycles(report)


def test_decode_loop_trip_counts_vary() -> None:
    seen = set()
    tokens = greedy_tokens(3)
    for stop in range(len(tokens)):
        _, report = compiled(DECODE_LOOP).run(decode_inputs(3, tokens[stop]))
        seen.add(report.trips[0])
    assert len(seen) >= 3


def test_one_program_per_body_and_stage() -> None:
    """early_exit: the first half (a stage) and the second half (the else branch); the
    then branch only forwards `early`, so the host needs no program for it. decode_loop:
    the loop body alone."""
    assert sorted(compiled(EARLY_EXIT).host.programs) == ["if1_else", "stage0"]
    assert sorted(compiled(DECODE_LOOP).host.programs) == ["loop0_body"]


def test_a_runaway_loop_is_an_error_not_a_hang(monkeypatch) -> None:
    import eqsat.control.interpret as interpret
    import hwsim.host as host
    from eqsat.control.check import check_control_model
    from frontend import parse_model
    from hwsim.report import SimulationError

    text = """model spin {
      input x: f32[2]
      const big: i32[] = 2000000000
      const yes: i8[] = 1
      h = loop (big, yes, carried h = x) {
        h2 = neg(h)
        yield yes, h2
      }
      output h
    }"""
    program = check_control_model(parse_model(text))
    monkeypatch.setattr(interpret, "MAX_TRIPS", 50)
    monkeypatch.setattr(host, "MAX_TRIPS", 50)
    values = {"x": np.ones(2, dtype=np.float32)}
    with pytest.raises(interpret.TripLimitError, match="still running after 50 trips"):
        run_control(program, values)
    with pytest.raises(SimulationError, match="still running after 50 trips"):
        compile_control(program, EDGE).run(values)
