"""Bad programs: each kind is rejected with a message naming the instruction."""

import re

import numpy as np
import pytest

from hwsim import SimulationError, load_hardware, parse, simulate

EDGE = load_hardware("edge")
HEAD = ".input x f32 [16, 16]\n.output y f32 [16, 16]\n.scratch t f32 [256]\n"
X = np.ones((16, 16), np.float32)


def fails(body: str, inputs=None, **kw) -> str:
    program = parse(HEAD + body, "bad.asm", verify=False)
    with pytest.raises(SimulationError) as info:
        simulate(program, EDGE, {"x": X} if inputs is None else inputs, **kw)
    return str(info.value)


def test_sram_overflow():
    msg = fails("load sram@261124:16x16:f32 <- x[0:16x16/16]\n")
    assert msg.startswith("bad.asm:4:1: error: instruction #0 (load queue) `load ")
    assert "sram overflow: tile [261124, 262148) exceeds the 262144 bytes of edge" in msg


def test_accumulator_overflow():
    msg = fails("move acc@65280:16x16:f32 <- sram@0:16x16:f32\n")
    assert "acc overflow: tile [65280, 66304) exceeds the 65536 bytes" in msg


def test_out_of_bounds_dram():
    msg = fails("load sram@0:16x16:f32 <- x[16:16x16/16]\n")
    assert "instruction #0" in msg and "out-of-bounds DRAM access" in msg


def test_shape_mismatch():
    msg = fails("transpose sram@0:4x8:f32 <- sram@1024:4x8:f32\n")
    assert "transpose of r x c writes c x r" in msg


def test_read_of_unwritten_sram():
    msg = fails("unary.exp sram@0:16x16:f32 <- sram@1024:16x16:f32\n")
    assert "instruction #0 (compute queue) `unary.exp" in msg
    assert "reads sram bytes [1024, 2048), which was never (fully) written" in msg


def test_read_of_partly_written_sram():
    body = (
        "load sram@0:8x16:f32 <- x[0:8x16/16]  signal=a\n"
        "unary.exp sram@0:16x16:f32 <- sram@0:16x16:f32  wait=a\n"
    )
    assert "instruction #1" in fails(body) and "never (fully) written" in fails(body)


def test_read_of_unwritten_dram():
    msg = fails("load sram@0:1x16:f32 <- t[0:1x16/16]\n")
    assert "reads DRAM t[0:16], which was never (fully) written" in msg


def test_race_read_while_load_overwrites():
    body = (
        "load       sram@0:16x16:f32 <- x[0:16x16/16]  signal=a\n"
        "unary.exp  sram@1024:16x16:f32 <- sram@0:16x16:f32  wait=a\n"
        "load       sram@0:16x16:f32 <- x[0:16x16/16]\n"
    )
    msg = fails(body)
    assert "race:" in msg and "instruction #1 (compute queue)" in msg
    assert "instruction #2 (load queue) `load" in msg and "wait/signal token" in msg


def test_race_store_reads_before_compute_wrote():
    body = (
        "load       sram@0:16x16:f32 <- x[0:16x16/16]  signal=a\n"
        "unary.exp  sram@1024:16x16:f32 <- sram@0:16x16:f32  wait=a  signal=c\n"
        "unary.exp  sram@1024:16x16:f32 <- sram@0:16x16:f32\n"
        "store      y[0:16x16/16] <- sram@1024:16x16:f32  wait=c\n"
    )
    msg = fails(body)
    assert re.search(r"race: (reads|writes) sram bytes \[1024, 2048\)", msg)


def test_race_in_dram_between_store_and_load():
    body = (
        "load   sram@0:16x16:f32 <- x[0:16x16/16]  signal=a,a2\n"
        "store  t[0:16x16/16] <- sram@0:16x16:f32  wait=a\n"
        "unary.copy  sram@2048:16x16:f32 <- sram@0:16x16:f32  wait=a2  signal=c\n"
        "load   sram@1024:16x16:f32 <- t[0:16x16/16]  wait=c\n"
    )
    msg = fails(body, check_outputs=False)
    assert "instruction #3 (load queue)" in msg
    assert "race: reads DRAM t[0:256] while another queue writes it unordered" in msg
    assert "instruction #1 (store queue) `store" in msg


def test_no_race_when_ordered_by_tokens():
    body = (
        "load   sram@0:16x16:f32 <- x[0:16x16/16]  signal=a\n"
        "store  t[0:16x16/16] <- sram@0:16x16:f32  wait=a  signal=s\n"
        "kernel next\n"
        "load   sram@1024:16x16:f32 <- t[0:16x16/16]  signal=b\n"
        "store  y[0:16x16/16] <- sram@1024:16x16:f32  wait=b\n"
    )
    out = simulate(parse(HEAD + body), EDGE, {"x": X}).outputs["y"]
    assert (out == 1).all()


def test_deadlock_cycle():
    body = (
        "load       sram@0:16x16:f32 <- x[0:16x16/16]  wait=b  signal=a\n"
        "unary.exp  sram@1024:16x16:f32 <- sram@0:16x16:f32  wait=a  signal=b\n"
    )
    msg = fails(body)
    assert "deadlock" in msg and "['b']" in msg and "instruction #0" in msg


def test_token_never_signalled():
    msg = fails("load sram@0:16x16:f32 <- x[0:16x16/16]  wait=nope\n")
    assert "deadlock: waits on token 'nope' that no instruction signals" in msg


def test_store_into_input():
    body = (
        "load   sram@0:16x16:f32 <- x[0:16x16/16]  signal=a\n"
        "store  x[0:16x16/16] <- sram@0:16x16:f32  wait=a\n"
    )
    assert "stores into input buffer 'x', which is read-only" in fails(body)


def test_output_never_written():
    msg = fails("load sram@0:16x16:f32 <- x[0:16x16/16]\n")
    assert "output 'y': 256 elements never stored" in msg


def test_bad_inputs():
    body = "load sram@0:16x16:f32 <- x[0:16x16/16]\n"
    assert "missing input 'x'" in fails(body, inputs={})
    assert "has shape (4,), declared (16, 16)" in fails(body, inputs={"x": np.ones(4)})
    assert "are not .input buffers" in fails(body, inputs={"x": X, "z": X})
    program = parse(".input q i8 [2]\n")
    with pytest.raises(SimulationError, match=r"integers in \[-128, 127\]"):
        simulate(program, EDGE, {"q": np.array([0.5, 1.0])})
    with pytest.raises(SimulationError, match=r"integers in \[-128, 127\]"):
        simulate(program, EDGE, {"q": np.array([0, 300])})


def test_message_without_source_lines():
    from hwsim.isa import DramRef, Load, Program, Tile

    p = Program((), (Load(dst=Tile("sram", 0, 1, 1, "f32"), src=DramRef("nope", 0, 1, 1, 1)),))
    with pytest.raises(SimulationError, match=r"^error: instruction #0 \(load queue\) `load"):
        simulate(p, EDGE, {})


def test_races_can_be_left_unchecked():
    body = (
        "load       sram@0:16x16:f32 <- x[0:16x16/16]  signal=a\n"
        "unary.exp  sram@1024:16x16:f32 <- sram@0:16x16:f32  wait=a  signal=c\n"
        "load       sram@0:16x16:f32 <- x[0:16x16/16]\n"
        "store      y[0:16x16/16] <- sram@1024:16x16:f32  wait=c\n"
    )
    assert "race" in fails(body)
    out = simulate(parse(HEAD + body), EDGE, {"x": X}, check_races=False).outputs["y"]
    assert np.allclose(out, np.e)
