"""The vector queue: vector-unit instructions beside the compute queue's matmuls,
ordered with them only by tokens, never two on the vector unit at once (tiny machine)."""

import numpy as np
import pytest
from hwsim_tiny import TINY

from hwsim import parse, simulate, timing
from hwsim.asm import AsmError
from hwsim.asm_format import format_program
from hwsim.report import SimulationError

HEAD = ".input x f32 [4, 4]\n.output y f32 [4, 4]\n"
LOAD = "load sram@0:4x4:f32 <- x[0:4x4/4]  signal=t,u\n"
LANDED = timing.dma_cycles(TINY, 64) + TINY.dram_latency_cycles  # both tokens signalled
MATMUL = timing.matmul_cycles(TINY, "f32", 4, 4, 4)
ADD = timing.vector_cycles(TINY, 16, "add")


def run(body: str):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    return simulate(parse(HEAD + LOAD + body, "t.asm"), TINY, {"x": x}, check_outputs=False)


def test_a_vector_queue_instruction_overlaps_a_matmul():
    mm = "matmul acc@0:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=t\n"
    add = "binary.add sram@64:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=u"
    beside = run(mm + add + "  queue=vector\n").report
    behind = run(mm + add + "\n").report
    assert beside.cycles == LANDED + MATMUL
    assert behind.cycles == LANDED + MATMUL + ADD
    assert beside.busy["vector"] == behind.busy["vector"] == ADD


def test_the_vector_unit_runs_one_instruction_at_a_time():
    add = "binary.add sram@64:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=t\n"
    mul = "binary.mul sram@128:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=u  queue=vector\n"
    r = run(add + mul).report
    assert r.cycles == LANDED + 2 * ADD  # not LANDED + ADD: the unit is shared
    assert r.vector_ops == 32


def test_unordered_writes_from_the_two_queues_are_a_race():
    a = "binary.add sram@64:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=t\n"
    b = "binary.mul sram@64:4x4:f32 <- sram@0:4x4:f32, sram@0:4x4:f32  wait=u  queue=vector\n"
    with pytest.raises(SimulationError, match="race"):
        run(a + b)


def test_the_queue_option_round_trips_and_is_checked():
    text = HEAD + LOAD
    text += "binary.add sram@64:4x4:f32 <- sram@0:4x4:f32, 2.0  wait=t  queue=vector\n"
    text += "move sram@128:4x4:f32 <- sram@64:4x4:f32  act=relu  queue=vector  wait=u\n"
    program = parse(text, "t.asm")
    assert [ins.queue for ins in program.instrs] == ["load", "vector", "vector"]
    assert parse(format_program(program), "u.asm").instrs == program.instrs
    with pytest.raises(AsmError, match="queue must be compute or vector"):
        parse(HEAD + "binary.add sram@0:4x4:f32 <- sram@0:4x4:f32, 1.0  queue=load\n", "v.asm")
