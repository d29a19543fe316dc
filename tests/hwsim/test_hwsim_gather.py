"""The `gather` instruction: an indexed DMA that moves only the rows its i32 index
column selects, timed one burst per row, checked like every other access."""

import numpy as np
import pytest
from hwsim_tiny import TINY

from hwsim import AsmError, Gather, SimulationError, format_program, load_hardware, parse, simulate
from hwsim.timing import gather_cycles, instruction_cost

PROGRAM = """
.input emb f32 [10, 8]
.input idx i32 [4]
.output out f32 [4, 8]

load        sram@0:4x1:i32 <- idx[0:4x1/1]  signal=a
gather      sram@64:4x8:f32 <- emb[0:10x8/8], sram@0:4x1:i32  wait=a  signal=b
store       out[0:4x8/8] <- sram@64:4x8:f32  wait=b
"""
EMB = np.arange(80, dtype=np.float32).reshape(10, 8)


def test_round_trips_through_assembly():
    program = parse(PROGRAM)
    assert isinstance(program.instrs[1], Gather)
    assert parse(format_program(program)) == program


def test_moves_the_selected_rows_and_counts_only_their_bytes():
    hw = load_hardware("edge")
    result = simulate(parse(PROGRAM), hw, {"emb": EMB, "idx": np.array([3, 0, 9, 3], np.int32)})
    np.testing.assert_array_equal(result.outputs["out"], EMB[[3, 0, 9, 3]])
    assert result.report.dram_bytes_read == 4 * 4 + 4 * 8 * 4  # indices + 4 rows, not 320
    # a load of 16 bytes (1 cycle at 16 B/cycle) and 4 row bursts of 32 bytes (2 each)
    assert result.report.busy["load"] == (hw.issue_cycles + 1) + (hw.issue_cycles + 4 * 2)


def test_each_row_is_its_own_burst():
    # 3 rows of 6 bytes at 4 B/cycle: 2 cycles each, not ceil(18 / 4) = 5 for the lot
    assert gather_cycles(TINY, 3, 6) == TINY.issue_cycles + 3 * 2
    ins = parse(PROGRAM).instrs[1]
    assert instruction_cost(TINY, ins) == ("load", TINY.issue_cycles + 4 * 8)


def test_an_index_outside_the_table_faults():
    with pytest.raises(SimulationError, match="gather index -1 is outside the 10 rows of emb"):
        simulate(
            parse(PROGRAM),
            load_hardware("edge"),
            {"emb": EMB, "idx": np.array([3, -1, 0, 0], np.int32)},
        )


def test_an_index_tile_from_compute_must_be_waited_for():
    """The indices a vector instruction computes reach the load queue only through a
    token; without one the gather races with (or runs before) the computation."""
    copied = PROGRAM.replace(
        "gather      sram@64:4x8:f32 <- emb[0:10x8/8], sram@0:4x1:i32  wait=a  signal=b",
        "unary.copy  sram@32:4x1:i32 <- sram@0:4x1:i32  wait=a  signal=c\n"
        "gather      sram@64:4x8:f32 <- emb[0:10x8/8], sram@32:4x1:i32  WAIT signal=b",
    )
    inputs = {"emb": EMB, "idx": np.array([1, 2, 3, 4], np.int32)}
    ordered = simulate(parse(copied.replace("WAIT", "wait=c")), load_hardware("edge"), inputs)
    np.testing.assert_array_equal(ordered.outputs["out"], EMB[[1, 2, 3, 4]])
    with pytest.raises(SimulationError, match=r"race|never \(fully\) written"):
        simulate(parse(copied.replace("WAIT", "")), load_hardware("edge"), inputs)


def test_rows_of_scratch_never_written_are_caught():
    body = PROGRAM.replace(".input emb f32 [10, 8]", ".scratch emb f32 [80]")
    with pytest.raises(SimulationError, match="never \\(fully\\) written"):
        simulate(parse(body), load_hardware("edge"), {"idx": np.zeros(4, np.int32)})


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("sram@0:4x1:i32  wait=a", "sram@0:4x1:f32  wait=a", "i32 index column"),
        ("sram@64:4x8:f32 <- emb", "sram@64:4x7:f32 <- emb", "writes 4x8, not 4x7"),
        ("emb[0:10x8/8]", "emb[8:10x8/8]", "out-of-bounds"),
        (
            "gather      sram@64:4x8:f32 <- emb[0:10x8/8], sram@0:4x1:i32",
            "gather      sram@64:4x8:f32 <- sram@0:4x1:i32, emb[0:10x8/8]",
            "expected a DRAM reference",
        ),
    ],
)
def test_malformed_gathers_are_rejected(old, new, words):
    with pytest.raises(AsmError, match=words):
        parse(PROGRAM.replace(old, new))
