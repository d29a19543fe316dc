"""The control passes are observable in the compiled programs: hoisting moves the
loop-invariant matmul out of the body program, an `if` on a constant folds (no branch,
no read-back), a constant-trip loop unrolls into one program where it pays; each keeps
the meaning (simulated == interpreted on the original program)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.control import compile_control
from eqsat.control.check import check_control_model
from eqsat.control.interpret import run_control
from eqsat.control.passes import simplify
from eqsat.control.program import IfRegion, LoopRegion, Stage
from eqsat.program_cost import program_cost
from frontend import parse_model
from hwsim.hardware import load_hardware
from hwsim.host import Branch, Repeat
from hwsim.isa import Matmul
from tests.control.helpers import DECODE_LOOP, loaded

EDGE = load_hardware("edge")


def simplified(program, **kw):
    return simplify(
        copy.deepcopy(program),
        lambda g: program_cost(g, EDGE).cycles,
        EDGE.dispatch_cycles,
        EDGE.host_readback_cycles,
        **kw,
    )


def matmuls(program) -> int:
    return sum(isinstance(i, Matmul) for i in program.instrs)


def test_hoisting_moves_the_invariant_matmul_out_of_the_loop() -> None:
    original = loaded(DECODE_LOOP).program
    program, log, _ = simplified(original)
    assert log.hoisted == 1
    assert [type(s) for s in program.steps] == [Stage, LoopRegion]
    body_ops = [n.op for _, n in original.steps[0].body if n.op == "matmul"]
    assert len(body_ops) == 4
    assert [n.op for _, n in program.steps[1].body].count("matmul") == 3
    before, after = compile_control(original, EDGE), compile_control(program, EDGE)
    hoisted = after.host.programs["stage0"]
    assert matmuls(hoisted) > 0
    assert matmuls(before.host.programs["loop0_body"]) - matmuls(
        after.host.programs["loop1_body"]
    ) == matmuls(hoisted)
    values = loaded(DECODE_LOOP).bindings(5)
    values["end_token"] = np.array(-1, dtype=np.int32)  # all 8 trips
    want, _ = run_control(original, values)
    got_before, rep_before = before.run(values)
    got_after, rep_after = after.run(values)
    for name in want:
        np.testing.assert_array_equal(got_after[name], want[name])
        np.testing.assert_array_equal(got_before[name], want[name])
    assert rep_after.dispatches == rep_before.dispatches + 1  # the hoisted stage
    assert rep_after.cycles < rep_before.cycles


def test_hoisting_is_priced_against_a_dispatch() -> None:
    """One trip: computing the invariant once saves nothing, and its own program would
    cost a dispatch: it stays in the body."""
    text = DECODE_LOOP.read_text().replace("dim T = 8", "dim T = 1")
    program, log, _ = simplified(check_control_model(parse_model(text)), unroll=False)
    assert log.hoisted == 0
    assert any("kept 1 loop-invariant" in line for line in log.lines)
    assert [type(s) for s in program.steps] == [LoopRegion]


def test_a_single_trip_loop_unrolls_whatever_its_next_condition() -> None:
    text = DECODE_LOOP.read_text().replace("dim T = 8", "dim T = 1")
    original = check_control_model(parse_model(text))
    program, log, _ = simplified(original)
    assert log.unrolled == 1 and [type(s) for s in program.steps] == [Stage]
    values = loaded(DECODE_LOOP).bindings(2)
    want, _ = run_control(original, values)
    got, report = compile_control(program, EDGE).run(values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    assert report.dispatches == 1 and report.readbacks == 0


SMALL = """model small {
  input x: f32[4, 16]
  param w: f32[16, 16]
  const yes: i8[] = 1
  const three: i32[] = 3
  c = greater(reduce_max(x), reduce_mean(x))
  y = if (yes) {
    a = relu(x)
    yield a
  } else {
    yield x
  }
  h = loop (three, yes, carried h = y, index i) {
    h2 = tanh(matmul(h, w))
    yield yes, h2
  }
  z = if (c) {
    yield h
  } else {
    n = neg(h)
    yield n
  }
  output z
}
"""


def small_values(seed: int):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((4, 16)).astype(np.float32),
        "w": (rng.standard_normal((16, 16)) * 0.25).astype(np.float32),
    }


def test_folding_and_unrolling_leave_one_data_dependent_branch() -> None:
    original = check_control_model(parse_model(SMALL))
    program, log, choices = simplified(original)
    assert log.folded_ifs == 1 and log.unrolled == 1
    [choice] = choices
    assert choice.trips == 3 and choice.pays
    # The folded if, the unrolled loop and the stages merge into one stage.
    assert [type(s) for s in program.steps] == [Stage, IfRegion]
    tanh = [n.op for _, n in program.steps[0].graph].count("tanh")
    assert tanh == 3
    c = compile_control(program, EDGE)
    assert [type(s) for s in c.host.steps if not hasattr(s, "program")] == [Branch]
    for seed in range(4):
        values = small_values(seed)
        want, trace = run_control(original, values)
        got, report = c.run(values)
        np.testing.assert_allclose(got["z"], want["z"], rtol=1e-5, atol=1e-6)
        # one read-back (the data-dependent if), the stage and at most one branch program
        assert report.readbacks == 1
        assert report.dispatches == (1 if trace.branches[-1][1] else 2)


def test_a_loop_over_the_unroll_budget_stays_rolled() -> None:
    original = check_control_model(parse_model(SMALL))
    program, log, choices = simplified(original, max_unroll_nodes=2)
    assert log.unrolled == 0 and choices == []
    assert any("exceeds the unroll budget" in line for line in log.lines)
    c = compile_control(program, EDGE)
    [repeat] = [s for s in c.host.steps if isinstance(s, Repeat)]
    assert repeat.trips == 3 and repeat.cond is True and repeat.next_cond is True
    values = small_values(0)
    want, _ = run_control(original, values)
    got, report = c.run(values)
    np.testing.assert_allclose(got["z"], want["z"], rtol=1e-5, atol=1e-6)
    assert report.trips == [3]
    assert report.readbacks == 1  # the loop's flags are constants: only the if reads


@pytest.mark.parametrize("unroll", [True, False])
def test_unrolling_pays_in_simulated_cycles(unroll: bool) -> None:
    original = check_control_model(parse_model(SMALL))
    rolled, _, _ = simplified(original, unroll=False)
    chosen, _, _ = simplified(original, unroll=unroll)
    values = small_values(1)
    _, rep_rolled = compile_control(rolled, EDGE).run(values)
    _, rep_chosen = compile_control(chosen, EDGE).run(values)
    if unroll:
        assert rep_chosen.cycles < rep_rolled.cycles
        assert rep_rolled.dispatches - rep_chosen.dispatches == 3
    else:
        assert rep_chosen.cycles == rep_rolled.cycles


unary = st.sampled_from(["relu", "neg", "tanh"])


@st.composite
def loop_models(draw) -> str:
    """A data or constant `if`, then a loop with a data or constant trip count and
    condition, a body with or without a loop-invariant part: every pass applies to
    some of these and not to others."""
    k, t = draw(st.integers(0, 3)), draw(st.sampled_from([0, 1]))
    cond_if = draw(st.sampled_from(["c", "t"]))
    trips, cond_loop = draw(st.sampled_from(["k", "n"])), draw(st.sampled_from(["t", "c"]))
    invariant = draw(st.booleans())
    nxt = draw(st.sampled_from(["t", "c", "more"]))
    body = [f"    inv = {draw(unary)}(matmul(x, w))"] if invariant else []
    body.append(f"    h2 = add({draw(unary)}(h), {'inv' if invariant else 'x'})")
    if nxt == "more":
        body.append("    more = greater(reduce_max(h2), reduce_mean(h2))")
    return "\n".join(
        [
            "model r {",
            "  input x: f32[2, 4]",
            "  input n: i32[]",
            "  param w: f32[4, 4]",
            f"  const k: i32[] = {k}",
            f"  const t: i8[] = {t}",
            "  c = greater(reduce_max(x), reduce_mean(x))",
            f"  y = if ({cond_if}) {{",
            f"    a = {draw(unary)}(x)",
            "    yield a",
            "  } else {",
            f"    b = {draw(unary)}(x)",
            "    yield b",
            "  }",
            f"  h = loop ({trips}, {cond_loop}, carried h = y, index i) {{",
            *body,
            f"    yield {nxt}, h2",
            "  }",
            "  out = add(h, y)",
            "  output out",
            "}",
        ]
    )


@settings(max_examples=60)
@given(text=loop_models(), seed=st.integers(0, 2**16), n=st.integers(0, 3))
def test_passes_keep_the_meaning(text: str, seed: int, n: int) -> None:
    original = check_control_model(parse_model(text))
    rng = np.random.default_rng(seed)
    values = {
        "x": rng.standard_normal((2, 4)).astype(np.float32),
        "n": np.array(n, dtype=np.int32),
        "w": (rng.standard_normal((4, 4)) * 0.3).astype(np.float32),
    }
    want, _ = run_control(original, values)
    program, _, _ = simplified(original)
    got, report = compile_control(program, EDGE).run(values)
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-4, atol=1e-5)
    assert report.cycles == report.device_cycles + report.control_cycles
